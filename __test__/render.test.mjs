// The toolkit's tool renderers (src/pi/render, docs/render.md) drawn through Pi's own TUI components (pi-tui's
// Text, Pi's renderDiff and theme): `$ command` and the tail of long output, live output with the elapsed timer,
// errors in the error colour with a sentence and the code, Edit/Write/apply_patch diffs (the preview while a call is
// pending, the engine's landed diff after: first rows collapsed, all expanded), Read/Grep/Glob summaries without the
// `[path#TAG]` rows, code cells with their nested calls, and the permission card text. The diff itself is the
// engine's (__test__/diffview.test.mjs, src/diffview/tests.rs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderersFor } from "../src/pi/render/tools.ts";
import { editOpsDiff, patchFiles } from "../src/pi/render/diff.ts";
import { clockEnd, clockStart, clockWaiting, errorView, failureOf } from "../src/pi/render/format.ts";
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

test("the timer of a gated call counts from its approval: none while the card is open, then the work's own time", () => {
	const id = `gated-${process.pid}`;
	clockWaiting(id);
	const c = ctx({ toolCallId: id, args: { command: "sleep 6" }, executionStarted: true });
	assert.equal(call("Bash", c), "<toolTitle>*$ sleep 6*</toolTitle>", "no timer while the card waits");
	clockStart(id);
	assert.match(call("Bash", c), /<muted>Elapsed 0\.\ds<\/muted>$/);
	clockEnd(id);
	// Pi's own duration (1.6) includes the 13.9 s the card was open: the row says what the work took.
	const done = { ...c, isPartial: false, durationMs: 13_900 };
	const out = result("Bash", done, textResult("exit_code: 0", { stdout: "ok\n", stderr: "", exitCode: 0 }));
	assert.match(out, /<muted>Took 0\.\ds<\/muted>$/);
	assert.ok(!out.includes("13.9s"));
	// A call the glue did not time keeps Pi's duration.
	const other = ctx({ toolCallId: "untimed", args: { command: "x" }, executionStarted: true, isPartial: false, durationMs: 4_200 });
	call("Bash", other);
	assert.match(result("Bash", other, textResult("exit_code: 0", { stdout: "", stderr: "", exitCode: 0 })), /Took 4\.2s/);
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

test("Bash failure: the exit code from details as a sentence with [TOOL_FAILED] in the error colour, then the output's tail", () => {
	const raw =
		"TOOL_FAILED: The command exited with code 2. Its stdout and stderr are below: fix the cause they show, then run it again.\n" +
		"exit_code: 2\n[stdout]\nbuilding\n[stderr]\nerror: missing file\n";
	const c = ctx({ args: { command: "make" }, isPartial: false, isError: true });
	const details = { errorCode: "TOOL_FAILED", exitCode: 2, stdout: "building\n", stderr: "error: missing file\n", ran: true };
	const out = result("Bash", c, textResult(raw, details));
	assert.match(out, /<error>Exited with code 2\. \[TOOL_FAILED\]<\/error>/);
	assert.match(out, /<toolOutput>building<\/toolOutput>\n<toolOutput>error: missing file<\/toolOutput>/);
	assert.ok(!out.includes("fix the cause they show"), "the model-facing instruction is not the person's sentence");
	// the sentence follows the fields, not the text: a text that says code 2 beside an exitCode of 7 reads 7
	assert.match(result("Bash", c, textResult(raw, { ...details, exitCode: 7 })), /Exited with code 7\./);
	assert.match(result("Bash", c, textResult(raw, { ...details, exitCode: undefined, signal: "SIGKILL" })), /<error>Killed by SIGKILL\. \[TOOL_FAILED\]<\/error>/);
	// Pi 0.87 (the text thrown, no details): the text as it is, in the error colour; nothing parsed out of it
	const plain = result("Bash", c, textResult(raw, {}));
	assert.match(plain, /^\n<error>TOOL_FAILED: The command exited with code 2\./);
	assert.ok(!plain.includes("Exited with code"), "no sentence is made from text");
});

test("errors: the code from details picks the sentence; the model's message is muted below; text alone is shown as is", () => {
	const data = (code, text, extra = {}) => textResult(text, { errorCode: code, ...extra });
	const denied = errorView(theme, data("TOOL_DENIED", "TOOL_DENIED: The user denied this Bash call. Do not retry it; ask the user."), false);
	assert.equal(denied, "<error>Not run: the call was denied. [TOOL_DENIED]</error>\n<muted>The user denied this Bash call. Do not retry it; ask the user.</muted>");
	assert.equal(failureOf(data("EDIT_TAG_MISMATCH", "EDIT_TAG_MISMATCH: x")).sentence, "Not applied: the file changed since the model read it.");
	assert.equal(failureOf(data("EDIT_RANGE_INVALID", "EDIT_RANGE_INVALID: x")).sentence, "The Edit was not applied.");
	const policy = failureOf(data("policy-denied", "policy-denied: no. Nothing was started."));
	assert.deepEqual([policy.code, policy.message, policy.sentence], ["policy-denied", "no. Nothing was started.", "Blocked by the embedder's policy; nothing ran."]);
	// apply_patch: its own text (no `CODE: ` prefix), the sentence from its outcome
	const patch = failureOf(data("context-mismatch", "apply_patch failed (no-change): context not found", { outcome: "no-change" }));
	assert.deepEqual([patch.code, patch.message, patch.sentence], ["context-mismatch", "apply_patch failed (no-change): context not found", "The patch was not applied; no file changed."]);
	assert.equal(failureOf(data("commit-failed", "x", { outcome: "partial" })).sentence, "The patch failed part-way (partial); see which files changed.");
	// a text that looks like a code is not one without the field
	assert.equal(failureOf(textResult("NOT_FOUND: looks coded", {})), undefined);
	assert.equal(errorView(theme, textResult("NOT_FOUND: looks coded", {}), false), "<error>NOT_FOUND: looks coded</error>");
	// a multi-line message shows its first line collapsed, all of it expanded
	assert.match(errorView(theme, data("TOOL_FAILED", "TOOL_FAILED: one\ntwo"), false), /<muted>one<\/muted> <dim>…<\/dim>$/);
	assert.match(errorView(theme, data("TOOL_FAILED", "TOOL_FAILED: one\ntwo"), true), /<muted>one\ntwo<\/muted>$/);
	// any tool's error result is drawn in the error colour
	const c = ctx({ args: { path: "a.txt" }, isPartial: false, isError: true });
	assert.match(result("Read", c, data("NOT_FOUND", "NOT_FOUND: a.txt does not exist. Check the path with Glob.")), /<error>Not found\. \[NOT_FOUND\]<\/error>/);
});

/** Draws a call twice: first to ask for its preview (made off the main thread), then once the row was invalidated. */
async function callWhenReady(name, c) {
	let ready;
	const drawn = new Promise((r) => (ready = r));
	c.invalidate = () => ready();
	call(name, c);
	await drawn;
	return call(name, c);
}

/** A landed change's details as the engine returns them (src/bind/diffview.rs). */
const landed = (text, added, removed, extra = {}) => ({ text, added, removed, exact: true, omittedRows: 0, beforeLines: 0, afterLines: 0, ...extra });

test("Edit: the preview under the call until it returns; then the landed diff, collapsed to its first rows", async () => {
	const dir = tempDir("pct-render-");
	writeFileSync(join(dir, "app.py"), "a\nb\nc\nd\n");
	const args = { path: "app.py", tag: "T", ops: "PUT 2.=2:\n+B\n+B2\nPUT >$:\n+end\nCUT 3.=3 @keep" };
	const c = ctx({ args, cwd: dir });
	// Nothing is read on the main thread: the first draw shows the path, the preview follows.
	assert.equal(call("Edit", ctx({ args, cwd: dir })), "<toolTitle>*Edit*</toolTitle> <accent>app.py</accent>");
	const pending = await callWhenReady("Edit", c);
	assert.match(pending, /^<toolTitle>\*Edit\*<\/toolTitle> <accent>app\.py<\/accent> <toolDiffAdded>\+3<\/toolDiffAdded> <toolDiffRemoved>-2<\/toolDiffRemoved>\n\n/);
	assert.match(pending, /<toolDiffRemoved>-2 b<\/toolDiffRemoved>/);
	assert.match(pending, /<toolDiffAdded>\+2 B<\/toolDiffAdded>/);
	assert.match(pending, /<toolDiffAdded>\+3 B2<\/toolDiffAdded>/);
	assert.match(pending, /<toolDiffContext> 4 d<\/toolDiffContext>/);
	assert.match(pending, /<toolDiffAdded>\+5 end<\/toolDiffAdded>/);
	assert.match(pending, /<toolDiffRemoved>-3 c<\/toolDiffRemoved>/);
	assert.match(pending, /<warning>keeps lines 3\.=3 in register @keep<\/warning>/);
	// the preview is taken before the call runs: the file changing afterwards does not change the row
	writeFileSync(join(dir, "app.py"), "x\n");
	assert.match(call("Edit", { ...c, executionStarted: true }), /-2 b/);
	// once it returned: the call line keeps the engine's counts, the result shows the engine's diff
	const done = { ...c, executionStarted: true, isPartial: false };
	const rows = Array.from({ length: 14 }, (_, i) => `+${String(i + 1).padStart(2)} row ${i + 1}`).join("\n");
	const r = textResult("[app.py#N]", { added: 14, removed: 0, warnings: ["carried over"], diff: landed(rows, 14, 0) });
	const collapsed = result("Edit", done, r);
	assert.match(collapsed, /<toolDiffAdded>\+ 1 row 1<\/toolDiffAdded>/);
	assert.match(collapsed, /<toolDiffAdded>\+10 row 10<\/toolDiffAdded>\n<muted>\.\.\. \(4 more lines,<\/muted> .*to expand/);
	assert.ok(!collapsed.includes("row 11"));
	assert.match(collapsed, /<warning>carried over<\/warning>/);
	assert.match(result("Edit", { ...done, expanded: true }, r, { expanded: true }), /\+14 row 14/);
	assert.equal(call("Edit", done), "<toolTitle>*Edit*</toolTitle> <accent>app.py</accent> <toolDiffAdded>+14</toolDiffAdded> <toolDiffRemoved>-0</toolDiffRemoved>");
	// a row first drawn after the call ran (a resumed session) reads nothing: its result has the change
	const later = ctx({ args: { path: "app.py", ops: "PUT 1.=1:\n+y" }, cwd: dir, executionStarted: true, isPartial: false });
	assert.equal(call("Edit", later), "<toolTitle>*Edit*</toolTitle> <accent>app.py</accent>");
	assert.match(result("Edit", later, textResult("", { deleted: true, removed: 3 })), /<muted>file deleted \(3 lines\)<\/muted>/);
	assert.deepEqual(editOpsDiff("REM", ["a", "b"]).notes, ["deletes the file"]);
	assert.deepEqual(editOpsDiff("MV b.txt", ["a"]).notes, ["moves the file to b.txt"]);
});

test("Write: the engine's diff against the file (or a new file's first lines) before it runs, the landed one after", async () => {
	const dir = tempDir("pct-render-");
	writeFileSync(join(dir, "w.txt"), "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
	const c = ctx({ args: { path: "w.txt", content: "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n10\n" }, cwd: dir });
	const pending = await callWhenReady("Write", c);
	assert.match(pending, /<accent>w\.txt<\/accent> <toolDiffAdded>\+1<\/toolDiffAdded> <toolDiffRemoved>-1<\/toolDiffRemoved>\n/);
	assert.match(pending, /- 5 5/);
	assert.match(pending, /\+ 5 FIVE/);
	assert.match(pending, /  2 2/, "three context lines before");
	assert.ok(!pending.includes("  1 1") && !pending.includes("  9 9"), "not more than three");
	// a new file: its first lines, as Pi's write shows them (no row numbers), and how many more
	const content = Array.from({ length: 25 }, (_, i) => `n${i + 1}`).join("\n") + "\n";
	const n = ctx({ args: { path: "new.txt", content }, cwd: dir });
	const fresh = await callWhenReady("Write", n);
	assert.match(fresh, /<toolDiffAdded>\+25<\/toolDiffAdded> <toolDiffRemoved>-0<\/toolDiffRemoved>\n\n<toolOutput>n1<\/toolOutput>/);
	assert.match(fresh, /<toolOutput>n10<\/toolOutput>\n<muted>\.\.\. \(15 more lines, 25 total,<\/muted>/);
	assert.ok(!fresh.includes("n11"));
	// after it ran: the call is the header; the result is the engine's view (a new file's lines, or the diff)
	const done = { ...n, executionStarted: true, isPartial: false };
	const rows = Array.from({ length: 25 }, (_, i) => `+${String(i + 1).padStart(2)} n${i + 1}`).join("\n");
	assert.match(result("Write", done, textResult("Created", { created: true, lines: 25, diff: landed(rows, 25, 0) })), /^\n<toolOutput>n1<\/toolOutput>[\s\S]*\(15 more lines, 25 total,/);
	assert.equal(call("Write", done), "<toolTitle>*Write*</toolTitle> <accent>new.txt</accent> <toolDiffAdded>+25</toolDiffAdded> <toolDiffRemoved>-0</toolDiffRemoved>");
	const over = { ...c, executionStarted: true, isPartial: false, state: {} };
	const big = landed("- 1 a\n+ 1 b", 1200, 1100, { omittedRows: 1300 });
	assert.match(result("Write", { ...over, expanded: true }, textResult("Wrote", { created: false, lines: 1200, diff: big }), { expanded: true }), /<muted>\.\.\. \(1300 more diff lines not kept; \/pct review show has the whole change\)<\/muted>/);
	// a diff that hit the engine's deadline: bounded counts and the engine's summary, no rows
	const slow = landed("", 20000, 20000, { exact: false, summary: "20000 → 20000 lines: too many changes to compare within 250 ms; at most +20000 -20000" });
	const slowRow = { ...over, state: {} };
	assert.match(result("Write", slowRow, textResult("Wrote", { created: false, lines: 20000, diff: slow })), /^\n<warning>20000 → 20000 lines: too many changes/);
	assert.match(call("Write", slowRow), /<muted>≤<\/muted><toolDiffAdded>\+20000<\/toolDiffAdded>/);
});

test("apply_patch: while it runs, the files of the envelope; after, each file's diff from the engine", () => {
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
	// the result: one line per file with the engine's counts, then its rows (the envelope is not shown again)
	const done = { ...c, executionStarted: true, isPartial: false };
	const many = Array.from({ length: 20 }, (_, i) => `+${String(i + 1).padStart(2)} x${i + 1}`).join("\n");
	const ops = [
		{ operation: "add", path: "new.txt", diff: landed("+1 hello", 1, 0) },
		{ operation: "move", path: "src/b.js", from: "src/a.js", diff: landed(" 3 ctx\n- 4 old\n+ 4 new", 1, 1) },
		{ operation: "delete", path: "gone.txt" },
		{ operation: "add", path: "long.txt", diff: landed(many, 20, 0) },
	];
	assert.equal(call("apply_patch", done), "<toolTitle>*apply_patch*</toolTitle> <muted>3 files</muted> <toolDiffAdded>+2</toolDiffAdded> <toolDiffRemoved>-1</toolDiffRemoved>");
	const out = result("apply_patch", done, textResult("Applied patch:", { operations: ops }));
	assert.match(out, /^\n<warning>A<\/warning> <accent>new\.txt<\/accent> <toolDiffAdded>\+1<\/toolDiffAdded> <toolDiffRemoved>-0<\/toolDiffRemoved>\n  <toolDiffAdded>\+1 hello<\/toolDiffAdded>/);
	assert.match(out, /<warning>R<\/warning> <accent>src\/a\.js → src\/b\.js<\/accent>[^\n]*\n  <toolDiffContext> 3 ctx<\/toolDiffContext>\n  <toolDiffRemoved>- 4 old<\/toolDiffRemoved>\n  <toolDiffAdded>\+ 4 new<\/toolDiffAdded>/);
	assert.match(out, /<warning>D<\/warning> <accent>gone\.txt<\/accent><muted> deleted<\/muted>/);
	// collapsed: 12 rows across the files (1 + 3 + 8 of long.txt), then the count of the rest
	assert.match(out, /x8<\/toolDiffAdded>\n<muted>\.\.\. \(12 more lines,/);
	assert.ok(!out.includes("x9<"));
	assert.ok(!out.includes("Applied patch"));
	assert.match(result("apply_patch", { ...done, expanded: true }, textResult("", { operations: ops }), { expanded: true }), /x20<\/toolDiffAdded>$/);
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

test("permission cards: the command, the diff, the path and the outside-the-workspace flag", async () => {
	const dir = tempDir("pct-card-");
	writeFileSync(join(dir, "app.py"), "one\ntwo\n");
	const ws = (path) => ({ ok: true, root: "workspace", canonical: join(dir, path), path });
	assert.equal(await cardText("Bash", { command: "rm -rf build\nmake" }, null, dir), `Allow Bash to run this command?\n$ rm -rf build\n  make\nin the workspace (${dir})`);
	assert.equal(
		await cardText("Edit", { path: "app.py", tag: "T", ops: "PUT 2.=2:\n+TWO" }, ws("app.py"), dir),
		"Allow Edit to change app.py? (+1 -1)\n-2 two\n+2 TWO",
	);
	assert.equal(await cardText("Write", { path: "app.py", content: "one\n2\n" }, ws("app.py"), dir), "Allow Write to overwrite app.py? (+1 -1)\n 1 one\n-2 two\n+2 2");
	assert.equal(await cardText("Write", { path: "n.txt", content: "x\n" }, ws("n.txt"), dir), "Allow Write to create n.txt? (+1 -0)\n+1 x");
	const ext = { ok: true, root: "external", external: "dotdot-escape", canonical: "/etc/hosts", path: "../../etc/hosts" };
	assert.equal(await cardText("Read", { path: "../../etc/hosts" }, ext, dir), "Allow Read to read /etc/hosts (outside the workspace: dotdot-escape, a ../ path that leaves the workspace)?");
	const long = Array.from({ length: 50 }, (_, i) => `echo ${i}`).join("\n");
	const card = (await cardText("Bash", { command: long }, null, dir)).split("\n");
	assert.equal(card.length, 1 + 30 + 1 + 1);
	assert.match(card[31], /^… 20 more lines/);
});

test("with Pi's real theme, the Edit diff is Pi's renderDiff (its removed/added colours)", () => {
	initTheme("dark", false);
	const c = ctx({ args: { path: "x.txt", ops: "PUT 1.=1:\n+new line" }, executionStarted: true, isPartial: false });
	const r = textResult("", { added: 1, removed: 1, diff: landed("-1 old line\n+1 new line", 1, 1) });
	const out = renderersFor("Edit").renderResult(r, { expanded: false, isPartial: false }, theme, c).render(WIDTH).join("\n");
	const removed = /(\x1b\[[0-9;]*m)-1 old/.exec(out);
	const added = /(\x1b\[[0-9;]*m)\+1 new/.exec(out);
	assert.ok(removed && added, "both rows are coloured by the theme");
	assert.notEqual(removed[1], added[1], "removed and added rows in different colours");
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

test("running work: a job past codeMode.longRunningSeconds is called out in the footer with its elapsed time and CPU", async () => {
	const { footerText, longRunning, cpuPercent, groupCpuMs, forgetJobs, noteResult, jobsOf } = await import("../src/pi/status.ts");
	assert.equal(footerText("1 cell", []), "pct: 1 cell");
	assert.equal(footerText("1 cell", [{ kind: "cell", id: "cell-3", elapsedMs: 1_144_000, cpuPercent: 94.4 }]), "pct: 1 cell · cell-3 running 19m 4s at 94% CPU");
	assert.equal(
		footerText("1 task · 1 cell", [{ kind: "task", id: "bg-1", elapsedMs: 400_000, cpuPercent: null }, { kind: "cell", id: "cell-1", elapsedMs: 300_000, cpuPercent: 0 }]),
		"pct: 1 task · 1 cell · bg-1 running 6m 40s CPU n/a (+1 more running long)",
	);
	// The first sample averages over the whole run; later ones over the interval since the previous sample.
	assert.equal(cpuPercent("t:a", 30_000, 60_000, 1_000_000), 50);
	assert.equal(cpuPercent("t:a", 31_000, 61_000, 1_001_000), 100);
	assert.equal(cpuPercent("t:a", null, 62_000, 1_002_000), null);
	// At the threshold a cell is called out; one millisecond before it, not; shell sessions never are.
	forgetJobs();
	const shared = new Map([
		["code", { runningCells: () => 1, cellCpu: () => [{ cellId: "cell-1", cpuMs: 150_000 }] }],
		["shell", { status: () => ({ running: 0 }) }],
	]);
	noteResult("exec", { code: "while (true) {}" }, { status: "running", cellId: "cell-1", output: "" });
	const [cell] = jobsOf({ shared }).list;
	const at = cell.since + 300_000;
	assert.deepEqual(longRunning({ shared }, [cell], 300_000, at - 1), []);
	assert.deepEqual(longRunning({ shared }, [cell], 300_000, at), [{ kind: "cell", id: "cell-1", elapsedMs: 300_000, cpuPercent: 50 }]);
	assert.deepEqual(longRunning({ shared }, [{ ...cell, kind: "shell" }], 300_000, at), []);
	forgetJobs();
	// A task's CPU comes with the engine's task list (`cpuMs`, read from /proc in Rust): no file reads here.
	const task = (cpuMs) => ({ backgroundTaskId: "bg-1", command: "make", status: "running", durationMs: 400_000, stdoutBytes: 0, stderrBytes: 0, stdoutTail: [], stderrTail: [], cpuMs });
	for (const [cpuMs, want] of [[200_000, 50], [undefined, null]]) {
		const withTask = new Map([...shared, ["host.runtime", { session: { taskList: () => ({ ok: true, text: "", tasks: [task(cpuMs)] }) } }]]);
		const [t] = jobsOf({ shared: withTask }).list.filter((x) => x.kind === "task");
		const long = longRunning({ shared: withTask }, [t], 300_000, t.since + 400_000);
		assert.equal(long[0].cpuPercent, want, `cpuMs ${cpuMs}`);
	}
	assert.equal(typeof groupCpuMs, "undefined", "the footer no longer scans /proc in JavaScript");
});

test("running work: a task's last output lines from the engine (both streams), a cell's and a shell's from the results", async () => {
	const { jobsOf, noteResult, forgetJobs, jobOutput, outputLines, JOB_LINES, JOB_OUTPUT_LINES } = await import("../src/pi/status.ts");
	forgetJobs();
	const tail = { backgroundTaskId: "bg-1", command: "npm test", status: "running", durationMs: 1_000, stdoutBytes: 30, stderrBytes: 5, stdoutTail: ["a", "b", "c"], stderrTail: ["warn"] };
	let outputAsked;
	const session = {
		taskList: () => ({ ok: true, text: "", tasks: [tail] }),
		taskOutput: async (a) => {
			outputAsked = a;
			return a.backgroundTaskId === "bg-1" ? { ok: true, text: "head\n[stdout]\na\nb\nc\n", task: { status: "running" } } : { ok: false, code: "NOT_FOUND", message: "no" };
		},
	};
	const shared = new Map([
		["host.runtime", { session }],
		["code", { runningCells: () => 1 }],
		["shell", { status: () => ({ running: 0 }) }],
	]);
	noteResult("exec", { code: "for(;;) print(i++)" }, { status: "running", cellId: "cell-1", output: "1\n2\n\x1b[31m3\n4\n" });
	noteResult("wait", {}, { status: "running", cellId: "cell-1", output: "5\n" });
	const [t, c] = jobsOf({ shared }).list;
	assert.equal(JOB_LINES, 3);
	assert.deepEqual(t.lines, ["b", "c", "stderr: warn"], "the last 3 of stdout's then stderr's tail");
	assert.deepEqual(c.lines, ["5"], "a read with output replaces the lines");
	assert.deepEqual((await jobOutput({ shared }, "bg-1")).lines, ["head", "[stdout]", "a", "b", "c"]);
	assert.deepEqual(outputAsked, { backgroundTaskId: "bg-1" });
	const cell = await jobOutput({ shared }, "cell-1");
	assert.deepEqual(cell.lines, ["1", "2", "\\x1b[31m3", "4", "5"], "every read's output, sanitised");
	assert.equal(await jobOutput({ shared }, "nope"), undefined);
	// Bounded: the last JOB_OUTPUT_LINES, the first line says how many were left out.
	const many = Array.from({ length: JOB_OUTPUT_LINES + 5 }, (_, i) => `l${i}`).join("\n");
	const shown = outputLines(many, undefined);
	assert.equal(shown.length, JOB_OUTPUT_LINES + 1);
	assert.equal(shown[0], "… 5 earlier lines not shown");
	assert.equal(shown.at(-1), `l${JOB_OUTPUT_LINES + 4}`);
	assert.equal(outputLines("x\n", undefined).length, 1, "exactly at the bound: nothing said");
	forgetJobs();
});

test("review: a change named as the person knows it, states in words, the later changes that block a rollback", async () => {
	const { changeName, rowText, laterChanges } = await import("../src/pi/review.ts");
	// `version` is the engine's record format (always 1), not the change's place: the listing's order is.
	const ch = (n, path, tool, state = "active", extra = {}) => ({ version: 1, path, tool, by: extra.agent ? `${extra.agent} (Task)` : tool, state, row: `#${n} M ${path}  ${tool}  +1 -1  ${state}`, snapshotId: `s${n}`, ...extra });
	const list = [ch(1, "app.py", "Write"), ch(2, "other.py", "Edit"), ch(3, "app.py", "Edit"), ch(4, "app.py", "apply_patch", "rolledBack")];
	assert.equal(changeName(list[2]), "#3 Edit app.py");
	assert.equal(changeName(ch(5, "app.py", "Edit", "active", { agent: "writer" })), "#5 writer (Task) app.py", "a delegate's change names the delegate");
	assert.equal(rowText(list[3].row), "#4 M app.py  apply_patch  +1 -1  rolled back");
	assert.deepEqual(laterChanges(list, list[0]).map(changeName), ["#3 Edit app.py"]);
	assert.deepEqual(laterChanges(list, list[2]), []);
});

test("a Write, Edit or apply_patch call that ended in an error (refused by Plan, denied, failed) promises no counts in its header", async () => {
	const dir = tempDir("pct-render-");
	const patch = "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch";
	for (const [tool, args] of [["Write", { path: "n.txt", content: "x\n" }], ["Edit", { path: "n.txt", tag: "0000", ops: "REM" }], ["apply_patch", { patch }]]) {
		const c = ctx({ args, cwd: dir });
		// Before it runs: a Write's view is made off the main thread (drawn again when it arrives), a patch's at once.
		const ok = tool === "Write" ? await callWhenReady(tool, c) : call(tool, c);
		if (tool !== "Edit") assert.match(ok, /<toolDiffAdded>\+1<\/toolDiffAdded>/, `${tool} before it ran: ${ok}`);
		// The same row once the call ended in an error: its view is still known, but the header shows no counts.
		Object.assign(c, { isError: true, executionStarted: true, isPartial: false });
		const refused = call(tool, c);
		assert.doesNotMatch(refused, /toolDiff(Added|Removed)/, `${tool} after a refusal: ${refused}`);
	}
});

test("/pct jobs widget: each job with its last output, `stopping…` until the stop returns, the stop confirmed on screen", async () => {
	const { jobsLines, jobsWidget } = await import("../src/pi/render/jobs.ts");
	const plainTheme = { fg: (_c, s) => s, bg: (_c, s) => s, bold: (s) => s };
	const now = Date.now();
	const jobs = {
		tasks: 1,
		cells: 1,
		shells: 0,
		list: [
			{ kind: "task", id: "bg-1", what: "npm run dev", since: now - 3_000, last: "listening on :3000", lines: ["compiled", "listening on :3000"], status: "running" },
			{ kind: "cell", id: "cell-2", what: "while (true) {}", since: now - 65_000, status: "running" },
		],
	};
	const lines = jobsLines(plainTheme, 100, jobs, 1, new Set(["cell-2"]), { text: "Stopped task bg-9.", ok: true });
	assert.equal(lines[0], "Running: 1 task · 1 cell");
	assert.match(lines[2], /^  task bg-1  npm run dev  3s$/);
	assert.equal(lines[3], "    compiled");
	assert.equal(lines[4], "    listening on :3000");
	assert.match(lines[5], /^> cell cell-2  while \(true\) \{\}  1m 5s  stopping…$/);
	assert.ok(lines.includes("Stopped task bg-9."));
	// Driven as Pi's custom UI: Enter stops the selected job; the list is read again when the stop returns, so the
	// stopped job is gone from the screen at once, and the confirmation is shown.
	let list = jobs.list;
	let renders = 0;
	let component;
	const closed = jobsWidget(
		{
			ui: {
				custom: (factory) =>
					new Promise((resolve) => {
						component = factory({ requestRender: () => renders++ }, plainTheme, {}, resolve);
					}),
			},
		},
		{
			list: () => ({ tasks: list.filter((j) => j.kind === "task").length, cells: list.filter((j) => j.kind === "cell").length, shells: 0, list }),
			stop: async (j) => {
				list = list.filter((x) => x.id !== j.id);
				return `Stopped task ${j.id}.`;
			},
			output: async (j) => ({ title: `task ${j.id}: running`, lines: Array.from({ length: 45 }, (_, i) => `out ${i + 1}`) }),
		},
	);
	assert.match(component.render(100).join("\n"), /> task bg-1/);
	// o opens the selected job's full output at its end; ↑ and PgUp scroll, o goes back to the list.
	component.handleInput("o");
	await new Promise((r) => setImmediate(r));
	let view = component.render(100);
	assert.equal(view[0], "task bg-1: running");
	assert.equal(view[2], "  out 26");
	assert.equal(view.at(-3), "  out 45");
	assert.match(view.at(-1), /^lines 26-45 of 45 · /);
	component.handleInput("\x1b[5~"); // PgUp
	component.handleInput("\x1b[A"); // ↑
	view = component.render(100);
	assert.equal(view[2], "  out 5");
	assert.match(view.at(-1), /^lines 5-24 of 45 · /);
	component.handleInput("o");
	assert.match(component.render(100).join("\n"), /> task bg-1/);
	component.handleInput("\r");
	assert.match(component.render(100).join("\n"), /task bg-1  npm run dev  \ds  stopping…/);
	await new Promise((r) => setImmediate(r));
	const after = component.render(100).join("\n");
	assert.doesNotMatch(after, /bg-1  npm/);
	assert.match(after, /Running: 1 cell/);
	assert.match(after, /Stopped task bg-1\./);
	assert.ok(renders > 0);
	component.handleInput("\x1b");
	assert.equal(await closed, true);
});

test("rows are cut to the width they are drawn at, with an ASCII marker counting what was cut (a wrapped or non-ASCII row is what makes pi-tui slow)", async () => {
	const { fitRow } = await import("../src/pi/render/rows.ts");
	const { visibleWidth } = await import("@earendil-works/pi-tui");
	assert.deepEqual(fitRow("+1 short", 20), { text: "+1 short", cost: 0 });
	// Exactly at the width: kept whole; one over: cut, the marker counting the characters not shown.
	assert.equal(fitRow("x".repeat(20), 20).text, "x".repeat(20));
	assert.equal(fitRow(`-2 ${"x".repeat(30)}`, 20).text, `-2 ${"x".repeat(9)}...(+21)`);
	assert.equal(fitRow("+3 a\tb", 20).text, "+3 a   b", "a tab is three spaces, as Pi draws it");
	// The engine's rows of 400 characters end with `…`: past the width, so the row is cut as ASCII, at no cost.
	assert.deepEqual(fitRow(`+1 ${"m".repeat(400)}…`, 20), { text: `+1 ${"m".repeat(8)}...(+393)`, cost: 0 });
	// Non-ASCII rows are measured in columns (CJK is two wide), a surrogate pair is never split, and they cost budget.
	const cjk = fitRow("漢".repeat(30), 20);
	assert.ok(visibleWidth(cjk.text) <= 20 && cjk.text.startsWith("漢漢") && /\.\.\.\(\+\d+\)$/.test(cjk.text), cjk.text);
	assert.ok(cjk.cost > 0);
	assert.equal(fitRow(`12345678😀xyz`, 20).text, "12345678😀xyz");
	const emoji = fitRow(`1234567890123😀xyz😀😀`, 20);
	assert.ok(visibleWidth(emoji.text) <= 20 && !/[\ud800-\udbff]$/.test(emoji.text.replace(/\.\.\.\(\+\d+\)$/, "")), emoji.text);
	for (const w of [20, 37, 80]) for (const r of ["é".repeat(200), "😀".repeat(200), `a${"\u0301".repeat(50)}${"b".repeat(100)}`]) assert.ok(visibleWidth(fitRow(r, w).text) <= w, `${w}: ${r.slice(0, 10)}`);
});

test("a row view keeps its lines between redraws, draws wide characters within a budget, and bounds expanded output", async () => {
	const { RowView, WIDE_BUDGET } = await import("../src/pi/render/rows.ts");
	const { visibleWidth } = await import("@earendil-works/pi-tui");
	let styled = 0;
	const part = (rows, key = "k") => ({ key, rows, keep: "head", style: (cut) => (styled++, cut), notDrawn: (n) => `(${n} not drawn)` });
	const rows = Array.from({ length: 500 }, (_, i) => `+${i} ${"z".repeat(300)}`);
	const v = new RowView();
	v.set(["", part(rows), "", "Elapsed 1.0s"]);
	const first = v.render(120);
	assert.equal(first.length, 503);
	assert.ok(first.every((l) => visibleWidth(l) <= 120));
	assert.equal(v.render(120), first, "the same array while nothing changed (Pi's row box keeps its lines then)");
	// Every second a running row's timer changes: the rows are not cut or styled again.
	v.set(["", part(rows), "", "Elapsed 2.0s"]);
	const second = v.render(120);
	assert.equal(styled, 1);
	assert.equal(second[502], "Elapsed 2.0s");
	assert.equal(v.render(80).length, 503);
	assert.equal(styled, 2, "a new width draws the rows again");
	// 500 rows of emoji: drawn until the budget is spent, the rest counted.
	const wide = Array.from({ length: 500 }, () => "😀".repeat(100));
	v.set([part(wide, "wide")]);
	const w = v.render(120);
	assert.ok(w.length < 100, `${w.length} lines`);
	assert.match(w[w.length - 1], /^\(\d+ not drawn\)$/);
	assert.equal(Number(/\d+/.exec(w[w.length - 1])[0]) + w.length - 1, 500);
	assert.ok(WIDE_BUDGET > 0);
	// A tail keeps the last rows when the budget runs out.
	v.set([{ ...part(wide, "tail"), keep: "tail" }]);
	assert.match(v.render(120)[0], /^\(\d+ not drawn\)$/);
});

test("expanded Bash output: one screen row per line, long lines cut with a marker, at most 500 lines drawn", () => {
	const stdout = `${Array.from({ length: 2000 }, (_, i) => `line ${i + 1}`).join("\n")}\n${"y".repeat(100_000)}\n`;
	const c = ctx({ args: { command: "gen" }, isPartial: false, expanded: true });
	const out = lines(renderersFor("Bash").renderResult(textResult("", { stdout, stderr: "", exitCode: 0 }), { expanded: true, isPartial: false }, theme, c));
	assert.ok(out.some((l) => /\.\.\. \(1501 earlier lines not drawn; the model received them all\)/.test(l)), out.slice(0, 3).join("\n"));
	assert.ok(out.some((l) => l.includes("<toolOutput>line 2000</toolOutput>")));
	assert.ok(!out.some((l) => l.includes(">line 1499<")));
	const long = out.find((l) => l.includes("yyyy"));
	assert.match(long, /y\.\.\.\(\+\d+\)<\/toolOutput>$/);
	assert.ok(out.length < 510, `${out.length} lines`);
});
