// Shell Sessions against the addon (docs/spec/toolkit.md §5, §6): every limit at its boundary, every error code, budgets,
// UTF-8, process groups and descendants, stdin admission, stop/cleanup, recovery files, bounded memory.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BASH, liveGroupMembers, procState, shellManager, sleep } from "./helpers/shell.mjs";
import { until } from "./helpers/until.mjs";

const FAST = { stopGraceMs: 300, stopConfirmMs: 500 };
const ok = (r) => {
	assert.equal(r.ok, true, r.text);
	return r.details;
};
const code = (r) => {
	assert.equal(r.ok, false, `expected an error, got ${r.text}`);
	return r.code;
};
/**
 * Polls a session (empty write_stdin) until `done(stdout so far, last details)` holds, collecting stdout across
 * polls; bounded by a generous overall limit so a loaded machine only makes it slower, never wrong.
 */
async function pollUntil(write, id, first, done, limitMs = 60000) {
	let stdout = first.stdout;
	let last = first;
	const end = Date.now() + limitMs;
	while (!done(stdout, last) && Date.now() < end) {
		last = ok(await write({ session_id: id, yield_time_ms: 200 }));
		stdout += last.stdout;
	}
	return { stdout, last };
}

test("a finite command completes in one call with both field spellings and exact text", async () => {
	const { m, exec, write } = shellManager();
	const r = await exec({ cmd: "printf 'out\\n'; printf 'err\\n' >&2; exit 7" });
	const d = ok(r);
	assert.equal(d.status, "completed");
	assert.equal(d.exitCode, 7);
	assert.equal(d.exit_code, 7);
	assert.equal(d.sessionId, d.session_id);
	assert.equal(d.signal, null);
	assert.equal(d.truncated, false);
	assert.equal(d.dropped, 0);
	assert.deepEqual(d.stdin, { state: "open", pendingBytes: 0, pendingCalls: 0 });
	assert.equal(r.text, `session_id ${d.sessionId}: completed\nexit_code: 7\n[stdout]\nout\n[stderr]\nerr\n`);
	assert.deepEqual(m.recoveryFiles(), [], "a small complete result needs no file");
	assert.equal(ok(await exec({ command: "echo same", cmd: "echo same" })).stdout, "same\n");
	assert.equal(code(await write({ session_id: d.sessionId })), "stale-session");
	assert.equal(code(await write({ session_id: "pct-shell-000000000000" })), "invalid-session");
});

test("request validation: spelling conflicts, refused fields, numeric handles", async () => {
	const { m, exec, write } = shellManager();
	assert.equal(code(await exec({ cmd: "a", command: "b" })), "invalid-command");
	assert.equal(code(await exec({ cmd: "true", workdir: "a", cwd: "b" })), "invalid-cwd");
	assert.equal(code(await exec({ cmd: "true", yield_time_ms: 1, yieldTimeMs: 2 })), "invalid-limit");
	assert.equal(code(await write({ session_id: "a", sessionId: "b" })), "invalid-session");
	assert.equal(code(await write({ session_id: "a", chars: "x", input: "y" })), "invalid-command");
	assert.equal(code(await exec({})), "invalid-command");
	assert.equal(code(await exec({ cmd: "" })), "invalid-command");
	for (const f of ["tty", "shell", "login", "sandbox_permissions", "justification", "with_escalated_permissions", "prefix_rule", "timeout_ms"]) {
		const r = await exec({ cmd: "true", [f]: false });
		assert.equal(code(r), "invalid-command");
		assert.match(r.message, new RegExp(`"${f}"`));
		assert.equal(code(await write({ session_id: "x", [f]: 1 })), "invalid-command");
	}
	for (const h of [1, 0, 3.0]) assert.equal(code(await write({ session_id: h })), "invalid-session");
	assert.equal(code(await write({ sessionId: 42 })), "invalid-session");
	// normalization is exposed for the hooks (which run after it)
	assert.deepEqual(m.normalizeWrite({ sessionId: "s", input: "x" }).request, {
		sessionId: "s", input: "x", closeStdin: false, terminate: false, yieldTimeMs: 10000, maxOutputBytes: 51200,
	});
	assert.equal(m.normalizeExec({ cmd: "x", timeout_ms: 5 }).code, "invalid-command");
});

