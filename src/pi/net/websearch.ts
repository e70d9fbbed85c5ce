/**
 * Web Search glue (docs/net.md §Web Search). Both backends are decided in Rust (src/net/plan.rs via the rules
 * decision, kept by the rules glue under `net.plan`):
 * - native: a `before_provider_request` handler adds the hosted `web_search` tool to the model request; the transform
 *   (merge rules, `include`, `tool_choice` only when absent, odd payloads pass through) is src/net/websearch/native.rs;
 *   this file reads the payload's head and applies the answer copy-on-write (a shallow copy: messages untouched).
 * - sidecar: the `openai_web_search {query}` tool sends only the query to the executor model. API-key route: one
 *   POST (http.ts). Codex OAuth route: Pi's own provider stream for the executor (`modelRegistry.streamSimple`, SSE
 *   transport, no retries) with the hosted tool added by `onPayload`; the SSE text is teed off and aggregated in Rust.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { NetPayloadHead, NetPayloadPatch, NetPlan } from "../../../index.js";
import type { ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { fromJson, toJson } from "../rules.ts";
import { deadline, debugLine, fail, postJson, readCapped, thrownFailure, type CappedText, type DebugInfo } from "./http.ts";
import { prepareRequest, routeFacts, type PiModel, type Registry } from "./route.ts";

export const WEB_SEARCH_TOOL = "openai_web_search";
/** Where the rules glue keeps the last committed decision's network plans. */
export const PLAN_KEY = "net.plan";

export const WEB_SEARCH_DESCRIPTION =
	"Search the web with OpenAI's hosted web search and get a short answer with its sources. Only the query is sent " +
	"(a separate, billed OpenAI request), never the conversation: put everything the search needs into the query.";

const PARAMETERS = Type.Object(
	{ query: Type.String({ description: "What to search for, as a self-contained search request." }) },
	{ additionalProperties: false },
);

/** The plans of the last committed sync (null before the first). */
export function netPlan(host: ToolkitHost): NetPlan | null {
	return (host.shared.get(PLAN_KEY) as NetPlan | undefined) ?? null;
}

/** The native transform of one provider payload; undefined = unchanged. */
export function injectWebSearch(payload: unknown, mode: "live" | "cached", contextSize: "low" | "medium" | "high"): unknown {
	const isObject = typeof payload === "object" && payload !== null && !Array.isArray(payload);
	if (!isObject) return undefined;
	const p = payload as Record<string, unknown>;
	const kind = (v: unknown) => (v === undefined ? "absent" : Array.isArray(v) ? "array" : "other") as "absent" | "array" | "other";
	const tools = p.tools;
	const toolsKind = kind(tools);
	const list = toolsKind === "array" ? (tools as unknown[]) : [];
	const idx = list.findIndex((t) => typeof t === "object" && t !== null && (t as { type?: unknown }).type === "web_search");
	const includeKind = kind(p.include);
	const head: NetPayloadHead = {
		isObject,
		tools: toolsKind,
		webSearchIndex: idx >= 0 ? idx : undefined,
		webSearch: idx >= 0 ? (list[idx] as Record<string, unknown>) : null,
		includeKind,
		include: includeKind === "array" ? (p.include as unknown[]) : [],
		hasToolChoice: "tool_choice" in p,
	};
	const out = native.netSearchTransform(toJson(head), mode, contextSize);
	if (out === null) return undefined;
	const patch = fromJson<NetPayloadPatch>(out);
	const nextTools = [...list];
	if (patch.replaceIndex !== null && patch.replaceIndex !== undefined) nextTools[patch.replaceIndex] = patch.entry;
	else nextTools.push(patch.entry);
	const next: Record<string, unknown> = { ...p, tools: nextTools, include: patch.include };
	if (patch.toolChoice) next.tool_choice = patch.toolChoice;
	return next;
}

/** The Codex OAuth route: Pi's provider stream for the executor, SSE aggregated in Rust. */
async function codexSearch(host: ToolkitHost, registry: Registry, model: PiModel, query: string, effort: string, signal: AbortSignal | undefined, debug: DebugInfo): Promise<{ text: string; sources: unknown[] }> {
	const cfg = host.config().webSearch;
	const timeoutMs = native.netTimeoutMs("sidecar");
	const started = performance.now();
	if (!registry.streamSimple) fail(native.netFailure("provider-unavailable", `no provider stream for ${model.provider}`).message);
	const d = deadline(timeoutMs, signal);
	let status: number | undefined;
	let requestId: string | undefined;
	let sse: Promise<CappedText> | null = null;
	const capBytes = native.netBodyCapBytes("sidecar");
	// Tees the provider's SSE response so the raw output items can be aggregated; never follows a redirect.
	const teeFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
		const res = await globalThis.fetch(input, { ...init, redirect: "manual" });
		status = res.status;
		requestId = res.headers.get("x-request-id") ?? undefined;
		if (!res.body || res.status < 200 || res.status > 299) return res;
		const [mine, theirs] = res.body.tee();
		// the copy is read with the sidecar's cap; past it the whole request is ended, Pi's half included
		sse = readCapped(new Response(mine), capBytes).then((r) => {
			if (!r.ok) d.abort(new Error(r.error.code));
			return r;
		});
		return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
	};
	try {
		const stream = registry.streamSimple(
			model as never,
			{ messages: [{ role: "user", content: query, timestamp: Date.now() }] } as never,
			{
				transport: "sse",
				maxRetries: 0,
				signal: d.signal,
				...(effort !== "auto" ? { reasoning: effort } : {}),
				fetch: teeFetch,
				onPayload: (body: unknown) => fromJson(native.netSidecarCodexPayload(toJson(body), cfg.mode, cfg.contextSize, effort)),
			} as never,
		);
		let streamError: string | undefined;
		for await (const ev of stream as AsyncIterable<{ type: string; error?: { errorMessage?: string } }>) {
			if (ev.type === "error") streamError = ev.error?.errorMessage ?? "provider stream error";
		}
		if (status !== undefined && (status < 200 || status > 299)) {
			const where = status >= 300 && status < 400 ? " (a redirect: never followed)" : "";
			const error = native.netFailure("http-error", `HTTP ${status}${where}`);
			debugLine(debug, model.baseUrl ?? "", started, status, requestId, [], error.code);
			fail(error.message);
		}
		const read = sse ? await (sse as Promise<CappedText>) : null;
		if (read && !read.ok) {
			debugLine(debug, model.baseUrl ?? "", started, status, requestId, [], read.error.code);
			fail(read.error.message);
		}
		if (d.timedOut() || signal?.aborted || (sse === null && streamError)) {
			const error = thrownFailure(new Error(streamError ?? "no response"), d.timedOut(), !!signal?.aborted, timeoutMs);
			debugLine(debug, model.baseUrl ?? "", started, status, requestId, [], error.code);
			fail(error.message);
		}
		const text = read?.ok ? read.text : "";
		const a = native.netSidecarParse("sse", text);
		debugLine(debug, model.baseUrl ?? "", started, status, requestId, a.ok ? ["web_search_call", "text"] : [], a.ok ? undefined : a.error!.code);
		if (!a.ok) fail(a.error!.message);
		return { text: a.text!, sources: a.sources! };
	} finally {
		d.clear();
	}
}

