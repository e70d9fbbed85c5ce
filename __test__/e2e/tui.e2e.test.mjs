// The toolkit in Pi's interactive terminal UI, driven through tmux with the scripted faux model, on both Pi versions
// (docs/render.md): Pi lists the extension as pi-codex-toolkit, the permission card shows the command before approval,
// a running Bash and a waiting exec_command stream their output with an elapsed timer, the Edit card and row show the
// diff and its counts, a denied call is drawn in the error colour with a sentence and its code, and /pct status
// starts with its summary line, and a long output line is one row cut with a count (expanded: the last 500 lines).
// The screens are read with
// `tmux capture-pane -p -e` (text with its colours). PCT_TUI_CAPTURE_DIR=<dir> keeps the captured screens there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, sandbox, writeConfig, writeScript } from "../helpers/pi.mjs";
import { requireTools } from "../helpers/prereq.mjs";
import { TmuxPi, colourOf, keep, plain, submitWhenReady } from "./helpers/tmux.mjs";

const SCRIPT = `const tagOf = (r) => (r.details && r.details.tag) || /#([0-9A-F]{4})\\]/.exec(r.text)[1];
export default [
	{ tools: [{ name: "Bash", args: { command: "for i in $(seq 1 40); do echo tick-$i; sleep 0.5; done" } }] },
	{ tools: [{ name: "Read", args: { path: "app.py" } }] },
	(ctx) => ({ tools: [{ name: "Edit", args: { path: "app.py", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 2.=2:\\n+line TWO" } }] }),
	{ tools: [{ name: "Bash", args: { command: "rm -rf build-output" } }] },
	{ tools: [{ name: "exec_command", args: { cmd: "for i in $(seq 1 16); do echo beat-$i; sleep 0.5; done", yield_time_ms: 30000 } }] },
	{ text: "all done" },
];`;

