// Shell Sessions through the real Pi (both versions), json mode with a scripted faux model.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { PI_VERSIONS, RpcPi, runJson, sandbox, writeToolConfig as writeConfig, writeScript, toolText } from "../helpers/pi.mjs";
import { until } from "../helpers/until.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).

const ON = { shellSessions: { enabled: true } };

/** Recovery files the toolkit left in a sandbox's TMPDIR. */
const leftovers = (box) => readdirSync(box.tmp).filter((f) => f.startsWith("pi-codex-toolkit-shell-"));

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] a finite command completes in one exec_command call`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "echo hello from $0; echo oops >&2; exit 4" } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds.length, 1, r.stderr);
		const end = r.toolEnds[0];
		assert.equal(end.isError, false);
		const text = toolText(end);
		assert.match(text, /^session_id pct-shell-[0-9a-f]{12}: completed\nexit_code: 4\n/);
		assert.match(text, /\[stdout\]\nhello from \/bin\/bash\n\[stderr\]\noops\n$/);
		const d = end.result.details;
		assert.equal(d.status, "completed");
		assert.equal(d.exitCode, 4);
		assert.equal(d.exit_code, 4);
		assert.equal(d.sessionId, d.session_id);
		assert.equal(d.recovery, undefined);
		assert.deepEqual(leftovers(box), []);
	});

	test(`[pi ${version.name}] a yielded command polled to completion; recovery file removed at shutdown`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { command: "echo started; sleep 1; echo finished", yield_time_ms: 200 } }] },
			(ctx) => ({ tools: [{ name: "write_stdin", args: { session_id: ctx.lastToolResults[0].details.sessionId, yieldTimeMs: 10000 } }] }),
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds.length, 2, r.stderr);
		const [first, second] = r.toolEnds;
		assert.match(toolText(first), /: running\n/);
		assert.match(toolText(first), /write_stdin/);
		assert.equal(first.result.details.stdout, "started\n");
		const rec = first.result.details.recovery;
		assert.equal(rec.state, "capturing");
		assert.ok(rec.path.startsWith(box.tmp), rec.path);
		assert.match(toolText(second), /: completed\nexit_code: 0\n/);
		assert.equal(second.result.details.stdout, "finished\n");
		assert.equal(second.result.details.recovery.state, "complete");
		// the file survived terminal delivery, and session_shutdown deleted it (only ours)
		assert.equal(existsSync(rec.path), false);
		assert.deepEqual(leftovers(box), []);
	});

	test(`[pi ${version.name}] stdin round trip, then terminate`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "while read line; do echo \\"got $line\\"; done", yield_time_ms: 100 } }] },
			(ctx) => ({ tools: [{ name: "write_stdin", args: { session_id: ctx.lastToolResults[0].details.session_id, chars: "ping\\n", yield_time_ms: 500 } }] }),
			(ctx) => ({ tools: [{ name: "write_stdin", args: { session_id: ctx.lastToolResults[0].details.session_id, terminate: true } }] }),
			(ctx) => ({ tools: [{ name: "write_stdin", args: { session_id: 12 } }] }),
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds.length, 4, r.stderr);
		const [start, echo, stop, numeric] = r.toolEnds;
		assert.equal(start.result.details.status, "running");
		assert.equal(echo.result.details.stdout, "got ping\n");
		assert.equal(echo.result.details.inputDelivery, "written");
		assert.match(toolText(stop), /: terminated\nexit_code: signal SIGTERM\n/);
		assert.equal(numeric.isError, true);
		assert.match(toolText(numeric), /^invalid-session: /);
	});

	test(`[pi ${version.name}] refused fields by name, and the gate when Shell Sessions is off`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "true", tty: true } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds[0].isError, true);
		assert.match(toolText(r.toolEnds[0]), /^invalid-command: exec_command does not support the field "tty"/);

		const off = sandbox();
		const script2 = writeScript(off, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "true" } }] },
			{ text: "done" },
		];`);
		const r2 = await runJson({ version, box: off, script: script2 });
		// inactive tools are not offered; a call anyway is refused (by Pi or by the gate) and runs nothing
		assert.equal(r2.toolEnds.length, 1, r2.stderr);
		assert.equal(r2.toolEnds[0].isError, true);
		assert.match(toolText(r2.toolEnds[0]), /exec_command not found|Shell Sessions are not enabled/);
	});
}

