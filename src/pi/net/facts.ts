/**
 * The network part of the rules snapshot (`RulesInput.net`, src/net/plan.rs): route facts of the current model, of
 * the configured Web Search executor and of the image fallbacks, read from Pi's model registry. Static facts only
 * (no network, no secrets); the tools check the route again right before sending (route.ts `prepareRequest`).
 */
import { getSupportedThinkingLevels } from "@earendil-works/pi-ai";
import type { EffectiveConfig, NetInput, NetRouteFacts } from "../../../index.js";
import { authKind, routeFacts, type PiModel, type Registry } from "./route.ts";

/** `webSearch.sidecarModel` as the config schema validates it (src/config/schema.rs). */
export interface SidecarModel {
	provider: string;
	model: string;
	thinkingLevel: string;
}

/** The registry last seen on a context (kept by the rules glue's `observe`). */
export const REGISTRY_KEY = "net.registry";

/** The first model of `provider` on its Responses API with the credential kind the route needs. */
function firstWithAuth(registry: Registry, provider: string, api: string, want: "oauth" | "api-key"): NetRouteFacts | null {
	for (const m of registry.getAll?.() ?? []) {
		if (m.provider === provider && m.api === api && authKind(registry, m) === want) return routeFacts(registry, m);
	}
	return null;
}

/** The snapshot's `net` field; empty when both network features are off (nothing is read then). */
export function netInput(registry: Registry | undefined, model: PiModel | undefined | null, config: EffectiveConfig): NetInput {
	const ws = config?.webSearch;
	const image = config?.imageGeneration?.enabled === true;
	if (!ws?.enabled && !image) return {};
	const current = model ? (registry?.find?.(model.provider, model.id) ?? model) : null;
	const out: NetInput = { current: routeFacts(registry, current) ?? undefined };
	const sm = ws.sidecarModel as SidecarModel | null;
	if (ws.enabled && sm && registry) {
		const m = registry.find?.(sm.provider, sm.model);
		if (m) {
			out.executor = routeFacts(registry, m) ?? undefined;
			try {
				out.executorLevels = getSupportedThinkingLevels(m as never).map(String);
			} catch {
				out.executorLevels = [];
			}
		}
	}
	if (image && registry) {
		out.imageCandidates = [
			firstWithAuth(registry, "openai-codex", "openai-codex-responses", "oauth"),
			firstWithAuth(registry, "openai", "openai-responses", "api-key"),
		].filter((f): f is NetRouteFacts => f !== null);
	}
	return out;
}