test("every limit at its boundary: yield, maxOutputBytes, max_output_tokens", async () => {
	const { exec } = shellManager();
	for (const [args, good] of [
		[{ yield_time_ms: 0 }, true], [{ yield_time_ms: 60000 }, true], [{ yield_time_ms: 60001 }, false], [{ yield_time_ms: -1 }, false],
		[{ maxOutputBytes: 1024 }, true], [{ maxOutputBytes: 262144 }, true], [{ maxOutputBytes: 1023 }, false], [{ maxOutputBytes: 262145 }, false],
		[{ max_output_tokens: 256 }, true], [{ max_output_tokens: 65536 }, true], [{ max_output_tokens: 255 }, false], [{ max_output_tokens: 65537 }, false],
		[{ maxOutputBytes: "2048" }, false], [{ max_output_tokens: 300.5 }, false],
	]) {
		const r = await exec({ cmd: "true", ...args });
		if (good) assert.equal(r.ok, true, JSON.stringify(args));
		else assert.equal(code(r), "invalid-limit", JSON.stringify(args));
	}
	// 4 bytes per token; the smaller of two limits wins
	const big = "head -c 300000 /dev/zero | tr '\\0' x";
	assert.equal(ok(await exec({ cmd: big, max_output_tokens: 256 })).stdout.length, 1024);
	assert.equal(ok(await exec({ cmd: big, max_output_tokens: 65536 })).stdout.length, 262144);
	assert.equal(ok(await exec({ cmd: big, max_output_tokens: 1000, maxOutputBytes: 2000 })).stdout.length, 2000);
	assert.equal(ok(await exec({ cmd: big, max_output_tokens: 300, maxOutputBytes: 2000 })).stdout.length, 1200);
	assert.equal(ok(await exec({ cmd: big })).stdout.length, 51200);
});

test("interleaved stdout/stderr share one budget, stdout first; the lossy preview gets a complete recovery file", async () => {
	const { m, exec } = shellManager();
	const cmd = "for i in 1 2 3 4; do head -c 400 /dev/zero | tr '\\0' o; head -c 400 /dev/zero | tr '\\0' e >&2; done";
	const r = await exec({ cmd, maxOutputBytes: 2000 });
	const d = ok(r);
	assert.equal(d.stdout, "o".repeat(1600));
	assert.equal(d.stderr, "e".repeat(400));
	assert.equal(d.dropped, 1200);
	assert.equal(d.truncated, true);
	assert.match(r.text, /output truncated: 1200 bytes of new output not shown \(budget 2000 bytes, stdout first\)/);
	assert.equal(d.recovery.state, "complete");
	assert.equal(d.recovery.bytes, 3200);
	assert.equal(d.recovery.capturedBytes, 3200);
	const body = readFileSync(d.recovery.path, "utf8");
	assert.equal(body.replace(/e/g, "").length, 1600);
	assert.equal(body.replace(/o/g, "").length, 1600);
	assert.equal(statSync(d.recovery.path).mode & 0o777, 0o600);
	assert.ok(d.recovery.path.startsWith(tmpdir()));
	assert.match(d.recovery.path, /pi-codex-toolkit-shell-[0-9a-f-]{36}\.log$/);
	assert.deepEqual(m.recoveryFiles(), [d.recovery.path]);
	await m.close();
	assert.equal(m.deleteRecoveryFiles(), 1);
	assert.equal(existsSync(d.recovery.path), false);
});