/** Live (non-zombie) state of a pid from the process table. */
const alive = (pid) => {
	try {
		const s = readFileSync(`/proc/${pid}/stat`, "utf8");
		return !/^[ZX]/.test(s.slice(s.lastIndexOf(")") + 2));
	} catch {
		return false;
	}
};

// Steps decided by the latest user prompt, so the script works whether or not a new session reloads extensions.
const LIFECYCLE_SCRIPT = `
const step = (ctx) => {
	const last = ctx.messages.at(-1);
	if (last?.role === "toolResult") return { text: "started" };
	const text = JSON.stringify(last?.content ?? "");
	if (text.includes("escape")) return { tools: [{ name: "exec_command", args: { cmd: "setsid env -u PCT_JOB sleep 120 & echo $!", yield_time_ms: 300 } }] };
	return { tools: [{ name: "exec_command", args: { cmd: "sleep 120 & echo $!; wait", yield_time_ms: 300 } }] };
};
export default Array(8).fill(step);`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] new session: jobs are stopped first; an unconfirmable stop vetoes the switch`, { timeout: 120000 }, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const pi = new RpcPi({ version, box, script: writeScript(box, LIFECYCLE_SCRIPT) });
		let escaped;
		try {
			const r1 = await pi.prompt("start a job");
			const end1 = r1.events.find((e) => e.type === "tool_execution_end");
			assert.equal(end1.result.details.status, "running", JSON.stringify(end1.result));
			const child = Number(end1.result.details.stdout.trim());
			assert.equal(alive(child), true);
			const sw = await pi.command("new_session");
			assert.equal(sw.success, true, JSON.stringify(sw));
			assert.equal(sw.data?.cancelled, false, "clean-up succeeded, so the switch goes ahead");
			await until("the job's background child was stopped before the switch", () => !alive(child), { every: 50 });

			const r2 = await pi.prompt("escape the group");
			// without its PCT_JOB marker and holding the pipes: named, not signalled, so the stop stays unconfirmed
			const end2 = r2.events.find((e) => e.type === "tool_execution_end");
			escaped = Number(end2.result.details.stdout.trim());
			assert.equal(alive(escaped), true);
			const veto = await pi.command("new_session", {}, 60000);
			assert.equal(veto.data?.cancelled, true, "cleanup-incomplete vetoes the switch");
		} finally {
			if (escaped && alive(escaped)) process.kill(escaped, "SIGKILL");
			await pi.close();
		}
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] aborting the turn cancels a waiting exec_command and stops its job`, { timeout: 120000 }, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const pidFile = `${box.cwd}/leader.pid`;
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "echo $$ > ${pidFile}; exec sleep 120", yield_time_ms: 60000 } }] },
			{ text: "after abort" },
			{ text: "after abort" },
		];`);
		const pi = new RpcPi({ version, box, script });
		try {
			const ended = pi.waitFor((r) => r.type === "tool_execution_end", 60000);
			await pi.command("prompt", { message: "run it" });
			await until("the job wrote its pid file", () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", { every: 50 });
			const leader = Number(readFileSync(pidFile, "utf8").trim());
			assert.equal(alive(leader), true);
			await pi.command("abort");
			const end = await ended;
			assert.equal(end.isError, true);
			assert.match(toolText(end), /aborted/);
			await until("the cancelled call's job was stopped", () => !alive(leader), { every: 50 });
		} finally {
			await pi.close();
		}
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] /pct status: Shell Sessions configured on and effective active`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const pi = new RpcPi({ version, box });
		try {
			const { notifications } = await pi.prompt("/pct status all");
			assert.match(notifications.join("\n"), /^Shell Sessions\n  configured: on\n  effective: active$/m);
		} finally {
			await pi.close();
		}
	});
}
