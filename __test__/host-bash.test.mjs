// Addon tests for host Bash and its background tasks (src/host/bash via src/bind/host_bash.rs, docs/host.md
// "Bash"): the JS-facing result shapes, success, failure with exit code and both streams, timeout, abort through
// bashCancel, background tasks listed / waited / stopped, another session's id answering NOT_FOUND, and closeTasks
// stopping a session's tasks. Real processes; no timing assertions (bounded polling only).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, realpathSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const native = require("../index.js");

const dirs = [];
const sessions = [];
after(() => {
	for (const s of sessions) s.closeTasks();
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function session(id = "sess-1") {
	const dir = realpathSync(mkdtempSync(join(tmpdir(), "pct-bash-")));
	dirs.push(dir);
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	const s = new native.HostSession(join(dir, "ws"), join(dir, "agent"), id);
	sessions.push(s);
	return { dir, s };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether pid is gone (no process, or a zombie). */
function dead(pid) {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
	} catch {
		return true;
	}
}

async function poll(f, tries = 500) {
	for (let i = 0; i < tries; i++) {
		if (await f()) return true;
		await sleep(10);
	}
	return false;
}

/** TaskWait until the task is no longer running (each observation waits at most 1 s). */
async function waitDone(s, id) {
	for (let i = 0; i < 60; i++) {
		const r = await s.taskWait({ backgroundTaskId: id });
		assert.equal(r.ok, true, r.message);
		if (r.task.status !== "running") return r;
	}
	assert.fail(`task ${id} did not finish`);
}

test("success: exit 0, stdout and stderr apart, runs in the workspace with PI_SCRATCH_DIR", async () => {
	const { dir, s } = session();
	const r = await s.bash({ command: 'pwd; printf %s "$PI_SCRATCH_DIR" >&2' }, { shell: { shell: "/bin/bash", args: ["-c"] } });
	assert.equal(r.ok, true);
	assert.equal(r.exitCode, 0);
	assert.equal(r.stdout, `${join(dir, "ws")}\n`);
	assert.equal(r.stderr, s.scratch);
	assert.equal(r.timeoutMs, 60000);
	assert.equal(r.code, undefined);
	// absent optional fields are left out of the object, not null
	assert.equal("backgroundTaskId" in r, false);
	assert.equal("signal" in r, false);
	assert.match(r.text, /^exit_code: 0\n\[stdout\]\n/);
});

test("failure: TOOL_FAILED still carries exitCode, stdout and stderr", async () => {
	const { s } = session();
	const r = await s.bash({ command: "echo partial; echo 'no such thing' >&2; exit 7" });
	assert.equal(r.ok, false);
	assert.equal(r.code, "TOOL_FAILED");
	assert.equal(r.ran, true);
	assert.equal(r.exitCode, 7);
	assert.equal(r.stdout, "partial\n");
	assert.equal(r.stderr, "no such thing\n");
	assert.match(r.message, /exited with code 7/);
	assert.match(r.text, /^TOOL_FAILED: .*\nexit_code: 7\n\[stdout\]\npartial\n\[stderr\]\nno such thing\n$/);
});

test("arguments: bad timeout and missing command are INVALID_ARGUMENT; a millisecond timeout is converted", async () => {
	const { s } = session();
	for (const args of [{}, { command: "" }, { command: "true", timeout: 0 }, { command: "true", timeout: 100000001 }, { command: "true", timeout: 2.5 }]) {
		const r = await s.bash(args);
		assert.equal(r.ok, false);
		assert.equal(r.code, "INVALID_ARGUMENT", JSON.stringify(args));
	}
	const r = await s.bash({ command: "true", timeout: 90000 });
	assert.equal(r.ok, true);
	assert.equal(r.timeoutMs, 90000);
	const c = await s.bash({ command: "true", timeout: 100000000 });
	assert.equal(c.timeoutMs, 21600000);
});

test("a missing shell is SHELL_NOT_FOUND with install guidance", async () => {
	const { s } = session();
	const r = await s.bash({ command: "true" }, { shell: { shell: "/nonexistent/bin/bash", args: ["-c"] } });
	assert.equal(r.ok, false);
	assert.equal(r.code, "SHELL_NOT_FOUND");
	assert.match(r.message, /Install bash/);
});

test("timeout: TOOL_TIMEOUT naming timeoutMs, the whole tree killed", async () => {
	const { dir, s } = session();
	const pidfile = join(dir, "grandchild");
	const r = await s.bash({
		command: `sh -c 'trap "" TERM; echo $$ > ${pidfile}; echo started; exec sleep 1000' & wait`,
		timeout: 1,
	});
	assert.equal(r.ok, false);
	assert.equal(r.code, "TOOL_TIMEOUT");
	assert.equal(r.timedOut, true);
	assert.match(r.message, /timeoutMs 1000/);
	assert.match(r.message, /longer budget|split/);
	assert.equal(r.stdout, "started\n");
	const pid = Number(readFileSync(pidfile, "utf8"));
	assert.ok(await poll(() => dead(pid)), `grandchild ${pid} survived`);
});

test("abort: bashCancel kills the running command's tree", async () => {
	const { dir, s } = session();
	const pidfile = join(dir, "p");
	const running = s.bash({ command: `echo $$ > ${pidfile}; exec sleep 1000` }, { callId: "call-1" });
	assert.ok(await poll(() => existsSync(pidfile) && readFileSync(pidfile, "utf8").trim() !== ""));
	s.bashCancel("call-1");
	const r = await running;
	assert.equal(r.ok, false);
	assert.equal(r.aborted, true);
	assert.ok(await poll(() => dead(Number(readFileSync(pidfile, "utf8")))));
});

test("background: id at once, listed, waited, stopped; waiting never kills", async () => {
	const { s } = session();
	const quick = await s.bash({ command: "echo done; echo warn >&2", runInBackground: true, description: "quick one" });
	assert.equal(quick.ok, true);
	assert.match(quick.backgroundTaskId, /^bg-[0-9a-f]{12}$/);
	assert.ok(quick.text.includes(quick.backgroundTaskId));
	const slow = await s.bash({ command: "echo begun; exec sleep 1000", runInBackground: true, timeout: 1 });
	assert.equal(slow.ok, true);

	const q = await waitDone(s, quick.backgroundTaskId);
	assert.equal(q.task.status, "completed");
	assert.equal(q.task.exitCode, 0);
	assert.equal(q.task.stdout, "done\n");
	assert.equal(q.task.stderr, "warn\n");

	// no timeout for background tasks: past the 1 s given, still running; a wait does not stop it
	const w = await s.taskWait({ backgroundTaskId: slow.backgroundTaskId });
	const w2 = await s.taskWait({ backgroundTaskId: slow.backgroundTaskId });
	assert.equal(w.task.status, "running");
	assert.equal(w2.task.status, "running");
	assert.equal(w2.task.stdout, "begun\n");

	const list = s.taskList();
	assert.equal(list.ok, true);
	assert.deepEqual(
		list.tasks.map((t) => [t.backgroundTaskId, t.status]),
		[
			[quick.backgroundTaskId, "completed"],
			[slow.backgroundTaskId, "running"],
		],
	);
	assert.equal(list.tasks[0].stdout, undefined);
	assert.match(list.text, /quick one/);
	assert.equal(s.taskCounts().sessionRunning, 1);

	let st = await s.taskStop({ backgroundTaskId: slow.backgroundTaskId });
	assert.equal(st.ok, true);
	assert.equal(st.task.stopRequested, true);
	if (st.task.status === "running") st = await waitDone(s, slow.backgroundTaskId);
	assert.equal(st.task.status, "stopped");
	assert.equal(st.task.signal, "SIGTERM");
	assert.equal(s.taskCounts().sessionRunning, 0);
});

test("another session's task id and an unknown id are NOT_FOUND", async () => {
	const { s: a } = session("sess-a");
	const { s: b } = session("sess-b");
	const t = await a.bash({ command: "exec sleep 1000", runInBackground: true });
	for (const call of [() => b.taskWait({ backgroundTaskId: t.backgroundTaskId }), () => b.taskStop({ backgroundTaskId: t.backgroundTaskId }), () => a.taskWait({ backgroundTaskId: "bg-000000000000" })]) {
		const r = await call();
		assert.equal(r.ok, false);
		assert.equal(r.code, "NOT_FOUND");
		assert.match(r.message, /TaskList/);
	}
	assert.deepEqual(b.taskList().tasks, []);
	const bad = await a.taskWait({});
	assert.equal(bad.code, "INVALID_ARGUMENT");
	// b's failed stop did not touch a's task
	assert.equal((await a.taskWait({ backgroundTaskId: t.backgroundTaskId })).task.status, "running");
	a.closeTasks();
});

test("a TaskWait holds no lock while it waits: another session starts, waits on and lists its own tasks meanwhile", async () => {
	// docs/host.md "Bash": a lookup takes the task table's lock only to find the task; the wait (up to 1 s on a running
	// task) happens on the task's own channel. Were the lock held for the wait, no call of session b could finish
	// while a's TaskWait is pending, in any round; a round that finds b done first proves it.
	const { s: a } = session("sess-wait-a");
	const { s: b } = session("sess-wait-b");
	const slow = await a.bash({ command: "exec sleep 1000", runInBackground: true });
	let overlapped = false;
	for (let round = 0; round < 5 && !overlapped; round++) {
		let aDone = false;
		const long = a.taskWait({ backgroundTaskId: slow.backgroundTaskId }).then((r) => ((aDone = true), r));
		const t = await b.bash({ command: "echo other", runInBackground: true });
		assert.equal(t.ok, true, t.message);
		const w = await waitDone(b, t.backgroundTaskId);
		assert.equal(w.task.stdout, "other\n");
		const seen = await b.taskWait({ backgroundTaskId: t.backgroundTaskId });
		assert.equal(seen.task.status, "completed");
		overlapped = !aDone;
		const r = await long;
		assert.equal(r.ok, true, r.message);
		assert.equal(r.task.status, "running", "a wait never stops the task");
	}
	assert.ok(overlapped, "session b's calls always waited for session a's TaskWait to end");
	a.closeTasks();
	b.closeTasks();
});

test("closeTasks stops the session's running tasks without waiting; later calls are refused", async () => {
	const { dir, s } = session();
	const pidfile = join(dir, "p");
	const t = await s.bash({ command: `echo $$ > ${pidfile}; exec sleep 1000`, runInBackground: true });
	assert.equal(t.ok, true);
	assert.ok(await poll(() => existsSync(pidfile) && readFileSync(pidfile, "utf8").trim() !== ""));
	const pid = Number(readFileSync(pidfile, "utf8"));
	assert.equal(s.closeTasks(), 1);
	assert.equal(s.closeTasks(), 0);
	assert.ok(await poll(() => dead(pid)), `task ${pid} survived the close`);
	const r = await s.bash({ command: "true" });
	assert.equal(r.code, "TOOL_FAILED");
	assert.match(r.message, /closed/);
	assert.equal(s.taskList().ok, false);
});

test("a background task dies with Node even without closeTasks (the exit watchdog)", async () => {
	const { dir } = session();
	const pidfile = join(dir, "orphan");
	const { spawnSync } = await import("node:child_process");
	const child = `
		const native = require(${JSON.stringify(fileURLToPath(new URL("../index.js", import.meta.url)))});
		const s = new native.HostSession(${JSON.stringify(join(dir, "ws"))}, ${JSON.stringify(join(dir, "agent"))}, "orphaned");
		s.bash({ command: "echo $$ > ${pidfile}; exec sleep 1000", runInBackground: true }).then(async (r) => {
			if (!r.ok) { console.error(r.message); process.exit(2); }
			const fs = require("node:fs");
			for (let i = 0; i < 500 && !(fs.existsSync(${JSON.stringify(pidfile)}) && fs.readFileSync(${JSON.stringify(pidfile)}, "utf8").trim()); i++) await new Promise((res) => setTimeout(res, 10));
			process.kill(process.pid, "SIGKILL");
		});`;
	const r = spawnSync(process.execPath, ["-e", child], { encoding: "utf8" });
	assert.equal(r.signal, "SIGKILL", r.stderr);
	const pid = Number(readFileSync(pidfile, "utf8"));
	assert.ok(await poll(() => dead(pid)), `task ${pid} outlived its Node process`);
});

test("a panic in bash, taskWait or taskList resolves internal-panic and Node keeps running", async () => {
	const { dir } = session();
	const { spawnSync } = await import("node:child_process");
	const child = `
		const native = require(${JSON.stringify(fileURLToPath(new URL("../index.js", import.meta.url)))});
		const s = new native.HostSession(${JSON.stringify(join(dir, "ws"))}, ${JSON.stringify(join(dir, "agent"))}, "panics");
		(async () => {
			const out = [await s.bash({ command: "true" }), await s.taskWait({ backgroundTaskId: "bg-x" }), s.taskList()];
			s.closeTasks();
			process.stdout.write(JSON.stringify(out.map((r) => [r.ok, r.code, r.message])));
		})();`;
	const r = spawnSync(process.execPath, ["-e", child], {
		encoding: "utf8",
		env: { ...process.env, PCT_TEST_PANIC: "host.bash,host.taskWait,host.taskList" },
	});
	assert.equal(r.status, 0, r.stderr);
	const out = JSON.parse(r.stdout);
	for (const [site, [ok, code, message]] of [["host.bash", out[0]], ["host.taskWait", out[1]], ["host.taskList", out[2]]]) {
		assert.equal(ok, false, site);
		assert.equal(code, "internal-panic", site);
		assert.ok(message.includes(`PCT_TEST_PANIC trigger at ${site}`), message);
	}
});

test("a background task whose waiter panics ends as failed (never running forever); its tree is killed and the table keeps working", async () => {
	const { dir, s } = session("sess-panic");
	const pidfile = join(dir, "pid");
	// The test seam PCT_TEST_PANIC=host.taskWaiter panics inside the task's waiter (docs/release.md "Test seams").
	process.env.PCT_TEST_PANIC = "host.taskWaiter";
	let t;
	try {
		t = await s.bash({ command: `echo $$ > ${pidfile}; exec sleep 1000`, runInBackground: true });
	} finally {
		delete process.env.PCT_TEST_PANIC;
	}
	assert.equal(t.ok, true, t.message);
	const done = await waitDone(s, t.backgroundTaskId);
	assert.equal(done.task.status, "failed");
	assert.equal(done.task.exitCode, undefined, "no exit code: the leader's exit was never seen");
	assert.ok(await poll(() => existsSync(pidfile) && readFileSync(pidfile, "utf8").trim() !== ""), "the shell started");
	const pid = Number(readFileSync(pidfile, "utf8"));
	assert.ok(await poll(() => dead(pid)), "the task's process was killed");
	const list = s.taskList();
	assert.equal(list.ok, true);
	assert.deepEqual(list.tasks.map((x) => x.status), ["failed"]);
	assert.equal(s.taskCounts().sessionRunning, 0);
	// A later task of the same table runs normally.
	const ok = await s.bash({ command: "echo fine", runInBackground: true });
	assert.equal((await waitDone(s, ok.backgroundTaskId)).task.status, "completed");
});
