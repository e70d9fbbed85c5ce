// Remote Compaction's two whole-conversation exports (docs/compaction.md): the request build and the replay take
// JSON text, answer JSON text and run on the blocking pool, so Node's event loop keeps ticking through a long session.
import { test } from "node:test";
import assert from "node:assert/strict";
import { native } from "./helpers/addon.mjs";
import { underTimer } from "./helpers/timer.mjs";

const MARKER = "[pi-codex-toolkit.remote-compaction-v2:00000000-0000-4000-8000-000000000000]";
const words = "the quick brown fox jumps over the lazy dog while reading src/lib.rs and fixing a flaky test ".repeat(4);
const user = (text) => ({ role: "user", content: [{ type: "input_text", text }] });

// A long session: `n` items of ~400 characters, alternating user prompts, tool calls, their outputs and replies.
function session(n) {
	const input = [{ role: "developer", content: "You are a coding agent." }];
	for (let i = 0; i < n; i++) {
		const text = `${i}: ${words}`;
		if (i % 4 === 0) input.push(user(text));
		else if (i % 4 === 1) input.push({ type: "function_call", call_id: `c${i}`, name: "read", arguments: JSON.stringify({ path: `src/f${i}.rs` }) });
		else if (i % 4 === 2) input.push({ type: "function_call_output", call_id: `c${i - 1}`, output: text });
		else input.push({ role: "assistant", content: [{ type: "output_text", text }] });
	}
	return { model: "gpt-5.1-codex", instructions: "system prompt", input };
}
const compat = { provider: "openai-codex", api: "openai-codex-responses", model: "gpt-5.1-codex" };
const details = { marker: MARKER, compat, retainedInput: [user("kept")], checkpoint: { type: "compaction", encrypted_content: "enc" } };

test("compactionBuildRequest answers the body text, and capture-failed for text that is not JSON", async () => {
	const r = await native.compactionBuildRequest(JSON.stringify(session(8)), JSON.stringify(details));
	assert.equal(r.ok, true, JSON.stringify(r));
	const body = JSON.parse(r.body);
	assert.deepEqual(body.input[0], user("kept"));
	assert.deepEqual(body.input[1], details.checkpoint);
	assert.deepEqual(body.input.at(-1), { type: "compaction_trigger" });
	const bad = await native.compactionBuildRequest("{not json", null);
	assert.equal(bad.ok, false);
	assert.equal(bad.code, "capture-failed");
	const badPrior = await native.compactionBuildRequest(JSON.stringify(session(2)), "[");
	assert.equal(badPrior.code, "capture-failed");
});

test("compactionReplay swaps the one marked input for retained + checkpoint, and answers null on any mismatch", async () => {
	const payload = session(6);
	payload.input.splice(3, 0, user(`summary ${MARKER}`));
	const out = JSON.parse(await native.compactionReplay(JSON.stringify(payload), JSON.stringify(details), compat));
	assert.equal(out.input.length, payload.input.length + 1);
	assert.deepEqual(out.input.slice(3, 5), [user("kept"), details.checkpoint]);
	assert.deepEqual(out.input.slice(0, 3), payload.input.slice(0, 3));
	assert.equal(await native.compactionReplay(JSON.stringify(payload), JSON.stringify(details), { ...compat, model: "other" }), null);
	assert.equal(await native.compactionReplay(JSON.stringify(session(6)), JSON.stringify(details), compat), null);
	assert.equal(await native.compactionReplay("{not json", JSON.stringify(details), compat), null);
	assert.equal(await native.compactionReplay(JSON.stringify(payload), "nope", compat), null);
});

test("request build and replay of a 40,000-item session run off Node's main thread: a 2 ms timer keeps ticking", async (t) => {
	// 40,000 items is a ~14 MB payload, past what one context window holds: the largest conversation either sees.
	const payload = session(40_000);
	const captured = JSON.stringify(payload);
	payload.input.splice(20_000, 0, user(`summary ${MARKER}`));
	const marked = JSON.stringify(payload);
	const prior = JSON.stringify(details);
	const build = await underTimer(() => native.compactionBuildRequest(captured, prior));
	assert.equal(build.result.ok, true);
	const replay = await underTimer(() => native.compactionReplay(marked, prior, compat));
	assert.ok(replay.result, "the replay answered the payload");
	assert.deepEqual(JSON.parse(replay.result).input.slice(20_000, 20_002), [user("kept"), details.checkpoint]);
	for (const [what, r] of [["compactionBuildRequest", build], ["compactionReplay", replay]]) {
		t.diagnostic(`${what} ${(captured.length / 1e6).toFixed(1)} MB: ${r.ms.toFixed(1)} ms, max timer gap ${r.maxGap.toFixed(1)} ms, ${r.ticks} ticks`);
		// A synchronous export lets no timer run before it answers: the loop turned while this one worked. (The
		// residual stall, napi's copy of the text in and out, is the diagnostic above, not a pass/fail bound.)
		assert.ok(r.ticks >= 1, `${what}: the event loop never turned while it ran (${r.ms.toFixed(1)} ms)`);
	}
});
