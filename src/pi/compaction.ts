/**
 * Remote Compaction glue (docs/compaction.md). The Rust side (src/compaction/) builds the request, validates the
 * stream, shapes the result and decides the replay; this file only adapts Pi:
 * - `session_before_compact`: returns nothing (Pi's own compaction runs) when the feature is off, when the user gave
 *   custom instructions, or off the Codex OAuth route. Otherwise it captures the Responses body Pi's provider would
 *   send for the messages being compacted (the provider's payload builder runs; `onPayload` throws before anything
 *   is sent), POSTs it with a compaction trigger (SSE, 180 s), and returns the compaction. Any failure: a warning,
 *   and Pi's own compaction runs — a session never becomes unusable.
 * - `before_provider_request`: replays the newest remote compaction's retained input and checkpoint in place of its
 *   summary message, only when the compatibility record equals the current route exactly.
 */
import { convertToLlm, type ExtensionContext } from "@earendil-works/pi-coding-agent";
import { randomUUID } from "node:crypto";
import type { CompactionCompat } from "../../index.js";
import type { ToolkitHost } from "./host.ts";
import { native } from "./native.ts";
import { debugLine, postJson, type DebugInfo } from "./net/http.ts";
import { chatgptAccountId, prepareRequest, routeFacts, type PiModel, type Registry } from "./net/route.ts";
import { safeNotify } from "./render/safe.ts";

const CAPTURED = Symbol("pct-compaction-capture");

function warn(ctx: ExtensionContext, message: string): void {
	const text = `Remote Compaction: ${message} Pi's own compaction runs instead.`;
	if (ctx?.hasUI && ctx.ui) safeNotify(ctx.ui, text, "warning");
	else process.stderr.write(text + "\n");
}

/** The Codex OAuth route of `model`, or null when this is not one (then Pi compacts as usual). */
function codexRoute(registry: Registry | undefined, model: PiModel | undefined | null): boolean {
	const facts = routeFacts(registry, model);
	if (!facts) return false;
	const r = native.netRouteInspect(facts);
	return r.ok && r.kind === "openai-codex";
}

/** The compatibility record of the current route, with Pi's credential for this very request. */
async function currentCompat(registry: Registry | undefined, model: PiModel): Promise<{ compat: CompactionCompat; apiKey: string; url: string; accountId: string; headers: Record<string, string> } | { error: string }> {
	const prep = await prepareRequest(registry, model);
	if ("code" in prep) return { error: prep.message };
	if (prep.route.kind !== "openai-codex") return { error: "the route is not openai-codex." };
	const accountId = chatgptAccountId(prep.apiKey);
	if (!accountId) return { error: "the OAuth token carries no ChatGPT account id; log in again with /login." };
	const compat = native.compactionCompat(model.provider, model.api, model.id, prep.route.responsesUrl, "oauth", accountId);
	return { compat, apiKey: prep.apiKey, url: prep.route.responsesUrl, accountId, headers: prep.headers };
}

/** The newest compaction entry of the branch whose details came from us, or null. */
function latestRemote(ctx: ExtensionContext): Record<string, unknown> | null {
	const entries = (ctx.sessionManager as unknown as { getBranch?: () => Array<{ type: string; details?: unknown }> }).getBranch?.() ?? [];
	for (let i = entries.length - 1; i >= 0; i--) {
		const e = entries[i]!;
		if (e.type !== "compaction") continue;
		const d = e.details as Record<string, unknown> | undefined;
		return d && typeof d.marker === "string" && d.compat ? d : null;
	}
	return null;
}

