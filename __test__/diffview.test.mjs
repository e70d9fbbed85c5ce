// The engine's screen diffs (src/diffview, src/bind/diffview.rs, docs/render.md "Diffs") through the addon: the
// rows in Pi's diff form, the deadline that gives counts and a summary instead of rows, the row cap, a Write's
// preview, and the diff every landed Write, Edit and apply_patch carries with its result.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, mkdirSync, rmSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";

const dirs = [];
after(() => {
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function temp() {
	const d = realpathSync(mkdtempSync(join(tmpdir(), "pct-diffview-")));
	dirs.push(d);
	return d;
}
const numbered = (n, f) => Array.from({ length: n }, (_, i) => `${f(i + 1)}\n`).join("");

test("diffTexts: numbered rows with three lines of context and a gap between distant changes", async () => {
	const before = numbered(30, (i) => `l${i}`);
	const after = before.replace("l5\n", "five\n").replace("l25\n", "");
	const d = await native.diffTexts(before, after);
	assert.deepEqual(d, {
		text: ["  2 l2", "  3 l3", "  4 l4", "- 5 l5", "+ 5 five", "  6 l6", "  7 l7", "  8 l8", "    ...", " 22 l22", " 23 l23", " 24 l24", "-25 l25", " 26 l26", " 27 l27", " 28 l28"].join("\n"),
		added: 1,
		removed: 2,
		exact: true,
		omittedRows: 0,
		firstChangedLine: 5,
		beforeLines: 30,
		afterLines: 29,
	});
	const same = await native.diffTexts(before, before);
	assert.equal(same.text, "");
	assert.equal(same.added + same.removed, 0);
});

test("diffTexts: a diff past its deadline gives counts (upper bounds) and a summary, no rows", async () => {
	const before = numbered(3_000, (i) => `old ${i}`);
	const after = numbered(3_000, (i) => `new ${i}`);
	const d = await native.diffTexts(before, after, 0);
	assert.equal(d.text, "");
	assert.equal(d.exact, false);
	assert.ok(d.added <= 3_000 && d.removed <= 3_000 && d.added + d.removed > 0, JSON.stringify(d));
	assert.match(d.summary, /^3000 → 3000 lines: too many changes to compare within 0 ms; at most \+\d+ -\d+$/);
	// A change the diff finishes at once is exact even with no time at all to spare.
	const quick = await native.diffTexts("a\n", "a\n", 0);
	assert.equal(quick.exact, true);
});

test("diffTexts: at most 500 rows, the rest counted; long lines cut at 400 characters", async () => {
	const before = numbered(1_200, (i) => `l${i}`);
	const after = numbered(1_200, (i) => (i % 2 ? `l${i}` : `L${i}`));
	const d = await native.diffTexts(before, after, 60_000);
	assert.equal(d.exact, true);
	assert.equal(d.text.split("\n").length, 500);
	assert.equal((d.added + d.removed), 1_200);
	// Every changed row and the context rows between them: 600 removed, 600 added, 600 kept, minus the first 500.
	assert.equal(d.omittedRows, 1_800 - 500);
	const wide = await native.diffTexts("x\n", `${"y".repeat(1_000)}\n`);
	assert.equal(wide.text.split("\n")[1], `+1 ${"y".repeat(400)}…`);
});

test("writePreview: the file on disk against the new content, or the new file's lines", async () => {
	const dir = temp();
	const p = join(dir, "a.txt");
	let w = await native.writePreview(p, "one\ntwo\n");
	assert.equal(w.created, true);
	assert.equal(w.diff.text, "+1 one\n+2 two");
	writeFileSync(p, "one\n2\n");
	w = await native.writePreview(p, "one\ntwo\n");
	assert.equal(w.created, false);
	assert.equal(w.diff.text, " 1 one\n-2 2\n+2 two");
	w = await native.writePreview(dir, "x\n");
	assert.equal(w.diff.summary, "not a regular file");
});

test("a landed Write, Edit and apply_patch carry their diff in the result", async () => {
	const dir = temp();
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	writeFileSync(join(dir, "ws", "app.py"), numbered(12, (i) => `line ${i}`));
	const s = new native.HostSession(join(dir, "ws"), join(dir, "agent"), "sess-diff");
	const created = await s.write({ path: "new.txt", content: "a\nb\n" });
	assert.equal(created.ok, true);
	assert.equal(created.diff.text, "+1 a\n+2 b");
	const read = await s.read({ path: "app.py" });
	const edited = await s.edit({ path: "app.py", tag: read.tag, ops: "PUT 6.=6:\n+line SIX\n+line 6b" }, {});
	assert.equal(edited.ok, true, edited.message);
	assert.equal(edited.diff.text, ["  3 line 3", "  4 line 4", "  5 line 5", "- 6 line 6", "+ 6 line SIX", "+ 7 line 6b", "  7 line 7", "  8 line 8", "  9 line 9"].join("\n"));
	assert.deepEqual([edited.diff.added, edited.diff.removed, edited.diff.firstChangedLine], [2, 1, 6]);
	const over = await s.write({ path: "app.py", content: "only\n" });
	assert.equal(over.diff.removed, 13);
	assert.equal(over.diff.added, 1);
	const patched = await native.applyPatch(join(dir, "ws"), "*** Begin Patch\n*** Update File: new.txt\n@@\n a\n-b\n+B\n*** Add File: n2.txt\n+hi\n*** Delete File: app.py\n*** End Patch\n");
	assert.equal(patched.ok, true, patched.text);
	assert.deepEqual(
		patched.operations.map((o) => [o.operation, o.path, o.diff?.text ?? null]),
		[
			["update", "new.txt", " 1 a\n-2 b\n+2 B"],
			["add", "n2.txt", "+1 hi"],
			["delete", "app.py", null],
		],
	);
});
