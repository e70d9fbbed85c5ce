// The Pi glue of Shell Sessions (src/pi/tools/shell.ts) with a recording host: registration, the gate, hook
// order and re-checks after async hooks, AbortSignal, and the lifecycle callbacks.
import { failsAsData } from "./helpers/failure.mjs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { register, SHELL_NOT_ENABLED, shellStatusLines } from "../src/pi/tools/shell.ts";
import "./helpers/shell.mjs"; // private TMPDIR for recovery files

function fakeHost({ hooks = {}, admitted = true } = {}) {
	const tools = new Map();
	const life = {};
	const host = {
		admitted,
		pi: { registerTool: (def) => tools.set(def.name, def) },
		hooks,
		shared: new Map(),
		isAdmitted: () => host.admitted,
		lifecycle: (feature, cb) => (life[feature] = cb),
		// auto: these tests are about the pair itself; the permission gate has its own tests (permission-glue).
		config: () => ({ permissions: { mode: "auto", planSafeTools: [] } }),
	};
	register(host);
	const call = (name, params, signal, onUpdate) => tools.get(name).execute("id", params, signal, onUpdate, { cwd: "/tmp" });
	return { host, tools, life, call };
}

test("registers the pair with open schemas, publishes the manager, exposes status lines", () => {
	const { host, tools, life } = fakeHost();
	assert.deepEqual([...tools.keys()], ["exec_command", "write_stdin"]);
	for (const t of tools.values()) assert.notEqual(t.parameters.additionalProperties, false);
	assert.ok(host.shared.get("shell"));
	assert.equal(typeof life.shellSessions.beforeSwitch, "function");
	const lines = shellStatusLines(host);
	assert.ok(lines.some((l) => l === "jobs: 0 running, 0 finished and unread"), lines.join("\n"));
	assert.ok(lines.includes("cleanup pending: no"));
	assert.equal(lines.some((l) => l.startsWith("exit cleanup:")), false, "the watchdog problem is shown only when there is one");
	const nested = host.shared.get("shell");
	return nested.exec({ cmd: "echo nested" }, { cwd: "/tmp", stopOnCancel: false }).then((r) => {
		assert.equal(r.details.stdout, "nested\n", "the published manager defaults to Pi's shell for calls without one");
	});
});

test("runs through Pi's shell with ctx.cwd; the gate refuses when not admitted", async () => {
	const { host, call } = fakeHost();
	const r = await call("exec_command", { cmd: "pwd; echo $0" });
	assert.equal(r.details.status, "completed");
	assert.equal(r.details.stdout, "/tmp\n/bin/bash\n");
	assert.match(r.content[0].text, /^session_id pct-shell-/);
	host.admitted = false;
	await assert.rejects(call("exec_command", { cmd: "true" }), { message: SHELL_NOT_ENABLED });
	await assert.rejects(call("write_stdin", { session_id: "x" }), { message: SHELL_NOT_ENABLED });
	host.admitted = true;
	await failsAsData(call("exec_command", { cmd: "true", tty: true }), "invalid-command", /^invalid-command: exec_command does not support the field "tty"/);
	await failsAsData(call("write_stdin", { session_id: 7 }), "invalid-session", /^invalid-session: /);
});

test("hooks: identity-only call after normalization, env overlay, policy denial, re-checks after async hooks", async () => {
	const seen = [];
	let deny = false;
	let onContext = () => {};
	const hooks = {
		context: async (c) => (seen.push(["context", c]), await onContext(), { env: { PCT_HOOK_ENV: "from-hook" } }),
		policy: async (c) => (seen.push(["policy", c]), deny ? { allow: false, reason: "not today" } : { allow: true }),
	};
	const { host, call, life } = fakeHost({ hooks });
	const r = await call("exec_command", { cmd: "sleep 0.3; echo $PCT_HOOK_ENV", yield_time_ms: 0 });
	assert.deepEqual(seen[0], ["context", { tool: "exec_command", path: "direct", cwd: "/tmp" }]);
	assert.deepEqual(seen[1], ["policy", { tool: "exec_command", path: "direct", cwd: "/tmp" }]);
	const id = r.details.sessionId;
	const polled = await call("write_stdin", { sessionId: id, yield_time_ms: 5000 });
	assert.equal(polled.details.stdout, "from-hook\n", "the context hook's env reached that one spawn");
	assert.deepEqual(seen[2], ["context", { tool: "write_stdin", path: "direct", cwd: "/tmp", sessionId: id }]);
	// invalid requests never reach the hooks
	seen.length = 0;
	await failsAsData(call("exec_command", { cmd: "a", command: "b" }), "invalid-command", /invalid-command/);
	assert.deepEqual(seen, []);
	deny = true;
	await failsAsData(call("exec_command", { cmd: "touch /tmp/should-not-exist-pct" }), "policy-denied", /^policy-denied: not today/);
	assert.equal(existsSync("/tmp/should-not-exist-pct"), false);
	deny = false;
	// the capability is disabled while the hook runs
	onContext = async () => (host.admitted = false);
	await assert.rejects(call("exec_command", { cmd: "true" }), { message: SHELL_NOT_ENABLED });
	host.admitted = true;
	// the session is replaced (shutdown) while the hook runs
	onContext = async () => life.shellSessions.shutdown();
	await failsAsData(call("exec_command", { cmd: "true" }), "manager-closed", /^manager-closed: /);
});

