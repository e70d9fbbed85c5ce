// Shell Sessions through the real Pi (both versions), json mode with a scripted faux model.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { PI_VERSIONS, runJson, sandbox, writeConfig, writeScript, toolText } from "../helpers/pi.mjs";

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
