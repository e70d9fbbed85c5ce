/**
 * One HTTP request of a network tool (docs/net.md §Why fetch lives in the glue). `globalThis.fetch` is read at
 * call time, never captured at import, so Pi's own fetch wrappers (proxy settings, a test's redirect extension)
 * apply. Redirects are never followed (`redirect: "manual"`, a 3xx is an `http-error`), nothing is retried, and the
 * feature's timeout (Rust `netTimeoutMs`) and the tool's abort signal end the request. Failures come back as a
 * stable code and message from the engine (`netFailure`). With `debug: true` one metadata line goes to stderr
 * (`netDebugLine`): never headers, tokens, prompts or results.
 */
import type { NetDebugMeta, NetFailure } from "../../../index.js";
import { native } from "../native.ts";

/** Ends a network tool call with a failure text (`code: message`): Pi turns the thrown Error into the tool's error result. */
export function fail(message: string): never {
	throw new Error(message);
}

/** What a debug line needs about the request, known before it is sent: the engine's `NetDebugMeta` fields (metadata only). */
export type DebugInfo = Pick<NetDebugMeta, "feature" | "provider" | "api" | "model"> & { enabled: boolean };

export type HttpResult = { ok: true; status: number; text: string; requestId?: string } | { ok: false; error: NetFailure; status?: number };

/** Writes the debug line when enabled (never throws). */
export function debugLine(info: DebugInfo, endpoint: string, started: number, status: number | undefined, requestId: string | undefined, blocks: string[], error?: string): void {
	if (!info.enabled) return;
	try {
		const line = native.netDebugLine({ feature: info.feature, provider: info.provider, api: info.api, model: info.model, endpoint, durationMs: performance.now() - started, status, requestId, blocks, error });
		process.stderr.write(line + "\n");
	} catch {
		// Debug output must never fail a request.
	}
}

/** The features whose responses are read here; each has its timeout and its body cap in Rust. */
export type NetFeature = "sidecar" | "image" | "compaction";

/** A timeout signal combined with the caller's abort signal; `timedOut()` tells which one fired, `abort()` ends the request for another reason (a body over its cap). */
export function deadline(timeoutMs: number, signal?: AbortSignal): { signal: AbortSignal; timedOut: () => boolean; abort: (reason: Error) => void; clear: () => void } {
	const ctl = new AbortController();
	let fired = false;
	const timer = setTimeout(() => {
		fired = true;
		ctl.abort(new Error("timeout"));
	}, timeoutMs);
	const onAbort = () => ctl.abort(signal?.reason);
	if (signal?.aborted) ctl.abort(signal.reason);
	else signal?.addEventListener("abort", onAbort, { once: true });
	return {
		signal: ctl.signal,
		timedOut: () => fired,
		abort: (reason: Error) => ctl.abort(reason),
		clear: () => {
			clearTimeout(timer);
			signal?.removeEventListener("abort", onAbort);
		},
	};
}

/** Maps a thrown fetch/read error to a code. */
export function thrownFailure(e: unknown, timedOut: boolean, aborted: boolean, timeoutMs: number): NetFailure {
	if (timedOut) return native.netFailure("timeout", `no complete answer within ${Number((timeoutMs / 1000).toFixed(1))} s`);
	if (aborted) return native.netFailure("aborted", "");
	const cause = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
	return native.netFailure("network-error", cause.slice(0, 200));
}

export type CappedText = { ok: true; text: string } | { ok: false; error: NetFailure };

/**
 * Reads a body as it arrives and stops once it has more than `capBytes` bytes (`response-too-large`, the rest is
 * cancelled unread), so an endless or huge answer never sits in memory (docs/net.md §Response size). A
 * `content-length` over the cap is refused before reading.
 */
export async function readCapped(res: Response, capBytes: number): Promise<CappedText> {
	const tooLarge = (): CappedText => ({ ok: false, error: native.netFailure("response-too-large", `the body is larger than the ${capBytes}-byte cap`) });
	const declared = Number(res.headers.get("content-length") ?? NaN);
	if (declared > capBytes) {
		await res.body?.cancel().catch(() => undefined);
		return tooLarge();
	}
	if (!res.body) return { ok: true, text: "" };
	const reader = res.body.getReader();
	const decoder = new TextDecoder();
	const parts: string[] = [];
	let total = 0;
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		total += value.byteLength;
		if (total > capBytes) {
			await reader.cancel().catch(() => undefined);
			return tooLarge();
		}
		parts.push(decoder.decode(value, { stream: true }));
	}
	parts.push(decoder.decode());
	return { ok: true, text: parts.join("") };
}

/** POSTs JSON once and reads the body up to the feature's cap (the feature's deadline covers the body too). */
export async function postJson(url: string, headers: Record<string, string>, body: string, feature: NetFeature, signal: AbortSignal | undefined, debug: DebugInfo): Promise<HttpResult> {
	const started = performance.now();
	const timeoutMs = native.netTimeoutMs(feature);
	if (signal?.aborted) return { ok: false, error: native.netFailure("aborted", "") };
	const d = deadline(timeoutMs, signal);
	let status: number | undefined;
	let requestId: string | undefined;
	try {
		const fetchNow = globalThis.fetch; // read at call time (docs/net.md)
		const res = await fetchNow(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body, redirect: "manual", signal: d.signal });
		status = res.status;
		requestId = res.headers.get("x-request-id") ?? undefined;
		if (res.status < 200 || res.status > 299) {
			await res.body?.cancel().catch(() => undefined); // the error body is never shown: nothing to read
			const where = res.status >= 300 && res.status < 400 ? " (a redirect: never followed)" : "";
			const error = native.netFailure("http-error", `HTTP ${res.status}${where}`);
			debugLine(debug, url, started, status, requestId, [], error.code);
			return { ok: false, error, status: res.status };
		}
		const read = await readCapped(res, native.netBodyCapBytes(feature));
		if (!read.ok) {
			debugLine(debug, url, started, status, requestId, [], read.error.code);
			return { ok: false, error: read.error, status };
		}
		return { ok: true, status: res.status, text: read.text, requestId };
	} catch (e) {
		const error = thrownFailure(e, d.timedOut(), !!signal?.aborted, timeoutMs);
		debugLine(debug, url, started, status, requestId, [], error.code);
		return { ok: false, error, status };
	} finally {
		d.clear();
	}
}
