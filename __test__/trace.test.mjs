// Trace ids (src/pi/trace.ts, docs/host.md "Trace ids"): every call of a wrapped tool definition runs under a fresh
// id, visible to the code it calls (the audit line reads it) and returned in the result's details; details of other
// shapes are kept; a thrown failure passes through unchanged.
import { test } from "node:test";
import assert from "node:assert/strict";

process.removeAllListeners("warning");
const { traced, currentTraceId, newTraceId } = await import("../src/pi/trace.ts");

test("each call gets its own id, seen inside the call and returned in details; the definition is otherwise unchanged", async () => {
	const seen = [];
	// Each call waits until both are inside: the ids are read while the other call is in flight.
	let inside = 0;
	let bothInside;
	const both = new Promise((r) => (bothInside = r));
	const def = {
		name: "T",
		label: "T",
		description: "d",
		parameters: {},
		async execute(id, params) {
			if (++inside === 2) bothInside();
			await both;
			seen.push(currentTraceId());
			return { content: [{ type: "text", text: `${id}:${params.n}` }], details: { kept: params.n } };
		},
	};
	const t = traced(def);
	assert.equal(t.name, "T");
	assert.equal(t.description, "d");
	const [a, b] = await Promise.all([t.execute("c1", { n: 1 }), t.execute("c2", { n: 2 })]);
	assert.deepEqual(a.content, [{ type: "text", text: "c1:1" }]);
	assert.equal(a.details.kept, 1);
	assert.equal(b.details.kept, 2);
	assert.match(a.details.traceId, /^pct-[0-9a-f]{16}$/);
	assert.notEqual(a.details.traceId, b.details.traceId);
	assert.deepEqual(seen.sort(), [a.details.traceId, b.details.traceId].sort(), "each call saw its own id");
	assert.equal(currentTraceId(), undefined, "outside a call there is none");
	assert.match(newTraceId(), /^pct-[0-9a-f]{16}$/);
});

test("missing details become {traceId}; array details stay; a thrown failure passes through", async () => {
	const mk = (execute) => traced({ name: "T", label: "T", description: "", parameters: {}, execute }).execute;
	const none = await mk(async () => ({ content: [] }))("x", {});
	assert.deepEqual(Object.keys(none.details), ["traceId"]);
	const arr = await mk(async () => ({ content: [], details: [1, 2] }))("x", {});
	assert.deepEqual(arr.details, [1, 2]);
	await assert.rejects(mk(async () => { throw new Error("TOOL_FAILED: boom"); })("x", {}), { message: "TOOL_FAILED: boom" });
});
