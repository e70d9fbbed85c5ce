// SubmitPlan's artifact store through the addon (docs/permissions.md "The plan tools"): planSave resolves (never
// rejects), stores the exact bytes as a new file, refuses at its bound, and runs off Node's main thread. Every edge
// (symlinks, taken names) is tested in src/plan/mod.rs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";
import { tempDir } from "./helpers/tmp.mjs";

test("planSave: the exact bytes in a new .pi/plan file per call", async () => {
	const ws = tempDir("pct-plan-");
	const md = "# Plan\r\n\n- ünïcode\t\n";
	const a = await native.planSave(ws, md);
	const b = await native.planSave(ws, md);
	assert.equal(a.ok, true, a.message);
	assert.match(a.relative, /^\.pi\/plan\/\d+-[0-9a-f]{8}\.md$/);
	assert.equal(a.path, join(ws, a.relative));
	assert.equal(a.bytes, Buffer.byteLength(md));
	assert.ok(readFileSync(a.path).equals(Buffer.from(md)));
	assert.notEqual(a.path, b.path);
	assert.deepEqual(readdirSync(join(ws, ".pi", "plan")).filter((f) => f.endsWith(".md")).length, 2);
	// The folder keeps itself out of git status (docs/permissions.md "The plan tools").
	assert.equal(readFileSync(join(ws, ".pi", "plan", ".gitignore"), "utf8").split("\n").includes("*"), true);
});

test("planSave: empty and oversized plans resolve a coded refusal and create nothing; the bound itself is kept", async () => {
	const ws = tempDir("pct-plan-");
	const max = native.planMaxBytes();
	assert.equal(max, 1024 * 1024);
	const empty = await native.planSave(ws, "  \n");
	assert.deepEqual([empty.ok, empty.code], [false, "PLAN_EMPTY"]);
	const over = await native.planSave(ws, "é".repeat(max / 2) + "x");
	assert.deepEqual([over.ok, over.code], [false, "PLAN_TOO_LARGE"]);
	assert.match(over.message, /1048577 bytes; at most 1048576 are kept\. Shorten the plan/);
	assert.equal(existsSync(join(ws, ".pi")), false);
	const at = await native.planSave(ws, "é".repeat(max / 2));
	assert.equal(at.ok, true, at.message);
	assert.equal(at.bytes, max);
	const gone = await native.planSave(join(ws, "missing"), "# plan");
	assert.deepEqual([gone.ok, gone.code], [false, "PLAN_SAVE_FAILED"]);
});

test("planSave runs off the main thread: the call returns a promise at once, the write and sync happen on the pool", async () => {
	const ws = tempDir("pct-plan-");
	const plan = "x".repeat(native.planMaxBytes());
	const t0 = performance.now();
	const p = native.planSave(ws, plan);
	const syncMs = performance.now() - t0;
	assert.ok(p instanceof Promise, "an async export");
	assert.ok(syncMs < 50, `the main thread was held ${syncMs.toFixed(1)} ms (only the argument copy should run there)`);
	const r = await p;
	assert.equal(r.ok, true, r.message);
	assert.equal(readFileSync(r.path).length, plan.length);
});
