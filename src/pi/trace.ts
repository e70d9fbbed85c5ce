/**
 * Trace ids (docs/host.md "Trace ids"; seed 000 §3: every tool has one). Every toolkit tool definition passes
 * through `traced` once, where src/index.ts offers it to the toolkit, so each call of every toolkit tool gets one
 * fresh id: it is the call's `details.traceId` in the result Pi records, and the `traceId` of the call's audit line
 * (src/pi/permission.ts reads it with `currentTraceId`, through Node's AsyncLocalStorage, so no tool passes it by
 * hand). A thrown failure reaches the model as Pi's plain error text, which has no details: its trace id is on the
 * audit line, joined to the result by the tool call id; the text is left as the tool wrote it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type { ToolDefinition } from "@earendil-works/pi-coding-agent";

const current = new AsyncLocalStorage<string>();

/** The trace id of the tool call whose async flow this is, or undefined outside a toolkit tool call. */
export function currentTraceId(): string | undefined {
	return current.getStore();
}

/** A fresh trace id: `pct-` and 16 hex digits (what src/host/audit.rs accepts: letters, digits, `-`, `_`, at most 64). */
export function newTraceId(): string {
	return `pct-${randomBytes(8).toString("hex")}`;
}

/** `details` with the trace id added: an object gets the field, a missing value becomes `{traceId}`; other shapes stay. */
function withTrace(details: unknown, traceId: string): unknown {
	if (details === undefined || details === null) return { traceId };
	if (typeof details === "object" && !Array.isArray(details)) return { ...(details as Record<string, unknown>), traceId };
	return details;
}

/** `def` whose execute runs under a fresh trace id and returns it in the result's details. */
export function traced<D extends ToolDefinition>(def: D): D {
	const execute = def.execute;
	const wrapped: D["execute"] = (toolCallId, params, signal, onUpdate, ctx) => {
		const traceId = newTraceId();
		return current.run(traceId, async () => {
			const r = await execute.call(def, toolCallId, params, signal, onUpdate, ctx);
			return r && typeof r === "object" ? { ...r, details: withTrace((r as { details?: unknown }).details, traceId) } : r;
		});
	};
	return { ...def, execute: wrapped };
}