/** Runs the provider's payload builder for `messages` and stops before sending: the body Pi would have sent. */
async function capture(host: ToolkitHost, registry: Registry, model: PiModel, ctx: ExtensionContext, messages: unknown[], apiKey: string): Promise<unknown> {
	if (!registry.streamSimple) throw new Error("Pi's model registry has no provider stream.");
	// The tools the model sees right now, as Pi would describe them to the provider.
	const active = new Set(host.pi.getActiveTools());
	const tools = host.pi
		.getAllTools()
		.filter((t) => active.has(t.name))
		.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
	const systemPrompt = ctx.getSystemPrompt?.() ?? "";
	const llm = convertToLlm(messages as never) as unknown[];
	const once = async (context: unknown): Promise<unknown> => {
		let body: unknown;
		const stream = registry.streamSimple!(model as never, context as never, {
			apiKey,
			transport: "sse",
			maxRetries: 0,
			onPayload: (b: unknown) => {
				body = b;
				throw CAPTURED; // nothing is sent: the provider stops before its request
			},
		} as never);
		for await (const _ of stream as AsyncIterable<unknown>) {
			// drain: the stream ends with the error the throw above produced
		}
		return body;
	};
	// The system prompt and the tools travel in a leading system message (pi-ai's transcript form, Pi 0.87 and
	// 1.x alike); the provider renders them as it would for the model (Codex: `instructions` or a developer item,
	// `tools` or an `additional_tools` item).
	const body = await once({ messages: [{ role: "system", content: systemPrompt, ...(tools.length > 0 ? { toolsAdded: tools } : {}), timestamp: 0 }, ...llm] });
	if (body === undefined) throw new Error("the provider built no request body.");
	return body;
}

export function register(host: ToolkitHost): void {
	host.pi.on("session_before_compact", async (event, ctx) => {
		if (!host.config().remoteCompaction?.enabled || event.customInstructions) return undefined;
		const registry = ctx.modelRegistry;
		const model = ctx.model;
		// The route check includes the credential kind (OAuth for openai-codex, src/net/route.rs).
		if (!model || !codexRoute(registry, model)) return undefined;
		try {
			const cur = await currentCompat(registry, model);
			if ("error" in cur) {
				warn(ctx, cur.error);
				return undefined;
			}
			const prep = event.preparation;
			const messages = [...prep.messagesToSummarize, ...prep.turnPrefixMessages];
			const captured = await capture(host, registry, model, ctx, messages, cur.apiKey);
			const prior = latestRemote(ctx);
			const req = await native.compactionBuildRequest(JSON.stringify(captured), prior ? JSON.stringify(prior) : null);
			if (!req.ok) {
				warn(ctx, req.message);
				return undefined;
			}
			const debug: DebugInfo = { enabled: host.config().debug, feature: "remote-compaction", provider: model.provider, api: model.api, model: model.id };
			const headers = {
				...cur.headers,
				authorization: `Bearer ${cur.apiKey}`,
				"chatgpt-account-id": cur.accountId,
				originator: "pi",
				"openai-beta": "responses=experimental",
				accept: "text/event-stream",
			};
			const started = performance.now();
			const r = await postJson(cur.url, headers, req.body, "compaction", event.signal, debug);
			if (!r.ok) {
				warn(ctx, `${r.error.message}`);
				return undefined;
			}
			const parsed = native.compactionParseStream(r.text);
			debugLine(debug, cur.url, started, r.status, r.requestId, parsed.ok ? ["compaction"] : [], parsed.ok ? undefined : parsed.code);
			if (!parsed.ok) {
				warn(ctx, parsed.message);
				return undefined;
			}
			const input = ((captured as { input?: unknown[] }).input ?? []) as unknown[];
			const compaction = native.compactionResult(randomUUID(), parsed.item, input, prior, cur.compat, prep.firstKeptEntryId, prep.tokensBefore);
			return { compaction };
		} catch (e) {
			warn(ctx, e instanceof Error ? e.message : String(e));
			return undefined;
		}
	});

	host.pi.on("before_provider_request", async (event, ctx) => {
		if (!host.config().remoteCompaction?.enabled) return undefined;
		const details = latestRemote(ctx);
		const model = ctx.model;
		if (!details || !model || !codexRoute(ctx.modelRegistry, model)) return undefined;
		const cur = await currentCompat(ctx.modelRegistry, model).catch(() => ({ error: "" }));
		if ("error" in cur) return undefined;
		const replayed = await native.compactionReplay(JSON.stringify(event.payload), JSON.stringify(details), cur.compat);
		return replayed === null ? undefined : (JSON.parse(replayed) as unknown);
	});
}
