// What changed, on screen (docs/render.md "Diffs"), in Pi's interactive TUI of both versions through tmux with the
// scripted faux model: the card of a Write that rewrites a 20,000-line file comes up (the engine's bounded diff, off
// Pi's main thread: it froze Pi for about a minute when the diff was JS), a session grant then lets a Write of a new
// file run without a card and its row shows the file's first lines, as Pi's write does; an Edit's and an
// apply_patch's collapsed results show their numbered, coloured diff with context, not the raw envelope; `/pct jobs`
// shows a background task live, and a stop from it is confirmed on screen as the task leaves the list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, sandbox, writeConfig, writeScript } from "../helpers/pi.mjs";
import { TmuxPi, colourOf, keep, plain, submitWhenReady } from "./helpers/tmux.mjs";
import { requireTools } from "../helpers/prereq.mjs";

const BIG = 20_000;
const numbered = (prefix) => Array.from({ length: BIG }, (_, i) => `${prefix} ${i + 1}\n`).join("");
const HELLO = Array.from({ length: 12 }, (_, i) => `print("hello ${i + 1}")`).join("\n") + "\n";

const SCRIPT = `const tagOf = (r) => (r.details && r.details.tag) || /#([0-9A-F]{4})\\]/.exec(r.text)[1];
const big = Array.from({ length: ${BIG} }, (_, i) => "new line " + (i + 1) + "\\n").join("");
export default [
	{ tools: [{ name: "Write", args: { path: "big.txt", content: big } }] },
	{ tools: [{ name: "Write", args: { path: "hello.py", content: ${JSON.stringify(HELLO)} } }] },
	{ tools: [{ name: "Read", args: { path: "app.py" } }] },
	(ctx) => ({ tools: [{ name: "Edit", args: { path: "app.py", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 2.=2:\\n+line TWO" } }] }),
	{ tools: [{ name: "apply_patch", args: { patch: "*** Begin Patch\\n*** Update File: app.py\\n@@\\n line TWO\\n-line three\\n+line 3\\n*** End Patch\\n" } }] },
	{ tools: [{ name: "Bash", args: { command: "echo serving; sleep 600", runInBackground: true } }] },
	{ text: "all done" },
];`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] in the TUI: the 20,000-line rewrite's card comes up; Write, Edit and apply_patch rows show what changed`, async () => {
		requireTools([["tmux", ["-V"]]], "apt-get install -y tmux");
		const box = sandbox("pct-tui-diff-");
		writeConfig(box, { hostTools: { enabled: true, permissionMode: "ask" }, applyPatch: { enabled: true } });
		// The 20,000-line content fills half the faux model's context: no auto-compaction (it would take a scripted step).
		writeFileSync(join(box.agentDir, "settings.json"), JSON.stringify({ compaction: { enabled: false } }));
		writeFileSync(join(box.cwd, "big.txt"), numbered("old line"));
		writeFileSync(join(box.cwd, "app.py"), "line one\nline two\nline three\n");
		const pi = new TmuxPi(version, box, writeScript(box, SCRIPT));
		const tag = version.name.replace(/\./g, "");
		try {
			await pi.waitFor(/\[Extensions\][\s\S]*faux-1\s*$/m, "Pi's extension list", 240_000);
			await submitWhenReady(pi, "go", /Write big\.txt|Allow Write/);

			// 1. The card of the 20,000-line rewrite: every line changed, counted (bounded when the engine's diff hit its
			// deadline). How long after the row it came up is printed, not asserted (bench/render-stall.mjs measures).
			const rowAt = Date.now();
			const card = await pi.waitFor(/Allow Write to overwrite big\.txt\? \((at most )?\+20000 -20000\)/, "the big Write's card", 120_000);
			console.log(`[pi ${version.name}] the 20,000-line rewrite's card was on screen ${Date.now() - rowAt} ms after the row (poll: 200 ms)`);
			keep(`${tag}-big-card`, card);
			assert.equal(readFileSync(join(box.cwd, "big.txt"), "utf8"), numbered("old line"), "nothing written before the approval");
			pi.keys("Down", "Enter"); // Allow for this session

			// 2. The grant lets the next Write run without a card; a new file's row shows its first lines and how many more.
			const hello = await pi.waitFor(/Write hello\.py \+12 -0\n[\s\S]*print\("hello 10"\)\n\s*\.\.\. \(2 more lines, 12 total/, "the new file's first lines", 120_000);
			keep(`${tag}-write-new`, hello);
			assert.doesNotMatch(plain(hello), /Allow Write to create hello\.py/, "no card after the session grant");
			assert.doesNotMatch(plain(hello), /print\("hello 11"\)/);
			assert.match(plain(hello), /Write big\.txt (≤)?\+20000 -20000/, "the big Write's row keeps its counts");
			assert.equal(plain(hello).match(/print\("hello 1"\)/g).length, 1, "the new file's lines are drawn once");

			// 3. The Edit's card, then its collapsed result: the numbered diff with its context, coloured.
			await pi.waitFor(/Allow Edit to change app\.py\? \(\+1 -1\)/, "the Edit card", 120_000);
			pi.keys("Enter");
			const edited = await pi.waitFor(/Edit app\.py \+1 -1\n[\s\S]*?1 line one\n\s*-2 line two\n\s*\+2 line TWO\n\s*3 line three/, "the Edit's diff in its result", 120_000);
			keep(`${tag}-edit`, edited);
			// (Pi's renderDiff marks the changed word inside the row, so the colour is read at the row's start.)
			assert.notEqual(colourOf(edited, "-2 line "), colourOf(edited, "+2 line "), "removed and added rows in different colours");
			assert.equal(plain(edited).match(/-2 line two/g).length, 1, "the diff is drawn once");

			// 4. apply_patch: its card, then per-file diffs in the result, not the envelope.
			await pi.waitFor(/Allow apply_patch/, "the apply_patch card", 120_000);
			pi.keys("Enter");
			const patched = await pi.waitFor(/M app\.py \+1 -1\n\s*1 line one\n\s*2 line TWO\n\s*-3 line three\n\s*\+3 line 3/, "the patch's per-file diff", 120_000);
			keep(`${tag}-patch`, patched);
			assert.doesNotMatch(plain(patched), /\*\*\* Begin Patch|Applied patch:/, "no raw envelope or model text in the row");
			assert.equal(readFileSync(join(box.cwd, "app.py"), "utf8"), "line one\nline TWO\nline 3\n");

			// 5. /pct jobs: the background task in the live widget; Enter stops it, the stop is confirmed on screen and
			// the task leaves the list at once.
			await pi.waitFor(/Allow Bash to run this command as a background task\?/, "the background Bash card", 120_000);
			pi.keys("Enter");
			await pi.waitFor(/Started background task bg-[\s\S]*all done/, "the started task", 120_000);
			pi.keys("/pct jobs");
			// Enter once the editor shows what was typed (the completion list may then take it: handled below).
			await pi.waitFor(/\/pct jobs/, "the typed command", 30_000);
			pi.keys("Enter");
			const widget = await pi.waitFor(/Running: 1 task\n\s*\n\s*> task (bg-\S+)\s+echo serving; sleep 600/, "the jobs widget", 5_000).catch(() => (pi.keys("Enter"), pi.waitFor(/Running: 1 task\n\s*\n\s*> task (bg-\S+)/, "the jobs widget", 60_000)));
			keep(`${tag}-jobs`, widget);
			const id = /> task (bg-\S+)/.exec(plain(widget))[1];
			pi.keys("Enter");
			const stopped = await pi.waitFor(new RegExp(`Nothing is running[\\s\\S]*Stopped task ${id}\\.`), "the stop confirmed in the widget", 60_000);
			keep(`${tag}-jobs-stopped`, stopped);
			assert.doesNotMatch(plain(stopped).split("Nothing is running")[1], /> task/);
			pi.keys("Escape");
		} finally {
			pi.close();
		}
	});
}
