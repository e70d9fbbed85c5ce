// Remote Compaction request building (docs/compaction.md) on a 2,000-message session, as the glue
// does it: JSON.stringify of the captured payload and the prior details, the addon's compactionBuildRequest (Rust
// parses, builds prior retained + checkpoint + input + trigger, answers the POST body text), against a named baseline in the same run: JSON.stringify of the same captured
// input alone (the least any sender must do). Goal: under 20 ms per build.
// Usage: node bench/compaction.mjs [--quick]   (build the addon with --release first for representative numbers)
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const native = createRequire(import.meta.url)(join(dirname(fileURLToPath(import.meta.url)), "..", "index.js"));
const quick = process.argv.includes("--quick");

// 2,000 messages: alternating user prompts, assistant replies, tool calls and their outputs, ~300 characters each.
const words = "the quick brown fox jumps over the lazy dog while reading src/lib.rs and fixing a flaky test ".repeat(4);
const input = [{ role: "developer", content: "You are a coding agent." }];
for (let i = 0; i < 2000; i++) {
	const text = `${i}: ${words}`;
	if (i % 4 === 0) input.push({ role: "user", content: [{ type: "input_text", text }] });
	else if (i % 4 === 1) input.push({ type: "function_call", call_id: `c${i}`, name: "read", arguments: JSON.stringify({ path: `src/f${i}.rs` }) });
	else if (i % 4 === 2) input.push({ type: "function_call_output", call_id: `c${i - 1}`, output: text });
	else input.push({ role: "assistant", content: [{ type: "output_text", text }] });
}
const captured = { model: "gpt-5.1-codex", instructions: "system prompt ".repeat(200), input, tools: [{ type: "function", name: "read", parameters: { type: "object" } }] };
const prior = {
	marker: "[pi-codex-toolkit.remote-compaction-v2:00000000-0000-4000-8000-000000000000]",
	retainedInput: Array.from({ length: 50 }, (_, i) => ({ role: "user", content: [{ type: "input_text", text: `${i} ${words}` }] })),
	checkpoint: { type: "compaction", encrypted_content: "x".repeat(20_000) },
};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function time(n, fn) {
	const t0 = process.hrtime.bigint();
	for (let i = 0; i < n; i++) await fn();
	return Number(process.hrtime.bigint() - t0) / 1e6 / n;
}
const rounds = quick ? 3 : 9;
const n = quick ? 5 : 20;
const built = [];
const base = [];
let bytes = 0;
for (let r = 0; r < rounds; r++) {
	built.push(await time(n, async () => {
		const out = await native.compactionBuildRequest(JSON.stringify(captured), JSON.stringify(prior));
		if (!out.ok) throw new Error(out.message);
		bytes = out.body.length;
	}));
	base.push(await time(n, () => JSON.stringify(captured.input)));
}
console.log(`\nCompaction request building, ${input.length} input items (median of ${rounds} rounds x ${n} builds; body ${(bytes / 1e6).toFixed(2)} MB)`);
console.table([
	{ what: "toolkit: JSON.stringify + compactionBuildRequest (body text)", "ms/build": median(built).toFixed(2), "ratio vs baseline": (median(built) / median(base)).toFixed(2), goal: "< 20 ms" },
	{ what: "baseline: JSON.stringify(captured input)", "ms/build": median(base).toFixed(2), "ratio vs baseline": "1.00", goal: "" },
]);
if (median(built) >= 20) console.log("ABOVE GOAL: request building took 20 ms or more");
