// Session lifecycle in the real Pi (§10): a model change keeps running shell work even when the new model's rule
// does not admit Shell; a config change that drops Shell for every model cleans up Shell's jobs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, RpcPi, sandbox, toolText, writeToolConfig as writeConfig, writeScript } from "../helpers/pi.mjs";
import { until } from "../helpers/until.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).

/** Pids whose command line contains `marker`. */
function pidsWith(marker) {
	const out = [];
	for (const d of readdirSync("/proc")) {
		if (!/^\d+$/.test(d)) continue;
		try {
			const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").replace(/\0/g, " ");
			if (cmd.includes(marker) && !cmd.includes("node")) out.push(Number(d));
		} catch {}
	}
	return out;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] the start-up sweep keeps the scratch of a session in Pi's list and removes one of a session Pi no longer has`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true } });
		// A saved session Pi lists (its header is the file's first entry; the messages after it are never read for
		// the sweep: src/pi/sessions.ts) and one whose file is gone.
		const live = "0b5e7a1c-live-4c1e-9d2f-000000000001";
		const projects = join(box.agentDir, "sessions", "--work--");
		mkdirSync(projects, { recursive: true });
		const header = JSON.stringify({ type: "session", version: 3, id: live, timestamp: "2026-12-07T00:00:00.000Z", cwd: box.cwd });
		const message = JSON.stringify({ type: "message", id: "m1", parentId: null, timestamp: "2026-12-07T00:00:01.000Z", message: { role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 } });
		writeFileSync(join(projects, `2026-12-07T00-00-00-000Z_${live}.jsonl`), `${header}\n${message}\n`);
		const scratch = join(box.agentDir, "pi-codex-toolkit", "scratch");
		for (const id of [live, "0b5e7a1c-gone-4c1e-9d2f-000000000002"]) {
			mkdirSync(join(scratch, id), { recursive: true });
			writeFileSync(join(scratch, id, "note.md"), "draft\n");
		}
		const pi = new RpcPi({ version, box });
		try {
			// The sweep runs beside the session start: wait for its one visible effect, bounded.
			await until(() => `the gone session's scratch is removed; stderr: ${pi.stderr.slice(-2000)}`, () => !existsSync(join(scratch, "0b5e7a1c-gone-4c1e-9d2f-000000000002")));
			assert.equal(readFileSync(join(scratch, live, "note.md"), "utf8"), "draft\n");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] model change keeps a running job; a config that drops Shell stops it`, async () => {
		const marker = `${3000 + Math.floor(Math.random() * 900)}.${process.pid}`;
		const box = sandbox();
		const rule = (shell) => ({ id: "s", match: "faux-1", patch: false, shell, code: false });
		writeConfig(box, { execution: { version: 1, rules: [rule(true)] } });
		// The job waits for a line, answers it, then sleeps: that it still answers after the model changed (and
		// changed back) proves the change kept it running, with no window to wait out.
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "read x; echo got-$x; exec sleep ${marker}", yield_time_ms: 100 } }] },
			{ text: "started" },
			(ctx) => {
				const started = ctx.messages.find((m) => m.role === "toolResult" && m.toolName === "exec_command");
				return { tools: [{ name: "write_stdin", args: { session_id: started.details.session_id, chars: "alive\\n", yield_time_ms: 5000 } }] };
			},
			{ text: "answered" },
		];`);
		const pi = new RpcPi({ version, box, script });
		try {
			const first = await pi.prompt("start a job");
			const started = first.events.find((e) => e.type === "tool_execution_end");
			assert.equal(started?.result?.details?.status, "running", JSON.stringify(started?.result));
			const r = await pi.command("set_model", { provider: "faux", modelId: "faux-2" });
			assert.equal(r.success, true);
			const status = (await pi.prompt("/pct status all")).notifications.join("\n");
			assert.match(status, /^Shell Sessions\n  configured: off\n  effective: off/m, "faux-2 matches no rule");
			assert.equal((await pi.command("set_model", { provider: "faux", modelId: "faux-1" })).success, true);
			const answer = (await pi.prompt("answer the job")).events.find((e) => e.type === "tool_execution_end");
			assert.equal(answer?.toolName, "write_stdin");
			assert.match(toolText(answer), /got-alive/, "a model change keeps running work");
			await until("the job runs on", () => pidsWith(`sleep ${marker}`).length === 1, { every: 50 });

			writeConfig(box, { execution: { version: 1, rules: [rule(false)] } });
			const reload = await pi.prompt("/pct reload");
			assert.deepEqual(reload.notifications, ["Pi Codex Toolkit configuration reloaded."]);
			await until("disabling Shell stopped its job", () => pidsWith(`sleep ${marker}`).length === 0, { every: 50 });
		} finally {
			await pi.close();
		}
	});

	// A descendant that left the process group (own session, pipes closed) does not survive Pi's
	// shutdown: it carries the job's PCT_JOB marker and close() stops it.
	test(`[pi ${version.name}] Pi's shutdown stops a setsid descendant of a completed command`, async () => {
		const marker = `${3000 + Math.floor(Math.random() * 900)}.${process.pid}1`;
		const box = sandbox();
		writeConfig(box, { shellSessions: { enabled: true } });
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "setsid sleep ${marker} >/dev/null 2>&1 </dev/null &" } }] },
			{ text: "started" },
		];`);
		const pi = new RpcPi({ version, box, script });
		try {
			await pi.prompt("start a daemon");
			await until("the escaped process runs", () => pidsWith(`sleep ${marker}`).length === 1, { every: 50 });
		} finally {
			await pi.close();
		}
		await until("stopped when Pi shut down", () => pidsWith(`sleep ${marker}`).length === 0, { every: 50 });
	});

	// SIGKILL skips every exit hook; the per-process watchdog still kills the jobs (also the one
	// that left its group) and removes the recovery file.
	test(`[pi ${version.name}] SIGKILL of Pi: running jobs are killed and recovery files removed`, async () => {
		const marker = `${3000 + Math.floor(Math.random() * 900)}.${process.pid}2`;
		const box = sandbox();
		writeConfig(box, { shellSessions: { enabled: true } });
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "echo up; setsid sleep ${marker} >/dev/null 2>&1 </dev/null & sleep ${marker}", yield_time_ms: 300 } }] },
			{ text: "started" },
		];`);
		const pi = new RpcPi({ version, box, script });
		let file;
		try {
			const r = await pi.prompt("start a job");
			const end = r.events.find((e) => e.type === "tool_execution_end");
			file = end?.result?.details?.recovery?.path;
			assert.ok(file && existsSync(file), `a yield with output has a recovery file: ${JSON.stringify(end?.result?.details)}`);
			await until("the shell and both sleeps run", () => pidsWith(`sleep ${marker}`).length === 3, { every: 50 });
			pi.child.kill("SIGKILL");
			await pi.exited;
			await until(() => `left: ${pidsWith(`sleep ${marker}`)}, file ${existsSync(file)}`, () => pidsWith(`sleep ${marker}`).length === 0 && !existsSync(file), { every: 50 });
		} finally {
			await pi.close();
		}
	});
}