for (const version of PI_VERSIONS) {
	// Pi 0.87.1's interactive start-up (its fd/rg tool check, before it installs the editor's submit handler) did
	// not finish within a minute in the clean-clone CI run on this machine kind, although the same test passes when
	// run alone; until that is understood the TUI is proven on the 1.x line only (docs/render.md).
	test(`[pi ${version.name}] in the TUI: the card shows the command, Bash streams live output, Edit shows its diff, a denial is an error, exec_command streams too; /pct status`, async () => {
		requireTools([["tmux", ["-V"]]], "apt-get install -y tmux");
		const box = sandbox("pct-tui-");
		writeConfig(box, { hostTools: { enabled: true, permissionMode: "ask" }, shellSessions: { enabled: true } });
		writeFileSync(join(box.cwd, "app.py"), "line one\nline two\nline three\n");
		const pi = new TmuxPi(version, box, writeScript(box, SCRIPT));
		const tag = version.name.replace(/\./g, "");
		try {
			// The footer is drawn first, the loaded extensions later. A cold start on a loaded machine is slow.
			const start = await pi.waitFor(/\[Extensions\][\s\S]*faux-1\s*$/m, "Pi's extension list", 240_000);
			// Pi lists the toolkit under its package name (the manifest's entry folder), not `src`.
			assert.match(plain(start), /\[Extensions\]\n\s*faux-model\.ts, pi-codex-toolkit\n/);
			await submitWhenReady(pi, "go", /Allow Bash/);

			// 1. The card names the command before anything runs.
			const card = await pi.waitFor(/Allow Bash to run this command\?\n\s*\$ for i in \$\(seq 1 40\)/, "the Bash card with its command");
			keep(`${tag}-bash-card`, card);
			assert.match(plain(card), /in the workspace \(/);
			assert.doesNotMatch(plain(card), /tick-1/, "nothing ran before the approval");
			pi.keys("Enter"); // Allow once

			// 2. Live output while it runs, with the elapsed timer.
			const live = await pi.waitFor(/tick-3\n[\s\S]*Elapsed \d+\.\ds/, "live output and the timer");
			keep(`${tag}-bash-live`, live);
			assert.doesNotMatch(plain(live), /Took \d/, "still running");
			assert.doesNotMatch(plain(live), /tick-40/);

			// 3. The Edit card shows the diff; the row shows the counts once it landed.
			const editCard = await pi.waitFor(/Allow Edit to change app\.py\? \(\+1 -1\)\n\s*-2 line two\n\s*\+2 line TWO/, "the Edit card with its diff", 120_000);
			keep(`${tag}-edit-card`, editCard);
			assert.match(plain(editCard), /tick-40\n[\s\S]*Took \d/, "the Bash row ended with its last lines and its duration");
			assert.match(plain(editCard), /\.\.\. \(35 earlier lines/, "collapsed: the tail, not the start");
			pi.keys("Enter");

			// 4. A denied call: the sentence and the code, in the error colour.
			await pi.waitFor(/Allow Bash to run this command\?\n\s*\$ rm -rf build-output/, "the second Bash card");
			pi.keys("Down", "Down", "Enter"); // Deny

			// 5. exec_command streams its output while it waits, with the timer, and ends with its tail.
			await pi.waitFor(/Allow exec_command to run a command in the workspace\?\n\s*\$ for i in \$\(seq 1 16\)/, "the exec_command card");
			pi.keys("Enter");
			const execLive = await pi.waitFor(/beat-3\n[\s\S]*Elapsed \d+\.\ds/, "exec_command's live output and timer");
			keep(`${tag}-exec-live`, execLive);
			assert.doesNotMatch(plain(execLive), /beat-16/, "still running");
			assert.doesNotMatch(plain(execLive), /all done/);
			const denied = await pi.waitFor(/Not run: the call was denied\. \[TOOL_DENIED\][\s\S]*beat-16\n[\s\S]*Took \d[\s\S]*all done/, "the denied row and the finished exec_command");
			assert.match(plain(denied), /\.\.\. \(11 earlier lines/, "collapsed: the tail of exec_command's output");
			keep(`${tag}-denied`, denied);
			assert.match(plain(denied), /Edit app\.py \+1 -1/);
			assert.match(plain(denied), /Read app\.py\n\s*lines 1-3 of 3/);
			assert.equal(readFileSync(join(box.cwd, "app.py"), "utf8"), "line one\nline TWO\nline three\n");
			const errorColour = colourOf(denied, "Not run: the call was denied.");
			assert.match(errorColour, /\x1b\[(38;[25];[0-9;]+|3[0-9])m/, "the error sentence is coloured");
			assert.notEqual(errorColour, colourOf(denied, "lines 1-3 of 3"), "not in the colour of a success row");

			// 6. /pct status: the summary line first.
			pi.keys("/pct status");
			// Enter once the editor shows what was typed (the completion list may then take it: handled below).
			await pi.waitFor(/\/pct status/, "the typed command", 30_000);
			pi.keys("Enter");
			const summary = /Pi Codex Toolkit: \d+ active[^\n]*running: nothing/;
			// The argument completion may take the first Enter.
			const status = await pi.waitFor(summary, "the status summary", 5_000, 400).catch(() => (pi.keys("Enter"), pi.waitFor(summary, "the status summary", 90_000, 400)));
			keep(`${tag}-status`, status);
		} finally {
			pi.close();
		}
	});
}

// What a model supplies never reaches the terminal raw (docs/permissions.md "What reaches the terminal"): an OSC in a
// Write path (refused: a path holds no control character) and in a Bash command, and ESC codes in a todo, are drawn
// as visible escapes in the tool rows — the pane's title stays Pi's.
const OSC_SCRIPT = `export default [
	{ tools: [{ name: "Write", args: { path: "notes\\u001b]2;PWNED-PATH\\u0007.txt", content: "x\\n" } }] },
	{ tools: [{ name: "Bash", args: { command: "true # \\u001b]2;PWNED-CMD\\u0007 \\u001b[31mred" } }] },
	{ tools: [{ name: "TodoWrite", args: { todos: [{ id: "1", content: "step\\u001b]2;PWNED-TODO\\u0007", status: "pending" }] } }] },
	{ text: "osc done" },
];`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] in the TUI: an OSC in a path, a command or a todo does not set the terminal title`, async () => {
		requireTools([["tmux", ["-V"]]], "apt-get install -y tmux");
		const box = sandbox("pct-tui-");
		writeConfig(box, { hostTools: { enabled: true }, interactiveTools: { enabled: true }, permissions: { mode: "auto" } });
		const pi = new TmuxPi(version, box, writeScript(box, OSC_SCRIPT));
		try {
			await pi.waitFor(/\[Extensions\][\s\S]*faux-1\s*$/m, "Pi's extension list", 240_000);
			const before = pi.tmux("display", "-p", "#{pane_title}").trim();
			await submitWhenReady(pi, "go", /osc done/);
			const screen = await pi.waitFor(/osc done/, "the end of the run", 120_000, 200);
			keep(`${version.name.replace(/\./g, "")}-osc`, screen);
			const title = pi.tmux("display", "-p", "#{pane_title}").trim();
			assert.doesNotMatch(title, /PWNED/, `the pane title was set by the model: ${title}`);
			assert.equal(title, before);
			const text = plain(screen);
			// The path is shown with its escape visible, and refused before anything was written.
			assert.match(text, /notes\\x1b\]2;PWNED-PATH\\x07\.txt/);
			assert.match(text, /control character U\+001B/);
			assert.match(text, /\\x1b\]2;PWNED-CMD\\x07 \\x1b\[31mred/);
			assert.match(text, /control-character/);
			assert.doesNotMatch(screen, /\x1b\]2;PWNED/, "no raw OSC on the screen");
		} finally {
			pi.close();
		}
	});
}

// Long output is drawn one screen row a line (docs/render.md "Drawing without stalls"): a 3,000-character line is cut
// at the width with `...(+N)` collapsed and expanded (ctrl+o), and the expanded output is its last 500 lines after a
// note counting the earlier ones.
const LONG_SCRIPT = `export default [
	{ tools: [{ name: "Bash", args: { command: "seq 1 700; head -c 3000 /dev/zero | tr '\\\\0' x; echo; echo long-done" } }] },
	{ text: "rows done" },
];`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] in the TUI: a long output line is one row cut with a count, expanded output is its last 500 lines`, async () => {
		requireTools([["tmux", ["-V"]]], "apt-get install -y tmux");
		const box = sandbox("pct-tui-");
		writeConfig(box, { hostTools: { enabled: true }, permissions: { mode: "auto" } });
		const pi = new TmuxPi(version, box, writeScript(box, LONG_SCRIPT));
		const tag = version.name.replace(/\./g, "");
		try {
			await pi.waitFor(/\[Extensions\][\s\S]*faux-1\s*$/m, "Pi's extension list", 240_000);
			await submitWhenReady(pi, "go", /rows done/);
			const cut = /^\s*x{40,}\.\.\.\(\+(\d+)\)\n\s*long-done$/m;
			const collapsed = await pi.waitFor(/rows done/, "the end of the run", 120_000);
			keep(`${tag}-long-collapsed`, collapsed);
			const m = cut.exec(plain(collapsed));
			assert.ok(m, `the long line is one row ending with its count:\n${plain(collapsed)}`);
			// The row's characters and the count add up to the line.
			const row = plain(collapsed).split("\n").find((l) => /x{40,}\.\.\./.test(l));
			assert.equal(row.trim().replace(/\.\.\.\(\+\d+\)$/, "").length + Number(m[1]), 3000);
			assert.match(plain(collapsed), /\.\.\. \(697 earlier lines/);
			// A pane tall enough for the whole expanded row: Pi 1.6 redraws in place and keeps no scrollback to read.
			pi.tmux("resize-window", "-y", "700");
			pi.keys("C-o");
			const expanded = await pi.waitFor(/earlier lines not drawn; the model received them all\)[\s\S]*long-done/, "the expanded output", 60_000, 1000);
			keep(`${tag}-long-expanded`, expanded);
			const text = plain(expanded);
			assert.match(text, /\.\.\. \(202 earlier lines not drawn; the model received them all\)\n\s*203\n/);
			assert.match(text, cut);
			assert.match(text, /\n\s*700\n/);
		} finally {
			pi.close();
		}
	});
}
