/**
 * One HTTP request of a network tool (docs/net.md §Why fetch lives in the glue). `globalThis.fetch` is read at
 * call time, never captured at import, so Pi's own fetch wrappers (proxy settings, a test's redirect extension)
 * apply. Redirects are never followed (`redirect: "manual"`, a 3xx is an `http-error`), nothing is retried, and the
 * feature's timeout (Rust `netTimeoutMs`) and the tool's abort signal end the request. Failures come back as a
 * stable code and message from the engine (`netFailure`). With `debug: true` one metadata line goes to stderr
 * (`netDebugLine`): never headers, tokens, prompts or results.
 */
import type { NetFailure } from "../../../index.js";
import { native } from "../native.ts";

/** What a debug line needs about the request (metadata only). */
export interface DebugInfo {
	enabled: boolean;
	feature: string;
	provider: string;
	api: string;
	model: string;
}

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

/** A timeout signal combined with the caller's abort signal; `timedOut()` tells which one fired. */
export function deadline(timeoutMs: number, signal?: AbortSignal): { signal: AbortSignal; timedOut: () => boolean; clear: () => void } {
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

/** POSTs JSON once. Reads the whole body (the deadline covers it too). */
export async function postJson(url: string, headers: Record<string, string>, body: string, timeoutMs: number, signal: AbortSignal | undefined, debug: DebugInfo): Promise<HttpResult> {
	const started = performance.now();
	if (signal?.aborted) return { ok: false, error: native.netFailure("aborted", "") };
	const d = deadline(timeoutMs, signal);
	let status: number | undefined;
	let requestId: string | undefined;
	try {
		const fetchNow = globalThis.fetch; // read at call time (docs/net.md)
		const res = await fetchNow(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body, redirect: "manual", signal: d.signal });
		status = res.status;
		requestId = res.headers.get("x-request-id") ?? undefined;
		const text = await res.text();
		if (res.status < 200 || res.status > 299) {
			const where = res.status >= 300 && res.status < 400 ? " (a redirect: never followed)" : "";
			const error = native.netFailure("http-error", `HTTP ${res.status}${where}`);
			debugLine(debug, url, started, status, requestId, [], error.code);
			return { ok: false, error, status: res.status };
		}
		return { ok: true, status: res.status, text, requestId };
	} catch (e) {
		const error = thrownFailure(e, d.timedOut(), !!signal?.aborted, timeoutMs);
		debugLine(debug, url, started, status, requestId, [], error.code);
		return { ok: false, error, status };
	} finally {
		d.clear();
	}
}
