// The toolkit's tool renderers (src/pi/render, docs/render.md) drawn through Pi's own TUI components (pi-tui's
// Text, Pi's renderDiff and theme): `$ command` and the tail of long output, live output with the elapsed timer,
// errors in the error colour with a sentence and the code, Edit/Write/apply_patch diffs (collapsed counts, expanded
// hunks), Read/Grep/Glob summaries without the `[path#TAG]` rows, code cells with their nested calls, the
// permission card text, and the line diff against a brute-force LCS.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderersFor, bashSections } from "../src/pi/render/tools.ts";
import { lineDiff, editOpsDiff, patchFiles } from "../src/pi/render/diff.ts";
import { errorView, failure } from "../src/pi/render/format.ts";
import { cardText } from "../src/pi/render/card.ts";
import { initTheme } from "@earendil-works/pi-coding-agent";
import { tempDir } from "./helpers/tmp.mjs";

/** A theme that tags every colour, so assertions can name the style a piece was drawn in. */
const theme = { fg: (c, s) => `<${c}>${s}</${c}>`, bg: (_c, s) => s, bold: (s) => `*${s}*` };
const WIDTH = 200;
const ctx = (over = {}) => ({
	args: {},
	toolCallId: "t1",
	invalidate() {},
	lastComponent: undefined,
	state: {},
	cwd: process.cwd(),
	executionStarted: false,
	argsComplete: true,
	isPartial: true,
	expanded: false,
	showImages: false,
	isError: false,
	...over,
});
const lines = (component) => component.render(WIDTH).map((l) => l.trimEnd());
const screen = (component) => lines(component).join("\n");
const call = (name, c) => screen(renderersFor(name).renderCall(c.args, theme, c));
const result = (name, c, r, opts = {}) => screen(renderersFor(name).renderResult(r, { expanded: c.expanded, isPartial: c.isPartial, ...opts }, theme, c));
const textResult = (text, details) => ({ content: [{ type: "text", text }], details });

