/**
 * Official route facts from Pi's model registry, and the check repeated right before a request is sent
 * (docs/net.md §Official routes). The classification itself is Rust (src/net/route.rs, `netRouteInspect`); this file
 * only reads Pi: `modelRegistry.hasConfiguredAuth` / `isUsingOAuth` for the credential kind, and
 * `getApiKeyAndHeaders` for the credential, headers and base URL of one request. Shared by every network feature
 * (Web Search, Image Generation, Remote Compaction): keep `routeFacts` and `prepareRequest` stable.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { NetFailure, NetRouteCheck, NetRouteFacts } from "../../../index.js";
import { native } from "../native.ts";

/** Pi's model registry as the context carries it. */
export type Registry = ExtensionContext["modelRegistry"];
/** A model of the registry (or `ctx.model`). */
export type PiModel = NonNullable<ExtensionContext["model"]>;

/** The credential kind Pi holds for a model: `none` when nothing is configured. Never reads the secret. */
export function authKind(registry: Registry | undefined, model: PiModel): "oauth" | "api-key" | "none" {
	try {
		if (!registry?.hasConfiguredAuth?.(model)) return "none";
		return registry.isUsingOAuth?.(model) ? "oauth" : "api-key";
	} catch {
		return "none";
	}
}

/** The static route facts of a model (status, tool activation). */
export function routeFacts(registry: Registry | undefined, model: PiModel | undefined | null): NetRouteFacts | null {
	if (!model) return null;
	return { provider: model.provider, id: model.id, api: model.api, baseUrl: model.baseUrl, auth: authKind(registry, model) };
}

/** A request ready to send: the fixed route URLs, the credential and Pi's extra headers for this model. */
export interface PreparedRequest {
	route: NetRouteCheck & { ok: true; kind: "openai" | "openai-codex"; responsesUrl: string; imagesUrl: string };
	apiKey: string;
	headers: Record<string, string>;
}

/** Why a request was not prepared: a stable code and a message naming the next step. */
export interface RouteRefusal {
	code: NetFailure["code"];
	message: string;
}

/**
 * Resolves the credential for `model` through Pi (refreshing OAuth when needed) and checks the route again with the
 * base URL and credential kind Pi resolved for this very request. Nothing is sent by this function.
 */
export async function prepareRequest(registry: Registry | undefined, model: PiModel): Promise<PreparedRequest | RouteRefusal> {
	if (!registry?.getApiKeyAndHeaders) return { code: "provider-unavailable", message: "provider-unavailable: Pi's model registry is not available in this context; retry from a session with a model." };
	let auth: Awaited<ReturnType<Registry["getApiKeyAndHeaders"]>>;
	try {
		auth = await registry.getApiKeyAndHeaders(model);
	} catch (e) {
		return { code: "missing-openai-auth", message: `missing-openai-auth: Pi could not resolve a credential for ${model.provider}/${model.id} (${e instanceof Error ? e.message : String(e)}); log in with /login or set OPENAI_API_KEY.` };
	}
	if (!auth.ok || !auth.apiKey) {
		const why = auth.ok ? "no credential is configured" : auth.error;
		return { code: "missing-openai-auth", message: `missing-openai-auth: ${why} for ${model.provider}/${model.id}; log in with /login (openai-codex) or set OPENAI_API_KEY (openai).` };
	}
	const facts: NetRouteFacts = { ...routeFacts(registry, model)!, baseUrl: auth.baseUrl ?? model.baseUrl };
	const check = native.netRouteInspect(facts);
	if (!check.ok) return { code: check.reason!, message: check.message! };
	return { route: check as PreparedRequest["route"], apiKey: auth.apiKey, headers: { ...(auth.headers ?? {}) } as Record<string, string> };
}

/** The `chatgpt_account_id` claim of a ChatGPT OAuth token (header `chatgpt-account-id`), or null. */
export function chatgptAccountId(token: string): string | null {
	try {
		const part = token.split(".")[1];
		if (!part) return null;
		const claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
		const id = claims?.["https://api.openai.com/auth"]?.chatgpt_account_id;
		return typeof id === "string" && id.length > 0 ? id : null;
	} catch {
		return null;
	}
}
