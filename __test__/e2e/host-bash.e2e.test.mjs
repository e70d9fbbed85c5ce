// Host Bash and background tasks through the real Pi (both versions), json mode with a scripted faux model
// (docs/host.md "Bash"): success, failure (exit code and both streams), timeout (the tree killed), a background task
// listed, waited and stopped, and a headless Bash in `ask` mode denied. Pi's own bash is hidden while Bash is active.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PI_VERSIONS, runJson, sandbox, writeConfig, writeScript, toolText } from "../helpers/pi.mjs";

const AUTO = { hostTools: { enabled: true, permissionMode: "auto" } };

/** Whether pid is gone (no process, or a zombie). */
function dead(pid) {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
	} catch {
		return true;
	}
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] Bash: success, failure with exit code and both streams, timeout`, async () => {
		const box = sandbox();
		writeConfig(box, AUTO);
		const pidfile = join(box.base, "grandchild");
		const script = writeScript(box, `export default [
			{ tools: [{ name: "Bash", args: { command: "pwd; echo to-err >&2" } }] },
			{ tools: [{ name: "Bash", args: { command: "echo partial; echo broken >&2; exit 3" } }] },
			{ tools: [{ name: "Bash", args: { command: "sh -c 'trap \\"\\" TERM; echo $$ > ${pidfile}; exec sleep 1000' & wait", timeout: 1 } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds.length, 3, r.stderr);
		const [ok, failed, timedOut] = r.toolEnds;
		assert.equal(ok.isError, false, toolText(ok));
		assert.equal(toolText(ok), `exit_code: 0\n[stdout]\n${box.cwd}\n[stderr]\nto-err\n`);

		assert.equal(failed.isError, true);
		assert.match(toolText(failed), /^TOOL_FAILED: The command exited with code 3\./);
		assert.match(toolText(failed), /exit_code: 3\n\[stdout\]\npartial\n\[stderr\]\nbroken$/);

		assert.equal(timedOut.isError, true);
		assert.match(toolText(timedOut), /^TOOL_TIMEOUT: The command ran past its timeout of 1000 ms \(timeoutMs 1000\)/);
		const pid = Number(readFileSync(pidfile, "utf8"));
		for (let i = 0; i < 300 && !dead(pid); i++) await new Promise((res) => setTimeout(res, 10));
		assert.ok(dead(pid), `the grandchild ${pid} that ignores SIGTERM survived the timeout`);
	});

	test(`[pi ${version.name}] a background task listed, waited, stopped; one left running ends with the session`, async () => {
		const box = sandbox();
		writeConfig(box, AUTO);
		const leftPid = join(box.base, "left-running");
		const script = writeScript(box, `export default [
			{ tools: [{ name: "Bash", args: { command: "echo begun; exec sleep 1000", runInBackground: true, description: "sleeper" } }] },
			{ tools: [{ name: "TaskList", args: {} }] },
			(ctx) => ({ tools: [{ name: "TaskWait", args: { backgroundTaskId: ctx.lastToolResults[0].details.tasks[0].backgroundTaskId } }] }),
			(ctx) => ({ tools: [{ name: "TaskStop", args: { backgroundTaskId: ctx.lastToolResults[0].details.task.backgroundTaskId } }] }),
			{ tools: [{ name: "TaskWait", args: { backgroundTaskId: "bg-000000000000" } }] },
			{ tools: [{ name: "Bash", args: { command: "echo $$ > ${leftPid}; exec sleep 1000", runInBackground: true } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds.length, 6, r.stderr);
		const [started, list, wait, stop, unknown, left] = r.toolEnds;
		assert.equal(left.isError, false, toolText(left));
		// Pi has exited: the session's shutdown (or, failing that, the exit watchdog) ended the task left running
		const pid = Number(readFileSync(leftPid, "utf8"));
		for (let i = 0; i < 300 && !dead(pid); i++) await new Promise((res) => setTimeout(res, 10));
		assert.ok(dead(pid), `the background task ${pid} outlived its Pi session`);
		const id = started.result.details.backgroundTaskId;
		assert.match(id, /^bg-[0-9a-f]{12}$/);
		assert.match(toolText(started), new RegExp(`backgroundTaskId ${id}`));
		assert.match(toolText(list), new RegExp(`backgroundTaskId ${id}: running.*sleeper`));
		assert.equal(wait.result.details.task.status, "running");
		assert.match(toolText(wait), /\[stdout\]\nbegun\n/);
		assert.equal(stop.result.details.task.stopRequested, true);
		assert.ok(["stopped", "running"].includes(stop.result.details.task.status));
		assert.equal(unknown.isError, true);
		assert.match(toolText(unknown), /^NOT_FOUND: /);
	});

	test(`[pi ${version.name}] headless Bash in ask mode is denied and runs nothing`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true, permissionMode: "ask" } });
		const marker = join(box.base, "ran");
		const script = writeScript(box, `export default [
			{ tools: [{ name: "Bash", args: { command: "touch ${marker}" } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.toolEnds.length, 1, r.stderr);
		assert.equal(r.toolEnds[0].isError, true);
		assert.match(toolText(r.toolEnds[0]), /TOOL_DENIED/);
		assert.match(toolText(r.toolEnds[0]), /auto/);
		assert.throws(() => readFileSync(marker));
	});
}

/** A fake login shell named `bash` (so it is asked with `-l -i -c`): its "profile" puts /pct-login-e2e/bin first and
 * counts its runs in `count`; anything else runs as plain sh. */
function fakeLoginShell(box) {
	const shell = join(box.base, "bin", "bash");
	const count = join(box.base, "login-runs");
	mkdirSync(dirname(shell), { recursive: true });
	writeFileSync(shell, `#!/bin/sh\nif [ "$1 $2 $3" = "-l -i -c" ]; then echo x >> '${count}'; PATH="/pct-login-e2e/bin:$PATH"; export PATH; exec /bin/sh -c "$4"; fi\nexec /bin/sh "$@"\n`);
	chmodSync(shell, 0o755);
	return { shell, count };
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] the login shell's PATH reaches Bash commands; with Bash off no profile runs`, async () => {
		const box = sandbox();
		writeConfig(box, AUTO);
		const { shell, count } = fakeLoginShell(box);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "Bash", args: { command: "printf %s \\"$PATH\\"" } }] },
			{ tools: [{ name: "Bash", args: { command: "printf %s \\"$PATH\\"" } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script, env: { SHELL: shell } });
		assert.equal(r.toolEnds.length, 2, r.stderr);
		for (const end of r.toolEnds) {
			assert.equal(end.isError, false, toolText(end));
			assert.match(toolText(end), /\[stdout\]\n\/pct-login-e2e\/bin:/, "the login PATH comes first");
		}
		assert.equal(readFileSync(count, "utf8"), "x\n", "the profile ran once for the process");

		// The toolkit loaded with the host tools off: its session start runs no login shell.
		const off = sandbox();
		writeConfig(off, { applyPatch: { enabled: true }, permissions: { mode: "auto" } });
		const idle = fakeLoginShell(off);
		const r2 = await runJson({ version, box: off, script: writeScript(off, `export default [{ text: "done" }];`), env: { SHELL: idle.shell } });
		assert.equal(r2.code, 0, r2.stderr);
		assert.equal(existsSync(idle.count), false, "no profile ran with Bash off");
	});
}