export function register(host: ToolkitHost): void {
	host.pi.registerTool({
		name: WEB_SEARCH_TOOL,
		label: "OpenAI Web Search",
		description: WEB_SEARCH_DESCRIPTION,
		promptSnippet: "Search the web (OpenAI hosted search; only the query is sent, as a separate billed request)",
		parameters: PARAMETERS,
		async execute(_id: string, params: { query: string }, signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			const plan = netPlan(host)?.search;
			if (!host.isAdmitted(WEB_SEARCH_TOOL) || plan?.backend !== "sidecar" || !plan.executor) {
				fail(`Web Search (sidecar) is not enabled${plan?.reason ? ` (${plan.reason})` : ""}: turn it on with /pct config, and see /pct status for why it is unavailable.`);
			}
			const cfg = host.config().webSearch;
			const registry = ctx.modelRegistry;
			const ex = plan.executor;
			const model = registry?.find?.(ex.route.kind, ex.route.model);
			if (!model) fail(`missing-sidecar-model: ${ex.route.kind}/${ex.route.model} is not in Pi's model registry; pick another executor with /pct config.`);
			const req = native.netSidecarRequest(toJson<Record<string, unknown>>(params ?? {}), model.id, cfg.mode, cfg.contextSize);
			if (!req.ok) fail(req.error!.message);
			// The credential check again, with what Pi resolves for this very request.
			const prep = await prepareRequest(registry, model);
			if ("code" in prep) fail(prep.message);
			const debug: DebugInfo = { enabled: host.config().debug, feature: "web-search-sidecar", provider: model.provider, api: model.api, model: model.id };
			let text: string;
			let sources: unknown[];
			if (prep.route.kind === "openai") {
				const started = performance.now();
				const r = await postJson(prep.route.responsesUrl, { ...prep.headers, authorization: `Bearer ${prep.apiKey}` }, req.body!, "sidecar", signal, debug);
				if (!r.ok) fail(r.error.message);
				const a = native.netSidecarParse("json", r.text);
				debugLine(debug, prep.route.responsesUrl, started, r.status, r.requestId, a.ok ? ["web_search_call", "text"] : [], a.ok ? undefined : a.error!.code);
				if (!a.ok) fail(a.error!.message);
				text = a.text!;
				sources = a.sources!;
			} else {
				({ text, sources } = await codexSearch(host, registry, model, req.query!, ex.effort, signal, debug));
			}
			return { content: [{ type: "text" as const, text }], details: { backend: "sidecar", route: prep.route.kind, model: model.id, sources } };
		},
	});

	// Native backend: the hosted tool goes into the model's own request. With `debug: true`, the response to a
	// request we changed gets one metadata line (after_provider_response carries its status and headers).
	let injected: { started: number; debug: DebugInfo; endpoint: string } | null = null;
	host.pi.on("before_provider_request", (event, ctx) => {
		injected = null;
		const cfg = host.config().webSearch;
		if (!cfg.enabled || netPlan(host)?.search.backend !== "native") return undefined;
		// The model may have changed since the last sync: the structural route check again, on this context.
		const facts = routeFacts(ctx.modelRegistry, ctx.model);
		if (!facts || !ctx.model || !native.netRouteInspect(facts).ok) return undefined;
		const out = injectWebSearch(event.payload, cfg.mode, cfg.contextSize);
		if (out !== undefined && host.config().debug) {
			const m = ctx.model;
			injected = { started: performance.now(), endpoint: m.baseUrl ?? "", debug: { enabled: true, feature: "web-search-native", provider: m.provider, api: m.api, model: m.id } };
		}
		return out;
	});
	host.pi.on("after_provider_response", (event) => {
		const pending = injected;
		injected = null;
		if (!pending) return;
		const id = event.headers?.["x-request-id"];
		debugLine(pending.debug, pending.endpoint, pending.started, event.status, typeof id === "string" ? id : undefined, ["web_search"]);
	});
}