test("Bash: `$ command` with its timeout; collapsed output is the tail (never the start of the kept text)", () => {
	const c = ctx({ args: { command: "seq 1 100", timeout: 30 } });
	assert.equal(call("Bash", c), "<toolTitle>*$ seq 1 100*</toolTitle><muted> (timeout 30s)</muted>");
	const stdout = Array.from({ length: 100 }, (_, i) => String(i + 1)).join("\n") + "\n";
	const done = { ...c, isPartial: false };
	const collapsed = result("Bash", done, textResult("exit_code: 0", { stdout, stderr: "", exitCode: 0 }));
	assert.match(collapsed, /\.\.\. \(95 earlier lines,/);
	for (const n of [96, 97, 98, 99, 100]) assert.ok(collapsed.includes(`<toolOutput>${n}</toolOutput>`), `line ${n}`);
	assert.ok(!collapsed.includes("<toolOutput>1</toolOutput>") && !collapsed.includes("<toolOutput>95</toolOutput>"));
	const expanded = result("Bash", { ...done, expanded: true }, textResult("", { stdout, stderr: "", exitCode: 0 }));
	assert.ok(expanded.includes("<toolOutput>1</toolOutput>") && !expanded.includes("earlier lines"));
	// a cut stream names its recovery file
	const cut = result("Bash", done, textResult("", { stdout: "tail\n", stderr: "", stdoutTruncated: true, stdoutBytes: 90_000, stdoutRecovery: { path: "/tmp/rec.log" } }));
	assert.match(cut, /<warning>\[stdout: last 0 KiB of 88 KiB shown\. full stdout: \/tmp\/rec\.log\]<\/warning>/);
	assert.equal(call("Bash", ctx({ args: { command: "srv", runInBackground: true } })), "<toolTitle>*$ srv*</toolTitle><muted> (background)</muted>");
});

test("Bash: live output while running, with Elapsed, then Took; the call line's timer gives way to the live rows", () => {
	const c = ctx({ args: { command: "build" }, executionStarted: true });
	const first = call("Bash", c);
	assert.match(first, /\$ build/);
	assert.match(first, /<muted>Elapsed 0\.\ds<\/muted>/, "a running call with no output yet shows the timer");
	assert.ok(c.state.interval, "the row is redrawn every second while it runs");
	const live = result("Bash", c, textResult("step 1\nstep 2", { live: true, stdout: "step 1\nstep 2\n", stderr: "", stdoutBytes: 14, stderrBytes: 0, elapsedMs: 300 }), { isPartial: true });
	assert.match(live, /<toolOutput>step 2<\/toolOutput>/);
	assert.match(live, /<muted>Elapsed \d+\.\ds<\/muted>/);
	assert.ok(!call("Bash", c).includes("Elapsed"), "once live rows show, the timer is below them only");
	const end = { ...c, isPartial: false, durationMs: 4200 };
	const final = result("Bash", end, textResult("", { stdout: "done\n", stderr: "", exitCode: 0 }), { isPartial: false });
	assert.match(final, /<muted>Took 4\.2s<\/muted>/);
	assert.equal(c.state.interval, undefined, "the redraw timer stops with the final result");
});

test("exec_command and write_stdin: live output (tail) with Elapsed while the call waits, then the result", () => {
	const c = ctx({ args: { cmd: "npm run build" }, executionStarted: true });
	assert.match(call("exec_command", c), /<muted>Elapsed 0\.\ds<\/muted>/, "the timer before any output");
	const out = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
	const peek = { live: true, sessionId: "pct-shell-1", stdout: out, stderr: "warn: slow\n", stdoutBytes: out.length, stderrBytes: 11, elapsedMs: 1500, settled: false };
	const live = result("exec_command", c, textResult(out, peek), { isPartial: true });
	// collapsed: the end of the output, stderr last, never the first lines
	assert.match(live, /<toolOutput>line 30<\/toolOutput>/);
	assert.match(live, /<toolOutput>warn: slow<\/toolOutput>/);
	assert.ok(!live.includes("<toolOutput>line 1</toolOutput>"), live);
	assert.match(live, /\.\.\. \(26 earlier lines/);
	assert.match(live, /<muted>Elapsed \d+\.\ds<\/muted>/);
	assert.ok(!call("exec_command", c).includes("Elapsed"), "once live rows show, the timer is below them only");
	const expanded = result("exec_command", { ...c, expanded: true }, textResult(out, peek), { isPartial: true, expanded: true });
	assert.ok(expanded.includes("<toolOutput>line 1</toolOutput>"));
	const empty = result("exec_command", ctx({ args: { cmd: "sleep 5" }, executionStarted: true }), textResult("", { live: true, stdout: "", stderr: "" }), { isPartial: true });
	assert.match(empty, /<muted>\(no output yet\)<\/muted>/);
	const final = result("exec_command", { ...c, isPartial: false, durationMs: 2100 }, textResult("", { status: "completed", exit_code: 0, stdout: "done\n", stderr: "" }), { isPartial: false });
	assert.match(final, /<toolOutput>done<\/toolOutput>/);
	assert.match(final, /<muted>Took 2\.1s<\/muted>/);
	const w = ctx({ args: { session_id: "pct-shell-1", chars: "" }, executionStarted: true });
	assert.match(call("write_stdin", w), /poll<\/muted>\n<muted>Elapsed/);
	const wl = result("write_stdin", w, textResult("tick 3", { live: true, stdout: "tick 3\n", stderr: "" }), { isPartial: true });
	assert.match(wl, /<toolOutput>tick 3<\/toolOutput>[\s\S]*Elapsed/);
});

test("Bash failure: the exit code as a sentence with [TOOL_FAILED] in the error colour, then the output's tail", () => {
	const raw =
		"TOOL_FAILED: The command exited with code 2. Its stdout and stderr are below: fix the cause they show, then run it again.\n" +
		"exit_code: 2\n[stdout]\nbuilding\n[stderr]\nerror: missing file\n";
	const c = ctx({ args: { command: "make" }, isPartial: false, isError: true });
	const out = result("Bash", c, textResult(raw, {}));
	assert.match(out, /<error>Exited with code 2\. \[TOOL_FAILED\]<\/error>/);
	assert.match(out, /<toolOutput>error: missing file<\/toolOutput>/);
	assert.ok(!out.includes("fix the cause they show"), "the model-facing instruction is not the person's sentence");
	assert.deepEqual(bashSections(raw), { exit: "exit_code: 2", stdout: "building", stderr: "error: missing file", notes: [] });
});

test("errors: every failure text becomes a sentence with its code; the model's message is muted below", () => {
	const denied = errorView(theme, "TOOL_DENIED: The user denied this Bash call. Do not retry it; ask the user.", false);
	assert.equal(denied, "<error>Not run: the call was denied. [TOOL_DENIED]</error>\n<muted>The user denied this Bash call. Do not retry it; ask the user.</muted>");
	assert.equal(failure("EDIT_TAG_MISMATCH: x").sentence, "Not applied: the file changed since the model read it.");
	assert.equal(failure("EDIT_RANGE_INVALID: x").sentence, "The Edit was not applied.");
	assert.deepEqual(failure("policy-denied: no. Nothing was started."), { code: "policy-denied", message: "no. Nothing was started.", sentence: "Blocked by the embedder's policy; nothing ran." });
	assert.equal(failure("apply_patch failed (no-change): context not found").code, "apply_patch no-change");
	assert.equal(failure("something odd").code, undefined);
	// a multi-line message shows its first line collapsed, all of it expanded
	assert.match(errorView(theme, "TOOL_FAILED: one\ntwo", false), /<muted>one<\/muted> <dim>…<\/dim>$/);
	assert.match(errorView(theme, "TOOL_FAILED: one\ntwo", true), /<muted>one\ntwo<\/muted>$/);
	// any tool's error result is drawn in the error colour
	const c = ctx({ args: { path: "a.txt" }, isPartial: false, isError: true });
	assert.match(result("Read", c, textResult("NOT_FOUND: a.txt does not exist. Check the path with Glob.", {})), /<error>Not found\. \[NOT_FOUND\]<\/error>/);
});

test("Edit: collapsed = path and +/- counts; expanded = the operations as a coloured diff with line numbers", () => {
	const dir = tempDir("pct-render-");
	writeFileSync(join(dir, "app.py"), "a\nb\nc\nd\n");
	const args = { path: "app.py", tag: "T", ops: "PUT 2.=2:\n+B\n+B2\nPUT >$:\n+end\nCUT 3.=3 @keep" };
	const c = ctx({ args, cwd: dir });
	assert.equal(call("Edit", c), "<toolTitle>*Edit*</toolTitle> <accent>app.py</accent> <toolDiffAdded>+3</toolDiffAdded> <toolDiffRemoved>-2</toolDiffRemoved>");
	const exp = call("Edit", { ...c, expanded: true });
	assert.match(exp, /<toolDiffRemoved>-2 b<\/toolDiffRemoved>/);
	assert.match(exp, /<toolDiffAdded>\+2 B<\/toolDiffAdded>/);
	assert.match(exp, /<toolDiffAdded>\+3 B2<\/toolDiffAdded>/);
	assert.match(exp, /<toolDiffContext> 4 d<\/toolDiffContext>/);
	assert.match(exp, /<toolDiffAdded>\+5 end<\/toolDiffAdded>/);
	assert.match(exp, /<toolDiffRemoved>-3 c<\/toolDiffRemoved>/);
	assert.match(exp, /<warning>keeps lines 3\.=3 in register @keep<\/warning>/);
	// the preview is taken before the call runs: the file changing afterwards does not change the row
	writeFileSync(join(dir, "app.py"), "x\n");
	assert.match(call("Edit", { ...c, expanded: true, executionStarted: true }), /-2 b/);
	// once landed, the counts are the engine's
	const done = { ...c, executionStarted: true, isPartial: false };
	result("Edit", done, textResult("[app.py#N]", { added: 7, removed: 1, warnings: ["carried over"] }));
	assert.match(call("Edit", done), /\+7<\/toolDiffAdded> <toolDiffRemoved>-1/);
	// a row first drawn after the call ran (a resumed session) does not read the file: no made-up old lines
	const later = ctx({ args: { path: "app.py", ops: "PUT 1.=1:\n+y" }, cwd: dir, executionStarted: true, expanded: true });
	assert.match(call("Edit", later), /-1 \(not shown: the file is not read after the call ran\)/);
	assert.deepEqual(editOpsDiff("REM", ["a", "b"]).notes, ["deletes the file"]);
	assert.deepEqual(editOpsDiff("MV b.txt", ["a"]).notes, ["moves the file to b.txt"]);
});

test("Write: a diff against the existing file, or the new file's lines; counts collapsed", () => {
	const dir = tempDir("pct-render-");
	writeFileSync(join(dir, "w.txt"), "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
	const c = ctx({ args: { path: "w.txt", content: "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n10\n" }, cwd: dir });
	assert.match(call("Write", c), /<accent>w\.txt<\/accent> <toolDiffAdded>\+1<\/toolDiffAdded> <toolDiffRemoved>-1<\/toolDiffRemoved>$/);
	const exp = call("Write", { ...c, expanded: true });
	assert.match(exp, /- 5 5/);
	assert.match(exp, /\+ 5 FIVE/);
	assert.match(exp, /  2 2/, "three context lines before");
	assert.ok(!exp.includes("  1 1") && !exp.includes("  9 9"), "not more than three");
	const n = ctx({ args: { path: "new.txt", content: "x\ny\n" }, cwd: dir, expanded: true });
	assert.match(call("Write", n), /\+2<\/toolDiffAdded> <toolDiffRemoved>-0[\s\S]*\+1 x[\s\S]*\+2 y/);
});

test("apply_patch: files with their letter and counts; expanded, the hunks coloured", () => {
	const patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: src/a.js\n*** Move to: src/b.js\n@@ function f\n ctx\n-old\n+new\n*** Delete File: gone.txt\n*** End Patch";
	const c = ctx({ args: { patch } });
	const collapsed = call("apply_patch", c);
	assert.match(collapsed, /\*apply_patch\*<\/toolTitle> <muted>3 files<\/muted> <toolDiffAdded>\+2<\/toolDiffAdded> <toolDiffRemoved>-1/);
	assert.match(collapsed, /<warning>A<\/warning> <accent>new\.txt<\/accent>/);
	assert.match(collapsed, /<warning>M<\/warning> <accent>src\/a\.js → src\/b\.js<\/accent>/);
	assert.match(collapsed, /<warning>D<\/warning> <accent>gone\.txt<\/accent>/);
	assert.ok(!collapsed.includes("+ new"));
	const exp = call("apply_patch", { ...c, expanded: true });
	assert.match(exp, /<toolDiffRemoved>- old<\/toolDiffRemoved>/);
	assert.match(exp, /<toolDiffAdded>\+ new<\/toolDiffAdded>/);
	assert.deepEqual(patchFiles(patch).map((f) => [f.op, f.path, f.added, f.removed]), [["add", "new.txt", 1, 0], ["update", "src/a.js", 1, 1], ["delete", "gone.txt", 0, 0]]);
});

test("Read/Grep/Glob: path, range and counts; expanded rows without the [path#TAG] headers", () => {
	const r = ctx({ args: { path: "src/a.rs", offset: 10, limit: 5 }, isPartial: false });
	assert.equal(call("Read", r), "<toolTitle>*Read*</toolTitle> <accent>src/a.rs</accent><warning>:10-14</warning>");
	const res = textResult("[src/a.rs#AB12]\n10:fn a() {\n11:}\n", { lineCount: 2, offset: 10, totalLines: 11, truncated: false });
	const collapsed = result("Read", r, res);
	assert.ok(collapsed.includes("<muted>lines 10-11 of 11</muted>") && !collapsed.includes("fn a"));
	const exp = result("Read", { ...r, expanded: true }, res);
	assert.ok(exp.includes("<toolOutput>fn a() {</toolOutput>") && !exp.includes("#AB12"));
	const g = ctx({ args: { pattern: "todo", glob: "*.rs", ignoreCase: true }, isPartial: false });
	assert.equal(call("Grep", g), "<toolTitle>*Grep*</toolTitle> <accent>/todo/</accent><muted> in . (glob *.rs, ignore case)</muted>");
	const gr = textResult("[a.rs#X]\n3:// todo", { mode: "content", matches: [{ path: "a.rs", line: 3, text: "// todo" }, { path: "b.rs", line: 9, text: "todo!()" }], files: ["a.rs", "b.rs"], truncated: false });
	assert.match(result("Grep", g, gr), /<muted>2 matches in 2 files<\/muted>\n<accent>a\.rs<\/accent><muted>:3<\/muted> <toolOutput>\/\/ todo<\/toolOutput>/);
	const files = Array.from({ length: 25 }, (_, i) => `f${i}.ts`);
	const gl = ctx({ args: { pattern: "*.ts" }, isPartial: false });
	const globbed = result("Glob", gl, textResult("", { files, truncated: false }));
	assert.match(globbed, /<muted>25 files<\/muted>/);
	assert.match(globbed, /\.\.\. \(15 more lines,/);
});

test("exec: the program, then its nested calls as progress arrives; wait names the cell", () => {
	const c = ctx({ args: { code: "const r = await tools.exec_command({cmd: 'ls'});\nprint(r.stdout);", uses: ["exec_command"] }, executionStarted: true });
	const shown = call("exec", c);
	assert.match(shown, /\*exec\*<\/toolTitle><muted> uses exec_command<\/muted>/);
	assert.match(shown, /tools/, "the program is shown");
	const p = (rec) => textResult("", { progress: rec });
	result("exec", c, p({ event: "start", tool: "exec_command", cellId: "cell-1" }), { isPartial: true });
	const mid = result("exec", c, p({ event: "end", tool: "exec_command", cellId: "cell-1", ok: true }), { isPartial: true });
	assert.match(mid, /↳<\/muted> <toolTitle>exec_command<\/toolTitle> <success>ok<\/success>/);
	result("exec", c, p({ event: "start", tool: "apply_patch", cellId: "cell-1" }), { isPartial: true });
	const wait = result("exec", c, p({ event: "waiting-approval", tool: "apply_patch", cellId: "cell-1" }), { isPartial: true });
	assert.match(wait, /apply_patch<\/toolTitle> <warning>waiting for approval<\/warning>/);
	const end = result("exec", { ...c, isPartial: false }, textResult("a.txt\nb.txt", {}), { isPartial: false });
	assert.match(end, /exec_command<\/toolTitle> <success>ok/);
	assert.match(end, /<toolOutput>b\.txt<\/toolOutput>/);
	assert.equal(call("wait", ctx({ args: { cell_id: "cell-9", terminate: true } })), "<toolTitle>*wait*</toolTitle> <accent>cell-9</accent><warning> terminate</warning>");
});

test("exec_command: `$ cmd`, the output's tail, and a running session named", () => {
	const c = ctx({ args: { cmd: "npm test", workdir: "pkg" }, isPartial: false });
	assert.equal(call("exec_command", c), "<toolTitle>*$ npm test*</toolTitle><muted> (in pkg)</muted>");
	const out = result("exec_command", c, textResult("", { status: "running", session_id: "pct-shell-1", stdout: "ok 1\n", stderr: "" }));
	assert.match(out, /<toolOutput>ok 1<\/toolOutput>\n<warning>still running as pct-shell-1/);
	assert.match(result("exec_command", c, textResult("", { status: "completed", exit_code: 1, stdout: "", stderr: "bad\n" })), /<error>Exited with code 1\.<\/error>/);
});

test("permission cards: the command, the diff, the path and the outside-the-workspace flag", () => {
	const dir = tempDir("pct-card-");
	writeFileSync(join(dir, "app.py"), "one\ntwo\n");
	const ws = (path) => ({ ok: true, root: "workspace", canonical: join(dir, path), path });
	assert.equal(cardText("Bash", { command: "rm -rf build\nmake" }, null, dir), `Allow Bash to run this command?\n$ rm -rf build\n  make\nin the workspace (${dir})`);
	assert.equal(
		cardText("Edit", { path: "app.py", tag: "T", ops: "PUT 2.=2:\n+TWO" }, ws("app.py"), dir),
		"Allow Edit to change app.py? (+1 -1)\n-2 two\n+2 TWO",
	);
	assert.equal(cardText("Write", { path: "app.py", content: "one\n2\n" }, ws("app.py"), dir), "Allow Write to overwrite app.py? (+1 -1)\n 1 one\n-2 two\n+2 2");
	assert.equal(cardText("Write", { path: "n.txt", content: "x\n" }, ws("n.txt"), dir), "Allow Write to create n.txt? (+1 -0)\n+1 x");
	const ext = { ok: true, root: "external", external: "dotdot-escape", canonical: "/etc/hosts", path: "../../etc/hosts" };
	assert.equal(cardText("Read", { path: "../../etc/hosts" }, ext, dir), "Allow Read to read /etc/hosts (outside the workspace: dotdot-escape, a ../ path that leaves the workspace)?");
	const long = Array.from({ length: 50 }, (_, i) => `echo ${i}`).join("\n");
	const card = cardText("Bash", { command: long }, null, dir).split("\n");
	assert.equal(card.length, 1 + 30 + 1 + 1);
	assert.match(card[31], /^… 20 more lines/);
});

test("lineDiff: a shortest edit script (checked against a brute-force LCS), with numbered context and gaps", () => {
	let seed = 7;
	const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 4);
	const lcs = (a, b) => {
		const t = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
		for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b.length; j++) t[i][j] = a[i - 1] === b[j - 1] ? t[i - 1][j - 1] + 1 : Math.max(t[i - 1][j], t[i][j - 1]);
		return t[a.length][b.length];
	};
	for (let k = 0; k < 300; k++) {
		const a = Array.from({ length: rnd() * 3 }, () => "abcd"[rnd()]);
		const b = Array.from({ length: rnd() * 3 }, () => "abcd"[rnd()]);
		const d = lineDiff(a.map((x) => x + "\n").join(""), b.map((x) => x + "\n").join(""), 100);
		const l = lcs(a, b);
		assert.deepEqual([d.removed, d.added], [a.length - l, b.length - l], `${a} -> ${b}`);
		// the kept and added lines, in order, are b; the kept and removed ones are a
		if (d.added + d.removed === 0) {
			assert.equal(d.text, "");
			continue;
		}
		const rows = d.text.split("\n");
		const strip = (r) => r.replace(/^.\s*\d+ /, "");
		assert.deepEqual(rows.filter((r) => r[0] !== "-").map(strip), b);
		assert.deepEqual(rows.filter((r) => r[0] !== "+").map(strip), a);
	}
	const many = Array.from({ length: 30 }, (_, i) => `l${i}`);
	const changed = many.map((l, i) => (i === 5 || i === 25 ? l.toUpperCase() : l));
	const d = lineDiff(many.join("\n"), changed.join("\n"));
	assert.deepEqual(d.text.split("\n").filter((l) => l.trim() === "..."), ["    ..."], "one gap between the two distant changes");
	assert.equal(lineDiff("same\n", "same\n").text, "");
});

test("with Pi's real theme, the Edit diff is Pi's renderDiff (its removed/added colours)", () => {
	initTheme("dark", false);
	const dir = tempDir("pct-render-");
	writeFileSync(join(dir, "x.txt"), "old line\n");
	const c = ctx({ args: { path: "x.txt", ops: "PUT 1.=1:\n+new line" }, cwd: dir, expanded: true });
	const out = renderersFor("Edit").renderCall(c.args, theme, c).render(WIDTH).join("\n");
	const removed = /(\x1b\[[0-9;]*m)-1 old line/.exec(out);
	const added = /(\x1b\[[0-9;]*m)\+1 new line/.exec(out);
	assert.ok(removed && added, "both rows are coloured by the theme");
	assert.notEqual(removed[1], added[1], "removed and added rows in different colours");
});

test("/pct completions: sub-commands, then their arguments", async () => {
	const { pctCompletions, PERMISSION_MODE_TEXT } = await import("../src/pi/commands.ts");
	assert.deepEqual(pctCompletions("").map((c) => c.value), ["config", "status", "reload", "jobs", "review", "permission", "mode", "agents"]);
	assert.deepEqual(pctCompletions("mode ").map((c) => c.value), ["mode plan", "mode agent"]);
	assert.deepEqual(pctCompletions("re").map((c) => c.value), ["reload", "review"]);
	assert.deepEqual(pctCompletions("permission a").map((c) => c.value), ["permission ask", "permission accept-edits", "permission auto"]);
	assert.deepEqual(pctCompletions("review rollback").map((c) => c.label), ["rollback", "rollback all"]);
	assert.deepEqual(pctCompletions("jobs ").map((c) => c.value), ["jobs stop all"]);
	assert.equal(pctCompletions("bogus"), null);
	assert.equal(pctCompletions("status x"), null);
	assert.deepEqual(Object.keys(PERMISSION_MODE_TEXT), ["ask", "accept-edits", "auto"]);
});

test("running work: the summary line, job rows with age and last output, ids followed from results", async () => {
	const { summary, summaryLine, jobRow, jobsOf, noteResult, forgetJobs, age } = await import("../src/pi/status.ts");
	assert.equal(summary({ tasks: 2, cells: 1, shells: 1 }), "2 tasks · 1 cell · 1 shell");
	assert.equal(summary({ tasks: 0, cells: 0, shells: 0 }), "");
	assert.equal(
		summaryLine({ a: { effective: "active" }, b: { effective: "off" }, c: { effective: "off" }, d: { effective: "unavailable" } }, { tasks: 0, cells: 2, shells: 0 }),
		"Pi Codex Toolkit: 1 active · 1 unavailable · 2 off · running: 2 cells",
	);
	assert.deepEqual([age(5_000), age(125_000), age(3_726_000)], ["5s", "2m 5s", "1h 2m"]);
	assert.equal(jobRow({ kind: "shell", id: "pct-shell-1", what: "npm run dev", since: 0, last: "ready on :3000", status: "running" }, 65_000), "shell pct-shell-1  npm run dev  1m 5s  last: ready on :3000");
	forgetJobs();
	let running = { shells: 1, cells: 1 };
	const shared = new Map([
		["shell", { status: () => ({ running: running.shells }) }],
		["code", { runningCells: () => running.cells }],
	]);
	noteResult("exec_command", { cmd: "npm run dev\n" }, { status: "running", session_id: "pct-shell-1", stdout: "a\nready\n", stderr: "" });
	noteResult("exec", { code: "\nwhile (true) {}" }, { status: "running", cellId: "cell-1", output: "", shellSessions: [] });
	let j = jobsOf({ shared });
	assert.deepEqual(j.list.map((x) => [x.kind, x.id, x.what, x.last]), [["cell", "cell-1", "while (true) {}", undefined], ["shell", "pct-shell-1", "npm run dev", "ready"]]);
	noteResult("write_stdin", { session_id: "pct-shell-1" }, { status: "completed", exit_code: 0, stdout: "", stderr: "" });
	j = jobsOf({ shared });
	assert.deepEqual(j.list.map((x) => x.id), ["cell-1"]);
	running = { shells: 0, cells: 0 };
	assert.deepEqual(jobsOf({ shared }).list, [], "the engine counts none: every id seen has ended");
});

test("review: a change named as the person knows it, states in words, the later changes that block a rollback", async () => {
	const { changeName, rowText, laterChanges } = await import("../src/pi/review.ts");
	const ch = (version, path, tool, state = "active", extra = {}) => ({ version, path, tool, state, row: `#${version} M ${path}  edit  +1 -1  ${state}`, snapshotId: `s${version}`, ...extra });
	const list = [ch(1, "app.py", "Write"), ch(2, "other.py", "Edit"), ch(3, "app.py", "Edit"), ch(4, "app.py", "apply_patch", "rolledBack")];
	assert.equal(changeName(list[2]), "#3 Edit app.py");
	assert.equal(rowText(list[3].row), "#4 M app.py  edit  +1 -1  rolled back");
	assert.deepEqual(laterChanges(list, list[0]).map(changeName), ["#3 Edit app.py"]);
	assert.deepEqual(laterChanges(list, list[2]), []);
});

test("a Write, Edit or apply_patch call that ended in an error (refused by Plan, denied, failed) promises no counts in its header", () => {
	const dir = tempDir("pct-render-");
	const patch = "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch";
	for (const [tool, args] of [["Write", { path: "n.txt", content: "x\n" }], ["Edit", { path: "n.txt", tag: "0000", ops: "REM" }], ["apply_patch", { patch }]]) {
		const ok = call(tool, ctx({ args, cwd: dir }));
		const refused = call(tool, ctx({ args, cwd: dir, isError: true, executionStarted: true }));
		if (tool !== "Edit") assert.match(ok, /<toolDiffAdded>\+1<\/toolDiffAdded>/, `${tool} before it ran: ${ok}`);
		assert.doesNotMatch(refused, /toolDiff(Added|Removed)/, `${tool} after a refusal: ${refused}`);
	}
});