test("live output: a running exec_command and a waiting write_stdin send the tail of their output as it grows", async () => {
	const { call } = fakeHost();
	const updates = [];
	const r = await call("exec_command", { cmd: "for i in 1 2 3; do echo step $i; sleep 0.4; done", yield_time_ms: 10_000 }, undefined, (u) => updates.push(u));
	assert.equal(r.details.stdout, "step 1\nstep 2\nstep 3\n", "the peeks consumed nothing");
	assert.ok(updates.length >= 2, `updates: ${JSON.stringify(updates)}`);
	for (const u of updates) assert.equal(u.details.live, true);
	// each update carries more than the one before (sent only when the output grew), and the text is its tail
	const sizes = updates.map((u) => u.details.stdoutBytes);
	assert.deepEqual(sizes, [...new Set(sizes)].sort((a, b) => a - b), `sizes ${sizes}`);
	assert.match(updates[0].content[0].text, /^step 1\n/);
	assert.match(updates[0].details.sessionId, /^pct-shell-/);
	assert.equal(typeof updates[0].details.elapsedMs, "number");
	// bounded: a stream larger than LIVE_BYTES arrives as its last 4096 bytes
	const big = [];
	const b = await call("exec_command", { cmd: "seq 1 20000; sleep 0.6", yield_time_ms: 10_000 }, undefined, (u) => big.push(u));
	assert.equal(b.details.status, "completed");
	assert.ok(big.length >= 1);
	const last = big.at(-1).details;
	assert.ok(last.stdout.length <= 4096 && last.stdout.endsWith("19999\n20000\n"), `${last.stdout.length}`);
	assert.ok(last.stdoutBytes > 100_000, `${last.stdoutBytes}`);
	// write_stdin while it waits
	const started = await call("exec_command", { cmd: "read x; echo got $x; sleep 0.6; echo bye", yield_time_ms: 0 });
	const polls = [];
	const w = await call("write_stdin", { session_id: started.details.session_id, chars: "hi\n", yield_time_ms: 10_000 }, undefined, (u) => polls.push(u));
	assert.equal(w.details.stdout, "got hi\nbye\n");
	assert.ok(polls.some((u) => u.content[0].text === "got hi\n"), JSON.stringify(polls));
	// without onUpdate (print mode, nested) nothing polls: the call still works
	const plain = await call("exec_command", { cmd: "echo x" });
	assert.equal(plain.details.stdout, "x\n");
});

test("AbortSignal: an aborted call stops its job; an already aborted signal runs nothing", async () => {
	const { host, call } = fakeHost();
	const ac = new AbortController();
	const p = call("exec_command", { cmd: "sleep 60" }, ac.signal);
	// Abort once the job runs (the manager counts it), not after a guessed delay.
	const m = host.shared.get("shell");
	for (const end = Date.now() + 15000; m.status().running === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
	assert.equal(m.status().running, 1, "the job started");
	ac.abort();
	await failsAsData(p, "aborted", /^aborted: /);
	const end = Date.now() + 15000;
	while (m.status().running > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
	assert.equal(m.status().running, 0);
	const pre = new AbortController();
	pre.abort();
	await failsAsData(call("exec_command", { cmd: "true" }, pre.signal), "aborted", /^aborted: .*nothing ran/);
});

test("lifecycle: beforeSwitch stops jobs; shutdown closes, deletes only its files and starts a fresh manager", async () => {
	const { host, call, life } = fakeHost();
	let r = await call("exec_command", { cmd: "echo out; sleep 60", yield_time_ms: 300 });
	// poll until the output (and with it the recovery file) has arrived, however loaded the machine is
	const id = r.details.sessionId;
	const end = Date.now() + 60000;
	while (!r.details.recovery && Date.now() < end) r = await call("write_stdin", { session_id: id, yield_time_ms: 200 });
	const path = r.details.recovery.path;
	assert.equal(existsSync(path), true);
	assert.equal(await life.shellSessions.beforeSwitch(), true);
	const old = host.shared.get("shell");
	assert.equal(old.status().running, 0);
	assert.equal(existsSync(path), true, "files survive cleanup and feature disable");
	await life.shellSessions.disabled();
	assert.equal(existsSync(path), true);
	await life.shellSessions.shutdown();
	assert.equal(existsSync(path), false);
	assert.notEqual(host.shared.get("shell"), old);
	assert.equal(old.status().closed, true);
	const again = await call("exec_command", { cmd: "echo fresh" });
	assert.equal(again.details.stdout, "fresh\n");
});

test("status lines say plainly when the exit watchdog could not start, and what to do", () => {
	const status = { running: 1, unreadTerminal: 0, stopUnconfirmed: 0, cleanupPending: false, closed: false, recoveryFiles: 0 };
	const host = { shared: new Map([["shell", { status: () => ({ ...status, watchdogFailure: "could not start /bin/sh: No such file or directory (os error 2)" }) }]]) };
	const line = shellStatusLines(host).find((l) => l.startsWith("exit cleanup:"));
	assert.equal(
		line,
		"exit cleanup: unavailable (could not start /bin/sh: No such file or directory (os error 2)). Commands still run, but if Pi ends " +
			"without a session shutdown (crash, kill) nothing stops the commands still running or deletes their recovery files. Stop " +
			"long-running commands with write_stdin terminate before quitting, and make sure /bin/sh can be started: the next command retries.",
	);
	host.shared.set("shell", { status: () => status });
	assert.equal(shellStatusLines(host).some((l) => l.startsWith("exit cleanup:")), false);
});
