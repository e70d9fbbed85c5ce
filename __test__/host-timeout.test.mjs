// Every host tool has a time bound (docs/host.md "Timeouts"): Write's budget checked right before anything changes
// (TOOL_TIMEOUT, nothing changed), the hard bound of Write and Edit for a call stuck on a stalled disk (TOOL_TIMEOUT,
// outcome unknown, the call may still land), TaskList reading a task whose output is held by a stalled append
// (TOOL_TIMEOUT instead of a hung turn), and FIFOs refused by Write and Edit without blocking. The stalls come from
// the test seam PCT_TEST_HOST_STALL (docs/release.md "Test seams").
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";
import { tempDir } from "./helpers/tmp.mjs";

const sessions = [];
after(() => {
	for (const s of sessions) s.closeTasks();
});

function session(files = {}) {
	const dir = tempDir("pct-timeout-");
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	for (const [p, text] of Object.entries(files)) writeFileSync(join(dir, "ws", p), text);
	const s = new native.HostSession(join(dir, "ws"), join(dir, "agent"), "sess-timeout");
	sessions.push(s);
	return { ws: join(dir, "ws"), s };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs `f` with PCT_TEST_HOST_STALL set (read by the engine when the stalled site is reached). */
async function stalled(spec, f) {
	process.env.PCT_TEST_HOST_STALL = spec;
	try {
		return await f();
	} finally {
		delete process.env.PCT_TEST_HOST_STALL;
	}
}

test("Write: a budget that runs out before the bytes are committed answers TOOL_TIMEOUT and changes nothing; inside its budget it lands", async () => {
	const { ws, s } = session({ "a.txt": "old\n" });
	const late = await stalled("host.write:400", () => s.write({ path: "a.txt", content: "new\n" }, { timeoutMs: 100 }));
	assert.equal(late.ok, false);
	assert.equal(late.code, "TOOL_TIMEOUT");
	assert.match(late.message, /100 ms budget before writing a\.txt .*nothing was changed/);
	assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "old\n");
	const created = await stalled("host.write:400", () => s.write({ path: "b.txt", content: "b\n" }, { timeoutMs: 100 }));
	assert.equal(created.code, "TOOL_TIMEOUT");
	assert.equal(existsSync(join(ws, "b.txt")), false, "a file to create is not created either");
	// The same stall inside the budget: the write lands.
	const inTime = await stalled("host.write:100", () => s.write({ path: "a.txt", content: "new\n" }, { timeoutMs: 5000 }));
	assert.equal(inTime.ok, true, inTime.message);
	assert.equal(readFileSync(join(ws, "a.txt"), "utf8"), "new\n");
});

test("Write and Edit stuck past budget + grace resolve TOOL_TIMEOUT with an unknown outcome; the stuck Edit may still land", async () => {
	const { ws, s } = session({ "e.txt": "one\ntwo\n" });
	const w = await stalled("host.write:3000", () => s.write({ path: "w.txt", content: "w\n" }, { timeoutMs: 200 }));
	assert.equal(w.code, "TOOL_TIMEOUT");
	assert.match(w.message, /Write did not finish within its 200 ms budget .*may still complete\. Read the file before retrying/);
	const r = await s.read({ path: "e.txt" });
	// The stuck Write holds the session's write lock until its stall ends: a write right after the answer cannot
	// get it (so the answer came before the stall ended), and the lock is free again once a probe write lands.
	const probe = () => s.write({ path: "probe.txt", content: "p\n" }, { timeoutMs: 200 });
	const first = await probe();
	assert.equal(first.code, "TOOL_TIMEOUT", "the stalled Write still held the lock when its call had answered");
	let landed = first;
	for (let i = 0; i < 40 && !landed.ok; i++) landed = await probe();
	assert.equal(landed.ok, true, landed.message);
	assert.equal(existsSync(join(ws, "w.txt")), false, "the Write's own deadline check stopped it before writing");
	const e = await stalled("host.edit:2500", () => s.edit({ path: "e.txt", tag: r.tag, ops: "PUT 2.=2:\n+TWO" }, { timeoutMs: 200 }));
	assert.equal(e.ok, false);
	assert.equal(e.code, "TOOL_TIMEOUT");
	assert.match(e.message, /Edit did not finish within its 200 ms budget/);
	assert.equal(e.budgetExhausted, false);
	// The stuck call finishes on its own thread: that is why the outcome is unknown.
	for (let i = 0; i < 100 && readFileSync(join(ws, "e.txt"), "utf8") !== "one\nTWO\n"; i++) await sleep(50);
	assert.equal(readFileSync(join(ws, "e.txt"), "utf8"), "one\nTWO\n");
	// Without a stall the same budgets are ample.
	const ok = await s.write({ path: "w2.txt", content: "x\n" }, { timeoutMs: 200 });
	assert.equal(ok.ok, true, ok.message);
});

test("TaskList: a task whose output an append holds on a stalled disk answers TOOL_TIMEOUT after its budget, then lists again", async () => {
	const { s } = session();
	// The seam is read when the drain reaches its append: it stays set until TaskList finds the output held there
	// (before that, TaskList answers at once with the task running).
	const { t, l } = await stalled("bash.stream:8000", async () => {
		const t = await s.bash({ command: "echo hi; exec sleep 1000", runInBackground: true });
		assert.equal(t.ok, true, t.message);
		let l = s.taskList();
		for (let i = 0; i < 500 && l.ok; i++) {
			await sleep(10);
			l = s.taskList();
		}
		return { t, l };
	});
	assert.equal(l.ok, false, "the drain never reached its stalled append");
	assert.equal(l.code, "TOOL_TIMEOUT");
	assert.match(l.message, new RegExp(`TaskList stopped after its 2000 ms budget: the output of background task ${t.backgroundTaskId} is still being written`));
	const w = await s.taskWait({ backgroundTaskId: t.backgroundTaskId });
	assert.equal(w.code, "TOOL_TIMEOUT");
	assert.match(w.message, /^TaskWait stopped after its 2000 ms budget/);
	let again;
	for (let i = 0; i < 200; i++) {
		again = s.taskList();
		if (again.ok) break;
		await sleep(50);
	}
	assert.equal(again.ok, true, again.message);
	assert.deepEqual(again.tasks.map((x) => [x.backgroundTaskId, x.status, x.stdoutBytes]), [[t.backgroundTaskId, "running", 3]]);
});

test("Write and Edit refuse a FIFO without blocking", async () => {
	const { ws, s } = session({ "real.txt": "r\n" });
	execFileSync("mkfifo", [join(ws, "pipe")]);
	const w = await s.write({ path: "pipe", content: "x\n" }, { timeoutMs: 1000 });
	assert.equal(w.code, "INVALID_ARGUMENT");
	assert.match(w.message, /not a regular file/);
	const e = await s.edit({ path: "pipe", tag: "0000", ops: "PUT >$:\n+x" }, { timeoutMs: 1000 });
	assert.equal(e.ok, false);
	assert.notEqual(e.code, "TOOL_TIMEOUT");
});
