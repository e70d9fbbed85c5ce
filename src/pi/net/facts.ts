/**
 * The network part of the rules snapshot (`RulesInput.net`, src/net/plan.rs): route facts of the current model, of
 * the configured Web Search executor and of the image fallbacks, read from Pi's model registry. Static facts only
 * (no network, no secrets); the tools check the route again right before sending (route.ts `prepareRequest`).
 */
import { getSupportedThinkingLevels } from "@earendil-works/pi-ai";
import type { EffectiveConfig, NetInput, NetRouteFacts } from "../../../index.js";
import { native } from "../native.ts";
import { authKind, routeFacts, type PiModel, type Registry } from "./route.ts";

/** `webSearch.sidecarModel` as the config schema validates it (src/config/schema.rs). */
export interface SidecarModel {
	provider: string;
	model: string;
	thinkingLevel: string;
}

/** The registry last seen on a context (kept by the rules glue's `observe`). */
export const REGISTRY_KEY = "net.registry";

/** The first model of `provider` on its Responses API with the credential kind the route needs. `models` is one
 * `getAll()` shared by the lookups of a snapshot: Pi rebuilds the whole list on every call (milliseconds each). */
function firstWithAuth(registry: Registry, models: readonly PiModel[], provider: string, api: string, want: "oauth" | "api-key"): NetRouteFacts | null {
	for (const m of models) {
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
		const models = registry.getAll?.() ?? [];
		out.imageCandidates = [
			firstWithAuth(registry, models, "openai-codex", "openai-codex-responses", "oauth"),
			firstWithAuth(registry, models, "openai", "openai-responses", "api-key"),
		].filter((f): f is NetRouteFacts => f !== null);
	}
	return out;
}

/**
 * The `/pct config` executor picker's candidates: models on an official route whose credential kind matches
 * (`netRouteInspect`), filtered by Pi's scoped models when any are set (docs/net.md §Backend resolution).
 */
export function executorCandidates(registry: Registry | undefined, scoped: ReadonlyArray<{ model: PiModel }> | undefined): PiModel[] {
	const all = registry?.getAll?.() ?? [];
	const scope = scoped && scoped.length > 0 ? new Set(scoped.map((s) => `${s.model.provider}/${s.model.id}`)) : null;
	return all.filter((m) => {
		if (scope && !scope.has(`${m.provider}/${m.id}`)) return false;
		const facts = routeFacts(registry, m);
		return facts !== null && native.netRouteInspect(facts).ok;
	});
}

/** The effort menu of an executor: `auto` plus the thinking levels Pi reports for a Codex model (`auto` only for
 * the openai API-key route, as the config schema enforces). */
export function executorEfforts(registry: Registry | undefined, provider: string, modelId: string): string[] {
	if (provider !== "openai-codex") return ["auto"];
	const m = registry?.find?.(provider, modelId);
	if (!m) return ["auto"];
	try {
		return ["auto", ...getSupportedThinkingLevels(m as never).map(String).filter((l) => l !== "auto")];
	} catch {
		return ["auto"];
	}
}