test("a UTF-8 character split across reads arrives whole; the budget cuts on a code point boundary", async () => {
	const { exec } = shellManager();
	const d = ok(await exec({ cmd: "printf '\\360\\237'; sleep 0.2; printf '\\230\\200 end'" }));
	assert.equal(d.stdout, "😀 end");
	const d2 = ok(await exec({ cmd: "printf ab; for i in $(seq 700); do printf '€'; done", maxOutputBytes: 1024 }));
	assert.equal(Buffer.byteLength(d2.stdout), 1022, "2 + 340*3 bytes; the 341st € would cross 1024");
	assert.equal(d2.dropped, 2 + 2100 - 1022);
	const d3 = ok(await exec({ cmd: "printf 'a\\377b'" }));
	assert.equal(d3.stdout, "a\uFFFDb");
});

test("yield, poll to completion: a prefix consumed by an earlier poll stays recoverable", async () => {
	const { m, exec, write } = shellManager();
	// the job waits for a line on stdin between its two outputs, so it is running however slow the machine is
	const d = ok(await exec({ cmd: "echo one; read x; echo two", yield_time_ms: 200 }));
	const { stdout: first, last: d1 } = await pollUntil(write, d.sessionId, d, (out) => out === "one\n");
	assert.equal(first, "one\n");
	assert.equal(d1.status, "running");
	assert.equal(d1.exitCode, null);
	assert.equal(d1.recovery.state, "capturing");
	const w = ok(await write({ session_id: d.sessionId, chars: "go\n", yield_time_ms: 200 }));
	const { stdout: rest, last: d2 } = await pollUntil(write, d.sessionId, w, (_, l) => l.status !== "running");
	assert.equal(d2.status, "completed");
	assert.equal(rest, "two\n");
	assert.equal(d2.recovery.state, "complete");
	assert.equal(readFileSync(d2.recovery.path, "utf8"), "one\ntwo\n");
	// a yield with no output yet needs no file
	const d3 = ok(await exec({ cmd: "sleep 0.3", yield_time_ms: 0 }));
	assert.equal(d3.recovery, undefined);
	const { last: d4 } = await pollUntil(write, d3.sessionId, d3, (_, l) => l.status !== "running");
	assert.equal(d4.status, "completed");
	assert.equal(d4.recovery, undefined);
	assert.equal(m.recoveryFiles().length, 1);
	await m.close();
	m.deleteRecoveryFiles();
});

test("workdir is relative to cwd and must exist; shell and spawn failures; env overlay for one spawn", async () => {
	const base = mkdtempSync(join(tmpdir(), "pct-shell-"));
	mkdirSync(join(base, "sub"));
	writeFileSync(join(base, "file"), "x");
	const { m, exec } = shellManager(undefined, base);
	assert.equal(ok(await exec({ cmd: "pwd", workdir: "sub" })).stdout, `${join(base, "sub")}\n`);
	assert.equal(code(await exec({ cmd: "pwd", workdir: "missing" })), "invalid-cwd");
	assert.equal(code(await exec({ cmd: "pwd", cwd: "file" })), "invalid-cwd");
	assert.equal(code(await m.exec({ cmd: "true" }, { cwd: base, shell: { shell: "/nonexistent/bash", args: ["-c"] } })), "shell-unavailable");
	assert.equal(code(await m.exec({ cmd: "true" }, { cwd: base })), "shell-unavailable", "no shell given and no default");
	m.setShell(BASH);
	assert.equal(ok(await m.exec({ cmd: "echo default" }, { cwd: base })).stdout, "default\n");
	assert.equal(code(await m.exec({ cmd: "true" }, { cwd: base, shell: { shell: join(base, "file"), args: [] } })), "spawn-failed");
	const d = ok(await exec({ cmd: "echo ${PCT_E2E_VAR:-unset} ${HOME:+home}" }, { env: { PCT_E2E_VAR: "overlay" } }));
	assert.equal(d.stdout, "overlay home\n");
	assert.equal(ok(await exec({ cmd: "echo ${PCT_E2E_VAR:-unset}" })).stdout, "unset\n");
	assert.equal(process.env.PCT_E2E_VAR, undefined);
	for (const env of [{ A: 1 }, { "A=B": "x" }, "A=B", { "": "x" }]) {
		assert.equal(code(await exec({ cmd: "true" }, { env })), "spawn-failed");
	}
});

