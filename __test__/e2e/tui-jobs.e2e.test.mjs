// Running work in Pi's real TUI (both versions, tmux), with the scripted faux model and the shortest thresholds the
// config allows (codeMode.longRunningSeconds and codeMode.maxCellSeconds at 10): a background task that spins is
// called out in the footer with its elapsed time and CPU; `/pct jobs` shows its last output lines (both streams)
// and `o` opens its full output in the widget; a code cell in a `while (true)` loop is stopped at the limit and the
// model is told `cell-timeout`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PI_VERSIONS, sandbox, writeConfig, writeScript } from "../helpers/pi.mjs";
import { TmuxPi, keep, plain, submitWhenReady } from "./helpers/tmux.mjs";
import { requireTools } from "../helpers/prereq.mjs";

const TASK = "for i in 1 2 3 4 5 6 7 8; do echo out-line-$i; done; echo warn-line >&2; while :; do :; done";

const SCRIPT = `export default [
	{ tools: [{ name: "Bash", args: { command: ${JSON.stringify(TASK)}, runInBackground: true } }] },
	{ text: "task started" },
	{ tools: [{ name: "exec", args: { code: "print('spinning'); while (true) {}", yield_time_ms: 1000 } }] },
	(ctx) => ({ tools: [{ name: "wait", args: { cell_id: ctx.lastToolResults[0].details.cellId, yield_time_ms: 30000 } }] }),
	{ text: "cell over" },
];`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] running work: the footer calls out a spinning task with its CPU, /pct jobs shows its last lines and full output, a runaway cell is stopped`, { timeout: 600_000 }, async () => {
		requireTools([["tmux", ["-V"]]], "apt-get install -y tmux");
		const box = sandbox("pct-tui-jobs-");
		writeConfig(box, {
			hostTools: { enabled: true, permissionMode: "auto" },
			codeMode: { enabled: true, longRunningSeconds: 10, maxCellSeconds: 10 },
		});
		const pi = new TmuxPi(version, box, writeScript(box, SCRIPT));
		const tag = `${version.name.replace(/\./g, "")}-running`;
		try {
			await pi.waitFor(/\[Extensions\][\s\S]*faux-1\s*$/m, "Pi's extension list", 240_000);
			await submitWhenReady(pi, "start", /task started/);

			// 1. Past 10 s the footer names the task, its elapsed time and its CPU (the loop keeps a core busy).
			const footer = await pi.waitFor(/pct: 1 task · bg-\S+ running \d+s at \d+% CPU/, "the long-running callout", 90_000);
			keep(`${tag}-footer`, footer);
			const [, id, cpu] = /pct: 1 task · (bg-\S+) running \d+s at (\d+)% CPU/.exec(plain(footer));
			assert.ok(Number(cpu) > 0, `a spinning task uses CPU: ${cpu}%`);

			// 2. /pct jobs: the row, then the last three output lines (stdout's end, then stderr's, marked).
			pi.keys("/pct jobs");
			await pi.waitFor(/\/pct jobs/, "the command typed in the editor", 30_000);
			pi.keys("Enter");
			const widget = await pi
				.waitFor(/Running: 1 task[\s\S]*> task bg-/, "the jobs widget", 5_000)
				.catch(() => (pi.keys("Enter"), pi.waitFor(/Running: 1 task[\s\S]*> task bg-/, "the jobs widget", 60_000)));
			const lines = await pi.waitFor(/> task bg-\S+[^\n]*\n\s+out-line-7\n\s+out-line-8\n\s+stderr: warn-line\n/, "the task's last three lines", 10_000).catch(() => widget);
			keep(`${tag}-widget`, lines);
			assert.match(plain(lines), /> task bg-\S+[^\n]*\n\s+out-line-7\n\s+out-line-8\n\s+stderr: warn-line\n/, "three output lines under the row");
			assert.match(plain(lines), /o output/, "the keys line names o");

			// 3. o: the task's full output in the widget, from its first line, with where the view is.
			pi.keys("o");
			const full = await pi.waitFor(new RegExp(`task ${id}: running[\\s\\S]*out-line-1\\n[\\s\\S]*out-line-8[\\s\\S]*lines \\d+-\\d+ of \\d+`), "the full output view", 30_000);
			keep(`${tag}-output`, full);
			assert.match(plain(full), /warn-line/, "stderr is in the full output too");
			pi.keys("o");
			await pi.waitFor(/Running: 1 task[\s\S]*> task bg-/, "back to the list", 30_000);

			// Stop it from the widget; the stop is confirmed and the footer clears.
			pi.keys("Enter");
			await pi.waitFor(new RegExp(`Stopped task ${id}\\.`), "the stop confirmed", 60_000);
			pi.keys("Escape");
			// the next prompt is typed into the editor, so the widget (its keys line ends "esc close") must be gone
			await pi.waitFor(/^(?![\s\S]*esc close)/, "the jobs widget closed", 30_000);

			// 4. A cell in a busy loop: stopped at codeMode.maxCellSeconds, the model reads cell-timeout.
			await submitWhenReady(pi, "spin", /cell over/, 180_000);
			const timedOut = await pi.waitFor(/cell-timeout[\s\S]*cell over/, "the cell-timeout result", 30_000);
			keep(`${tag}-cell-timeout`, timedOut);
			assert.match(plain(timedOut), /maxCellSeconds/, "the result says which limit stopped it");
		} finally {
			pi.close();
		}
	});
}