test("stdin: verbatim round trip, closeStdin, EOF refusals, transport, input with terminate", async () => {
	const { m, exec, write } = shellManager(FAST);
	const d = ok(await exec({ cmd: "read a; echo \"[$a]\"; cat; echo eof", yield_time_ms: 100 }));
	const id = d.sessionId;
	assert.equal(d.stdout, "");
	const d1 = ok(await write({ session_id: id, chars: "hello\n", yield_time_ms: 1000 }));
	assert.equal(d1.inputDelivery, "written");
	assert.equal((await pollUntil(write, id, d1, (out) => out.length >= "[hello]\n".length)).stdout, "[hello]\n");
	const d1b = ok(await write({ session_id: id, input: "no newline", yield_time_ms: 200 }));
	assert.equal((await pollUntil(write, id, d1b, (out) => out.length >= "no newline".length)).stdout, "no newline");
	assert.equal(code(await write({ session_id: id, chars: "x", terminate: true })), "stdin-failed");
	const d2 = ok(await write({ session_id: id, closeStdin: true, yield_time_ms: 5000 }));
	assert.equal(d2.status, "completed");
	assert.equal(d2.stdout, "eof\n");
	assert.equal(d2.stdin.state, "closed");

	const e = ok(await exec({ cmd: "cat > /dev/null; sleep 5", yield_time_ms: 0 }));
	ok(await write({ session_id: e.sessionId, closeStdin: true, yield_time_ms: 0 }));
	ok(await write({ session_id: e.sessionId, closeStdin: true, yield_time_ms: 0 }), "repeated EOF is harmless");
	assert.equal(code(await write({ session_id: e.sessionId, chars: "late" })), "stdin-closed");

	const t = ok(await m.exec({ cmd: "echo via-stdin; sleep 30", yield_time_ms: 300 }, { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-s"], commandTransport: "stdin" } }));
	assert.equal((await pollUntil(write, t.sessionId, t, (out) => out.length >= "via-stdin\n".length)).stdout, "via-stdin\n");
	assert.equal(t.stdin.state, "closed");
	assert.equal(code(await write({ session_id: t.sessionId, chars: "x" })), "stdin-transport");
	assert.equal(ok(await write({ session_id: t.sessionId, chars: "", yield_time_ms: 0 })).status, "running");

	const b = ok(await exec({ cmd: "exec 0<&-; echo closed; sleep 30", yield_time_ms: 200 }));
	assert.equal((await pollUntil(write, b.sessionId, b, (out) => out.length >= "closed\n".length)).stdout, "closed\n");
	const bd = ok(await write({ session_id: b.sessionId, chars: "into a closed pipe", yield_time_ms: 200 }));
	assert.equal(bd.inputDelivery, "unknown", "EPIPE");
	assert.equal(bd.stdin.state, "broken");
	assert.equal(code(await write({ session_id: b.sessionId, chars: "again" })), "stdin-closed");
	assert.deepEqual(await m.close(), { ok: true });
});

test("stdin admission: 262,144 bytes and 16 outstanding calls", async () => {
	const { m, exec, write } = shellManager(FAST);
	const a = ok(await exec({ cmd: "sleep 30", yield_time_ms: 0 })).sessionId;
	const full = ok(await write({ session_id: a, chars: "x".repeat(262144), yield_time_ms: 0 }));
	assert.equal(full.stdin.pendingBytes, 262144);
	assert.equal(full.inputDelivery, "unknown", "not yet handed to the pipe when the call returned");
	const over = await write({ session_id: a, chars: "y" });
	assert.equal(code(over), "stdin-overload");
	const b = ok(await exec({ cmd: "sleep 30", yield_time_ms: 0 })).sessionId;
	ok(await write({ session_id: b, chars: "z".repeat(100000), yield_time_ms: 0 }));
	for (let i = 0; i < 15; i++) ok(await write({ session_id: b, chars: "1", yield_time_ms: 0 }));
	assert.equal(ok(await write({ session_id: b, yield_time_ms: 0 })).stdin.pendingCalls, 16);
	assert.equal(code(await write({ session_id: b, chars: "1", yield_time_ms: 0 })), "stdin-overload");
	// stopping breaks the pipe; outstanding writes settle (unknown) and release their admission
	const s = ok(await write({ session_id: b, terminate: true }));
	assert.equal(s.status, "terminated");
	await until("one session running", () => m.status().running === 1);
	assert.deepEqual(await m.close(), { ok: true });
});

test("16 unsettled jobs; the 17th is refused with session-limit; close then refuses with manager-closed", async () => {
	const { m, exec } = shellManager(FAST);
	for (let i = 0; i < 16; i++) assert.equal(ok(await exec({ cmd: "sleep 30", yield_time_ms: 0 })).status, "running");
	assert.equal(m.status().running, 16);
	assert.equal(code(await exec({ cmd: "true", yield_time_ms: 0 })), "session-limit");
	assert.deepEqual(await m.close(), { ok: true });
	assert.equal(m.status().running, 0);
	assert.equal(m.status().closed, true);
	assert.equal(code(await exec({ cmd: "true" })), "manager-closed");
	assert.equal(code(await m.writeStdin({ session_id: "pct-shell-x" }, { cwd: "/tmp" })), "manager-closed");
});

test("unread terminal handles: more than 32 prunes the oldest; expiry after the TTL; queued observers get stale-session", async () => {
	const { m, exec, write } = shellManager();
	const ids = [];
	for (let i = 0; i < 33; i++) {
		ids.push(ok(await exec({ cmd: "sleep 0.05", yield_time_ms: 0 })).sessionId);
		await until("fewer than 16 sessions running", () => m.status().running < 16);
	}
	await until("no session running", () => m.status().running === 0);
	assert.equal(m.status().unreadTerminal, 33);
	let stale = 0;
	for (const id of ids) {
		const r = await write({ session_id: id, yield_time_ms: 0 });
		if (r.ok) assert.equal(r.details.status, "completed");
		else (assert.equal(r.code, "stale-session"), stale++);
	}
	assert.equal(stale, 1);

	const t = shellManager({ terminalTtlMs: 200 });
	const id = ok(await t.exec({ cmd: "sleep 0.05", yield_time_ms: 0 })).sessionId;
	await until("the command settled", () => t.m.status().running === 0);
	await sleep(400); // not synchronisation: the 200 ms time-to-live has to pass before the result is forgotten
	assert.equal(code(await t.write({ session_id: id })), "stale-session");

	const q = ok(await exec({ cmd: "sleep 0.4; echo done", yield_time_ms: 0 })).sessionId;
	const first = write({ session_id: q, yield_time_ms: 5000 }, {}, "first-reader");
	await until("the first call is waiting on the session", () => m.peek("first-reader") != null);
	const second = write({ session_id: q, yield_time_ms: 5000 });
	assert.equal(ok(await first).stdout, "done\n");
	assert.equal(code(await second), "stale-session");
});

test("a grandchild left running after the leader exits stays managed, is killed by stop, leaves no orphan or zombie", async () => {
	const { m, exec, write } = shellManager();
	const d0 = ok(await exec({ cmd: "echo $$; sleep 60 & echo $!", yield_time_ms: 500 }));
	const { stdout, last: d } = await pollUntil(write, d0.sessionId, d0, (out) => out.split("\n").length >= 3);
	const [pgid, child] = stdout.trim().split("\n").map(Number);
	await until("leader gone", () => procState(pgid) === null || procState(pgid) === "Z", { ms: 60000 });
	assert.equal(d.status, "running", "the leader exited but its child keeps the group and pipes");
	assert.deepEqual(liveGroupMembers(pgid), [child]);
	const p = ok(await write({ session_id: d.sessionId, yield_time_ms: 200 }));
	assert.equal(p.status, "running");
	const s = ok(await write({ session_id: d.sessionId, terminate: true }));
	assert.equal(s.status, "terminated");
	assert.equal(s.unknownOutcome, undefined);
	assert.deepEqual(liveGroupMembers(pgid), []);
	await until("reaped: not left as a zombie", () => procState(child) === null);
	assert.equal(m.status().running, 0);
});

test("stop: SIGTERM ignored escalates to SIGKILL after the 5 s grace period", async () => {
	const { m, exec, write } = shellManager();
	const e = ok(await exec({ cmd: "trap '' TERM; echo ready; sleep 60 & wait", yield_time_ms: 300 }));
	assert.equal((await pollUntil(write, e.sessionId, e, (out) => out.length >= "ready\n".length)).stdout, "ready\n");
	const t = ok(await write({ session_id: e.sessionId, terminate: true }));
	assert.equal(t.status, "terminated");
	assert.equal(t.signal, "SIGKILL");
	assert.equal(m.status().running, 0);
});

test("a second stop sends SIGKILL at once (with a 60 s grace period this test would time out otherwise)", { timeout: 20000 }, async () => {
	const { m, exec, write } = shellManager({ stopGraceMs: 60000, stopConfirmMs: 5000 });
	const d = ok(await exec({ cmd: "trap '' TERM; echo ready; sleep 60 & wait", yield_time_ms: 300 }));
	assert.equal((await pollUntil(write, d.sessionId, d, (out) => out.length >= "ready\n".length)).stdout, "ready\n");
	// The two stops are alike: whichever the manager takes first starts the stop, the other finds it under way
	// (no wait between them is needed to order them).
	const first = write({ session_id: d.sessionId, terminate: true });
	const second = write({ session_id: d.sessionId, terminate: true });
	const results = await Promise.all([first, second]);
	// exactly one call receives the terminal result; the other observer gets stale-session
	const terminal = results.filter((r) => r.ok);
	assert.equal(terminal.length, 1, JSON.stringify(results.map((r) => r.code)));
	assert.equal(terminal[0].details.status, "terminated");
	assert.equal(terminal[0].details.signal, "SIGKILL");
	assert.deepEqual(results.filter((r) => !r.ok).map((r) => r.code), ["stale-session"]);
	assert.equal(m.status().running, 0);
});

test("an unconfirmed stop reports unknownOutcome, keeps the handle; cleanup and close fail cleanup-incomplete", async () => {
	const { m, exec, write } = shellManager(FAST);
	// own session and no PCT_JOB marker: not findable, but it holds the output pipes, so it is named
	const d = ok(await exec({ cmd: "setsid env -u PCT_JOB sleep 60 & echo $!", yield_time_ms: 300 }));
	const escaped = Number((await pollUntil(write, d.sessionId, d, (out) => out.endsWith("\n"))).stdout.trim());
	const s = await write({ session_id: d.sessionId, terminate: true });
	assert.equal(s.details.status, "terminated");
	assert.equal(s.details.unknownOutcome, true);
	assert.deepEqual(s.details.survivorPids, [escaped]);
	assert.equal(s.details.exitCode, null);
	assert.match(s.text, new RegExp(`exit_code: unknown\\nThe stop was not confirmed: still alive: pid ${escaped} `));
	assert.equal(m.status().stopUnconfirmed, 1);
	assert.equal(m.status().cleanupPending, true);
	assert.equal(code(await m.cleanup()), "cleanup-incomplete");
	// the handle is kept: once the escaped process is gone, a retry confirms
	process.kill(escaped, "SIGKILL");
	const again = ok(await write({ session_id: d.sessionId, terminate: true }));
	assert.equal(again.status, "terminated");
	assert.equal(again.unknownOutcome, undefined);
	assert.equal(m.status().cleanupPending, true, "until a cleanup succeeds");
	assert.deepEqual(await m.cleanup(), { ok: true });
	assert.equal(m.status().cleanupPending, false);
	// close with an escaped holder: cleanup-incomplete
	const e = ok(await exec({ cmd: "setsid env -u PCT_JOB sleep 60 & echo $!", yield_time_ms: 300 }));
	const escaped2 = Number((await pollUntil(write, e.sessionId, e, (out) => out.endsWith("\n"))).stdout.trim());
	assert.equal(code(await m.close()), "cleanup-incomplete");
	process.kill(escaped2, "SIGKILL");
	await until("the second escaped process is gone", () => procState(escaped2) === null);
});

test("a descendant that left the group with its pipes closed is found by its marker and killed by terminate", async () => {
	const { m, exec, write } = shellManager(FAST);
	const d = ok(await exec({ cmd: "setsid sleep 60 >/dev/null 2>&1 </dev/null & echo $!; sleep 60", yield_time_ms: 300 }));
	const escaped = Number((await pollUntil(write, d.sessionId, d, (out) => out.endsWith("\n"))).stdout.trim());
	const marker = new RegExp(`^PCT_JOB=[0-9a-f]{32}:[0-9a-f]{12}:${d.sessionId}$`);
	assert.equal(readFileSync(`/proc/${escaped}/environ`, "latin1").split("\0").filter((kv) => marker.test(kv)).length, 1);
	const s = ok(await write({ session_id: d.sessionId, terminate: true }));
	assert.equal(s.status, "terminated");
	assert.equal(s.unknownOutcome, undefined, "confirmed: nothing of the job is left");
	await until("the escaped process was killed", () => [null, "Z"].includes(procState(escaped)));
	await m.close();
});

test("session shutdown (close) also stops what completed commands left running outside their group", async () => {
	const { m, exec } = shellManager(FAST);
	const d = ok(await exec({ cmd: "setsid sleep 60 >/dev/null 2>&1 </dev/null & echo $!" }));
	assert.equal(d.status, "completed");
	const escaped = Number(d.stdout.trim());
	assert.equal(procState(escaped) !== null && procState(escaped) !== "Z", true);
	assert.deepEqual(await m.close(), { ok: true });
	await until("killed by close", () => [null, "Z"].includes(procState(escaped)));
});

test("terminate of a command that completed on its own (result unread) stops what it left outside its group", async () => {
	const { m, exec, write } = shellManager(FAST);
	const d = ok(await exec({ cmd: "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!; sleep 0.2", yield_time_ms: 0 }));
	assert.equal(d.status, "running");
	await until("settled, unread", () => m.status().running === 0 && m.status().unreadTerminal === 1);
	const s = ok(await write({ session_id: d.sessionId, terminate: true }));
	const escaped = Number((d.stdout + s.stdout).trim());
	assert.equal(s.status, "completed", "the command's own outcome");
	assert.equal(s.exitCode, 0);
	assert.equal(s.unknownOutcome, undefined, "confirmed: nothing of the job is left");
	assert.equal([null, "Z"].includes(procState(escaped)), true, "stopped by terminate itself, before any close");
	assert.equal(await write({ session_id: d.sessionId }).then(code), "stale-session", "the final result was delivered");
	await m.close();
});

test("recovery: a missing temp directory says that nothing beyond the preview was saved", async () => {
	const { m, exec } = shellManager();
	const saved = process.env.TMPDIR;
	process.env.TMPDIR = join(saved, "missing", "dir");
	try {
		const r = await exec({ cmd: "seq 1 20000", maxOutputBytes: 1024 });
		const d = ok(r);
		assert.equal(d.truncated, true);
		assert.equal(d.recovery.state, "unavailable");
		assert.equal(d.recovery.reason, "io-error");
		assert.match(d.recovery.error, /No such file or directory/);
		assert.doesNotMatch(r.text, /full output/);
		assert.match(r.text, /recovery: unavailable, no file \(\d+ bytes captured\) \(reason: io-error: creating a file in .*missing\/dir: No such file/);
		assert.match(r.text, /No recovery file could be created: nothing beyond the preview shown here is saved\./);
	} finally {
		process.env.TMPDIR = saved;
	}
	assert.deepEqual(m.recoveryFiles(), []);
});

test("cancellation: a direct call's job is stopped; a nested call's is not; a pre-cancelled call runs nothing", async () => {
	const { m, exec, write } = shellManager(FAST);
	const p = exec({ cmd: "echo $$; sleep 60", yield_time_ms: 60000 }, {}, "call-1");
	await until("call-1 is waiting on its job", () => m.peek("call-1") != null);
	m.cancel("call-1");
	const r = await p;
	assert.equal(code(r), "aborted");
	assert.match(r.message, /is being stopped/);
	await until("no session running", () => m.status().running === 0);

	const q = exec({ cmd: "sleep 60", yield_time_ms: 60000 }, { stopOnCancel: false }, "call-2");
	await until("call-2 is waiting on its job", () => m.peek("call-2") != null);
	m.cancel("call-2");
	const nested = await q;
	assert.equal(code(nested), "aborted");
	const kept = /Session (\S+) keeps running/.exec(nested.message)?.[1];
	assert.ok(kept, nested.message);
	// waiting on the session itself for 300 ms: a stop would end it within that window
	assert.equal(ok(await write({ session_id: kept, yield_time_ms: 300 })).status, "running", "nested cancellation leaves the shell running");
	assert.equal(m.status().running, 1);

	const id = ok(await exec({ cmd: "sleep 60", yield_time_ms: 0 })).sessionId;
	const w = write({ session_id: id, yield_time_ms: 60000 }, {}, "call-3");
	await until("call-3 is waiting on the session", () => m.peek("call-3") != null);
	m.cancel("call-3");
	assert.equal(code(await w), "aborted");
	await until("write_stdin cancellation stopped its job", () => m.status().running === 1);

	m.cancel("call-4");
	assert.equal(code(await exec({ cmd: "true" }, {}, "call-4")), "aborted", "cancel before the call registered");
	assert.deepEqual(await m.close(), { ok: true });
});

test("a yes flood stays in bounded memory while every byte reaches the recovery file", async () => {
	const { m, exec, write } = shellManager();
	const total = 300_000_000;
	let peak = process.memoryUsage().rss;
	const before = peak;
	const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
	let d = ok(await exec({ cmd: `yes | head -c ${total}`, yield_time_ms: 60000 }));
	while (d.status === "running") d = ok(await write({ session_id: d.sessionId, yield_time_ms: 60000, maxOutputBytes: 1024 }));
	clearInterval(timer);
	assert.equal(d.status, "completed");
	assert.equal(d.recovery.capturedBytes, total);
	assert.equal(d.recovery.bytes, total);
	assert.equal(statSync(d.recovery.path).size, total);
	assert.deepEqual(m.recoveryFiles(), [d.recovery.path], "one file per job, never replaced");
	const grown = (peak - before) / 1048576;
	assert.ok(grown < 64, `peak RSS grew by ${grown.toFixed(1)} MiB for ${total / 1e6} MB of output`);
	await m.close();
	assert.equal(m.deleteRecoveryFiles(), 1);
});
