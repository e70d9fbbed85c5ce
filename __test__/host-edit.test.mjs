// Addon tests of HostSession.write and HostSession.edit (src/host/write.rs, src/host/edit/, src/bind/host_edit.rs):
// the JS-facing shapes and the round trips the model makes — Read → Edit → Read, a stale tag recovered and one
// refused, unseen lines revealed then edited, Grep then Edit on matched lines, Write then Edit, a CRLF+BOM file
// keeping both, the retry budget per turn, the external-path approval swapped for a symlink.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, rmSync, realpathSync, renameSync, symlinkSync, statSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";

const require = createRequire(import.meta.url);
const native = require("../index.js");
const indexJs = require.resolve("../index.js");

const dirs = [];
after(() => {
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function session(files = {}) {
	const dir = realpathSync(mkdtempSync(join(tmpdir(), "pct-edit-")));
	dirs.push(dir);
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	for (const [rel, content] of Object.entries(files)) {
		mkdirSync(join(dir, "ws", rel, ".."), { recursive: true });
		writeFileSync(join(dir, "ws", rel), content);
	}
	const ws = (rel) => join(dir, "ws", rel);
	return { dir, ws, s: new native.HostSession(join(dir, "ws"), join(dir, "agent"), "sess-1") };
}

/** The spec's tag, computed independently. */
function tagOf(text) {
	const norm = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
	const hashed = norm
		.split("\n")
		.map((l) => l.replace(/[ \t\r]+$/, ""))
		.join("\n");
	return createHash("sha256").update(hashed).digest("hex").slice(-4).toUpperCase();
}

test("Read → Edit → Read round trip", async () => {
	const { s, ws } = session({ "src/a.js": "const a = 1;\nconst b = 2;\nexport { a, b };\n" });
	const r = await s.read({ path: "src/a.js" });
	const e = await s.edit({ path: "src/a.js", tag: r.tag, ops: "PUT 2.=2:\n+const b = 3;\n+const c = 4;\nPUT 3.=3:\n+export { a, b, c };" });
	assert.equal(e.ok, true, e.message);
	const after = "const a = 1;\nconst b = 3;\nconst c = 4;\nexport { a, b, c };\n";
	assert.equal(readFileSync(ws("src/a.js"), "utf8"), after);
	assert.equal(e.tag, tagOf(after));
	assert.deepEqual([e.path, e.root, e.added, e.removed, e.deleted, e.warnings], ["src/a.js", "workspace", 3, 2, false, []]);
	assert.match(e.text, new RegExp(`\\[src/a\\.js#${e.tag}\\]\\n1:const a = 1;\\n2:const b = 3;`));
	const r2 = await s.read({ file_path: "src/a.js" });
	assert.equal(r2.tag, e.tag);
	// The new tag is usable at once (Edit's result records the new version).
	const e2 = await s.edit({ file_path: "src/a.js", tag: e.tag, ops: "CUT 3.=3" });
	assert.equal(e2.ok, true, e2.message);
});

test("a stale tag is carried over by drift recovery; an ambiguous one is refused with the live tag", async () => {
	const { s, ws } = session({ "m.py": "def f():\n    return 1\n\ndef g():\n    return 2\n" });
	const r = await s.read({ path: "m.py" });
	writeFileSync(ws("m.py"), "import os\n\ndef f():\n    return 1\n\ndef g():\n    return 2\n");
	const e = await s.edit({ path: "m.py", tag: r.tag, ops: "PUT 5.=5:\n+    return 20" });
	assert.equal(e.ok, true, e.message);
	assert.equal(readFileSync(ws("m.py"), "utf8"), "import os\n\ndef f():\n    return 1\n\ndef g():\n    return 20\n");
	assert.match(e.warnings[0], /stale/);
	// The edited block copied above: the lines around it (a blank line above) tell the original from the copy.
	const r2 = await s.read({ path: "m.py" });
	const one = readFileSync(ws("m.py"), "utf8");
	writeFileSync(ws("m.py"), "def g():\n    return 20\n" + one);
	const g = await s.edit({ path: "m.py", tag: r2.tag, ops: "PUT 7.=7:\n+    return 21" });
	assert.equal(g.ok, true, g.message);
	assert.equal(readFileSync(ws("m.py"), "utf8"), "def g():\n    return 20\n" + one.replace("return 20", "return 21"));
	// Now the whole file is duplicated: nothing tells the copies apart, so the place is ambiguous.
	const dup = one + one;
	writeFileSync(ws("m.py"), dup);
	const f = await s.edit({ path: "m.py", tag: r2.tag, ops: "PUT 7.=7:\n+    return 3" });
	assert.equal(f.ok, false);
	assert.equal(f.code, "EDIT_TAG_MISMATCH");
	assert.equal(f.liveTag, tagOf(dup));
	assert.match(f.message, new RegExp(`\\[m\\.py#${f.liveTag}\\]`));
	assert.equal(readFileSync(ws("m.py"), "utf8"), dup);
});

test("unseen lines are revealed, then the same edit lands", async () => {
	const { s, ws } = session({ "big.txt": Array.from({ length: 30 }, (_, i) => `row ${i + 1}`).join("\n") + "\n" });
	const r = await s.read({ path: "big.txt", limit: 10 });
	const ops = "PUT 20.=21:\n+twenty";
	const f = await s.edit({ path: "big.txt", tag: r.tag, ops }, { turn: "t1" });
	assert.equal(f.ok, false);
	assert.equal(f.code, "EDIT_LINES_UNSEEN");
	assert.match(f.message, /20:row 20\n21:row 21$/);
	assert.equal(f.budgetExhausted, false);
	const e = await s.edit({ path: "big.txt", tag: r.tag, ops }, { turn: "t1" });
	assert.equal(e.ok, true, e.message);
	assert.match(readFileSync(ws("big.txt"), "utf8"), /row 19\ntwenty\nrow 22\n/);
});

test("Grep then Edit on matched lines", async () => {
	const lines = Array.from({ length: 20 }, (_, i) => `fn f${i + 1}() {}`);
	lines[1] = "// TODO: one";
	lines[17] = "// TODO: two";
	const { s, ws } = session({ "lib/x.rs": lines.join("\n") + "\n" });
	const g = await s.grep({ pattern: "TODO", path: "lib" });
	assert.equal(g.ok, true);
	const tag = g.tags["lib/x.rs"];
	// Line 10 was not among the matched lines: refused, revealed.
	const f = await s.edit({ path: "lib/x.rs", tag, ops: "PUT 10.=10:\n+fn z() {}" });
	assert.equal(f.code, "EDIT_LINES_UNSEEN");
	assert.match(f.message, /10:fn f10\(\) \{\}$/);
	const e = await s.edit({ path: "lib/x.rs", tag, ops: "PUT 2.=2:\n+// done: one\nCUT 18.=18" });
	assert.equal(e.ok, true, e.message);
	const want = lines.filter((_, i) => i !== 17).map((l, i) => (i === 1 ? "// done: one" : l));
	assert.equal(readFileSync(ws("lib/x.rs"), "utf8"), want.join("\n") + "\n");
});

test("Write then Edit; Write strips a pasted render and keeps the mode", async () => {
	const { s, ws } = session();
	const w = await s.write({ path: "new/dir/f.sh", content: "[new/dir/f.sh#ABCD]\n1:#!/bin/sh\n2:echo hi\n" });
	assert.equal(w.ok, true, w.message);
	assert.deepEqual([w.created, w.lines, w.bytes, w.root], [true, 2, 18, "workspace"]);
	assert.equal(w.stripped.length, 2);
	assert.equal(readFileSync(ws("new/dir/f.sh"), "utf8"), "#!/bin/sh\necho hi\n");
	assert.equal(w.tag, tagOf("#!/bin/sh\necho hi\n"));
	chmodSync(ws("new/dir/f.sh"), 0o755);
	const e = await s.edit({ path: "new/dir/f.sh", tag: w.tag, ops: "PUT >$:\n+echo bye" });
	assert.equal(e.ok, true, e.message);
	assert.equal(readFileSync(ws("new/dir/f.sh"), "utf8"), "#!/bin/sh\necho hi\necho bye\n");
	assert.equal(statSync(ws("new/dir/f.sh")).mode & 0o777, 0o755);
	const w2 = await s.write({ file_path: "new/dir/f.sh", content: "x" });
	assert.equal(w2.created, false);
	assert.equal(statSync(ws("new/dir/f.sh")).mode & 0o777, 0o755);
	const bad = await s.write({ path: "../escape.txt", content: "x" });
	assert.equal(bad.code, "PATH_OUTSIDE_WORKSPACE");
	assert.equal((await s.write({ path: "a" })).code, "INVALID_ARGUMENT");
});

test("a CRLF + BOM file keeps both", async () => {
	const text = "\uFEFFline one\r\nline two  \r\nline three";
	const { s, ws } = session({ "w.txt": text });
	const r = await s.read({ path: "w.txt" });
	assert.equal(r.tag, tagOf(text));
	const e = await s.edit({ path: "w.txt", tag: r.tag, ops: "PUT 2.=2:\n+line 2\nPUT >$:\n+line four" });
	assert.equal(e.ok, true, e.message);
	assert.equal(readFileSync(ws("w.txt"), "utf8"), "\uFEFFline one\r\nline 2\r\nline three\r\nline four");
});

test("error codes reach JS with their shape; the retry budget stops a path per turn", async () => {
	const { s } = session({ "a.txt": "1\n2\n" });
	const r = await s.read({ path: "a.txt" });
	const call = (ops, tag = r.tag, turn = "T") => s.edit({ path: "a.txt", tag, ops }, { turn });
	assert.equal((await s.edit({ path: "a.txt", ops: "PUT 1.=1:\n+x" })).code, "EDIT_TAG_REQUIRED");
	assert.equal((await call("PUT 3.=3:\n+x")).code, "EDIT_RANGE_INVALID");
	assert.equal((await call("PUT 1*:\n+x")).code, "EDIT_BLOCK_UNRESOLVED");
	const last = await call("PUT 1.=1:\n+1");
	assert.deepEqual([last.code, last.budgetExhausted, last.failures], ["EDIT_NO_CHANGE", true, 3]);
	assert.match(last.message, /stop editing/);
	const refused = await call("PUT 1.=1:\n+x");
	assert.equal(refused.budgetExhausted, true);
	assert.equal(readFileSync(join(s.workspace, "a.txt"), "utf8"), "1\n2\n");
	// A new turn starts over.
	const ok = await call("PUT 1.=1:\n+x", r.tag, "U");
	assert.equal(ok.ok, true, ok.message);
	assert.equal((await call("REM", "0000", "U")).code, "EDIT_TAG_UNKNOWN");
});

test("failed patches share Edit's retry budget per prompt and path; a landed patch clears the count", async () => {
	const { s, ws } = session({ "a.txt": "1\n2\n", "b.txt": "b\n" });
	const r = await s.read({ path: "a.txt" });
	const bad = (turn) => s.edit({ path: "a.txt", tag: r.tag, ops: "PUT 9.=9:\n+x" }, { turn });
	// Two counted Edit failures, then a failed patch on the same file (absolute path, as the patch tool gives it).
	assert.equal((await bad("T")).failures, 1);
	assert.equal((await bad("T")).failures, 2);
	assert.equal(await s.notePatchResult("T", [ws("b.txt")], false), false, "another path has its own count");
	assert.equal(await s.notePatchResult("T", [ws("a.txt")], false), true, "the third counted failure spends the budget");
	const refused = await s.edit({ path: "a.txt", tag: r.tag, ops: "PUT 1.=1:\n+x" }, { turn: "T" });
	assert.deepEqual([refused.ok, refused.budgetExhausted], [false, true]);
	assert.equal(readFileSync(ws("a.txt"), "utf8"), "1\n2\n");
	// In a new prompt: two failures, a landed patch clears them, so two more still do not spend the budget.
	await bad("U");
	await bad("U");
	assert.equal(await s.notePatchResult("U", ["a.txt"], true), false);
	assert.equal((await bad("U")).failures, 1);
	assert.equal(await s.notePatchResult("U", [ws("a.txt")], false), false);
	assert.equal((await s.edit({ path: "a.txt", tag: r.tag, ops: "PUT 1.=1:\n+x" }, { turn: "U" })).ok, true);
});

test("an approved external path swapped for a symlink after approval is refused", async () => {
	const { s, dir } = session();
	mkdirSync(join(dir, "ext"));
	mkdirSync(join(dir, "evil"));
	writeFileSync(join(dir, "ext/f.txt"), "e\n");
	writeFileSync(join(dir, "evil/f.txt"), "keep\n");
	const raw = join(dir, "ext/f.txt");
	const info = s.resolvePath(raw);
	assert.equal(info.root, "external");
	const args = { path: raw, tag: tagOf("e\n"), ops: "PUT 1.=1:\n+x" };
	assert.equal((await s.edit(args)).code, "PATH_OUTSIDE_WORKSPACE");
	renameSync(join(dir, "ext"), join(dir, "ext-old"));
	symlinkSync(join(dir, "evil"), join(dir, "ext"));
	const f = await s.edit(args, { approvedPath: info.canonical });
	assert.equal(f.code, "PATH_OUTSIDE_WORKSPACE");
	assert.equal(readFileSync(join(dir, "evil/f.txt"), "utf8"), "keep\n");
	rmSync(join(dir, "ext"));
	renameSync(join(dir, "ext-old"), join(dir, "ext"));
	const e = await s.edit(args, { approvedPath: info.canonical });
	assert.equal(e.ok, true, e.message);
	assert.equal(e.root, "external");
	assert.equal(readFileSync(join(dir, "ext/f.txt"), "utf8"), "x\n");
	const w = await s.write({ path: raw, content: "y\n" }, { approvedPath: info.canonical });
	assert.equal(w.ok, true, w.message);
});

test("registers live for the session; MV and REM", async () => {
	const { s, ws } = session({ "a.txt": "keep\nmove me\nmove me too\n", "b.txt": "b1\nb2\n" });
	const ra = await s.read({ path: "a.txt" });
	assert.equal((await s.edit({ path: "a.txt", tag: ra.tag, ops: "CUT 2.=3 @blk" })).ok, true);
	const rb = await s.read({ path: "b.txt" });
	const e = await s.edit({ path: "b.txt", tag: rb.tag, ops: "PUT >1 @blk\nMV c/b.txt" });
	assert.equal(e.ok, true, e.message);
	assert.deepEqual([e.path, e.movedFrom], ["c/b.txt", "b.txt"]);
	assert.equal(readFileSync(ws("c/b.txt"), "utf8"), "b1\nmove me\nmove me too\nb2\n");
	const rem = await s.edit({ path: "c/b.txt", tag: e.tag, ops: "REM" });
	assert.equal(rem.deleted, true);
	assert.equal((await s.edit({ path: "a.txt", tag: "0000", ops: "PUT >1 @nope" })).code, "EDIT_TAG_UNKNOWN");
});

test("panics in write, edit and notePatchResult come back as internal-panic and Node lives on", () => {
	const { dir } = session({ "a.txt": "a\n" });
	const child = `
const n = require(${JSON.stringify(indexJs)});
const dir = process.argv[1];
(async () => {
	const s = new n.HostSession(dir + "/ws", dir + "/agent", "p");
	process.env.PCT_TEST_PANIC = "host.write,host.edit,host.notePatchResult";
	const w = await s.write({ path: "a.txt", content: "b" });
	const e = await s.edit({ path: "a.txt", tag: "0000", ops: "REM" });
	const np = await s.notePatchResult("t", ["a.txt"], false);
	const p = np.code + "|" + np.message;
	console.log(JSON.stringify({ w: w.code + "|" + w.message, e: e.code + "|" + e.message + "|" + e.budgetExhausted, p }));
})();`;
	const r = spawnSync(process.execPath, ["-e", child, dir], { encoding: "utf8" });
	assert.equal(r.status, 0, r.stderr);
	const out = JSON.parse(r.stdout);
	assert.match(out.w, /^internal-panic\|internal error in the pi-codex-toolkit engine \(host\.write/);
	assert.match(out.e, /^internal-panic\|internal error in the pi-codex-toolkit engine \(host\.edit.*\|false$/);
	assert.match(out.p, /^internal-panic\|internal error in the pi-codex-toolkit engine \(host\.notePatchResult/);
	assert.equal(readFileSync(join(dir, "ws/a.txt"), "utf8"), "a\n");
});

test("Edit REM with a review target records the deletion before it lands; rollback restores the bytes and mode", async () => {
	const { s, ws, dir } = session({ "gone.sh": "#!/bin/sh\r\necho keep me\r\n" });
	chmodSync(ws("gone.sh"), 0o750);
	const review = { agentDir: join(dir, "agent"), sessionId: "sess-1", messageId: "m-rem" };
	const r = await s.read({ path: "gone.sh" });
	const rem = await s.edit({ path: "gone.sh", tag: r.tag, ops: "REM" }, { review });
	assert.equal(rem.ok, true, rem.message);
	assert.equal(rem.deleted, true);
	assert.throws(() => statSync(ws("gone.sh")), /ENOENT/);
	// The change is recorded (a no-op recorder leaves the list empty and the rollback with nothing to restore).
	const listed = await native.reviewList(join(dir, "agent"), "sess-1");
	assert.deepEqual(listed.changes.map((c) => [c.row, c.tool, c.messageId, c.operation, c.status]), [
		["#1 D gone.sh  Edit  +0 -2  active", "Edit", "m-rem", "delete", "deleted"],
	]);
	const rb = await native.reviewRollback(join(dir, "agent"), "sess-1");
	assert.equal(rb.ok, true, rb.message);
	assert.equal(readFileSync(ws("gone.sh"), "utf8"), "#!/bin/sh\r\necho keep me\r\n");
	assert.equal(statSync(ws("gone.sh")).mode & 0o7777, 0o750);
});

test("Write lands content that only looks like Read rows exactly; a CR inside an Edit row is EDIT_BARE_CR", async () => {
	const { s, ws } = session({ "lf.txt": "a\nb\n" });
	for (const [path, content] of [["notes.txt", "10:30 meeting\n11:15 lunch\n"], ["ports.txt", "8080:80\n"], ["y.yml", "1: one\n2: two\n"]]) {
		const w = await s.write({ path, content });
		assert.equal(w.ok, true, w.message);
		assert.deepEqual(w.stripped, []);
		assert.equal(readFileSync(ws(path), "utf8"), content);
	}
	const r = await s.read({ path: "lf.txt" });
	const e = await s.edit({ path: "lf.txt", tag: r.tag, ops: "PUT 1.=1:\n+x\ry" });
	assert.equal(e.code, "EDIT_BARE_CR", e.message);
	assert.equal(readFileSync(ws("lf.txt"), "utf8"), "a\nb\n");
});

test("a line added inside a run of equal lines refuses the edit instead of writing the wrong one", async () => {
	// `sed -i '1a item'` after the Read: the `item` the model meant (line 3) could now be line 3 or 4.
	const { s, ws } = session({ "f.txt": "begin\nitem\nitem\nitem\nend\n" });
	const r = await s.read({ path: "f.txt" });
	const now = "begin\nitem\nitem\nitem\nitem\nend\n";
	writeFileSync(ws("f.txt"), now);
	const e = await s.edit({ path: "f.txt", tag: r.tag, ops: "PUT 3.=3:\n+ITEM" });
	assert.equal(e.ok, false);
	assert.equal(e.code, "EDIT_TAG_MISMATCH");
	assert.match(e.message, /so its place is ambiguous/);
	assert.match(e.message, new RegExp(`Redo the edit against the current lines below with tag ${tagOf(now)}`));
	assert.equal(readFileSync(ws("f.txt"), "utf8"), now);
	// The rows it shows count as seen under the live tag: the model's second call lands where it points.
	const e2 = await s.edit({ path: "f.txt", tag: e.liveTag, ops: "PUT 4.=4:\n+ITEM" });
	assert.equal(e2.ok, true, e2.message);
	assert.equal(readFileSync(ws("f.txt"), "utf8"), "begin\nitem\nitem\nITEM\nitem\nend\n");
});

test("an append after the last line lands with a stale warning though another line changed", async () => {
	const { s, ws } = session({ "f.txt": "first\nsecond\nthird\n" });
	const r = await s.read({ path: "f.txt" });
	writeFileSync(ws("f.txt"), "first\nSECOND\nthird\n");
	const e = await s.edit({ path: "f.txt", tag: r.tag, ops: "PUT >$:\n+fourth" });
	assert.equal(e.ok, true, e.message);
	assert.equal(readFileSync(ws("f.txt"), "utf8"), "first\nSECOND\nthird\nfourth\n");
	assert.match(e.warnings[0], /was stale/);
});

test("precheck: what the call would refuse is refused before the card, word for word; the rest passes", async () => {
	const { ws, s } = session({ "a.txt": "one\ntwo\n", "dir/x.txt": "x\n" });
	const ok = { ok: true };
	// Read: a folder (with the Glob suggestion), a missing file; a file passes. Each as the read itself says it.
	const dirRead = await s.precheck("Read", { path: "dir" });
	assert.deepEqual(dirRead, await s.read({ path: "dir" }));
	assert.deepEqual(dirRead.suggestion, { tool: "Glob", path: "dir", pattern: "*" });
	assert.deepEqual(await s.precheck("Read", { path: "nope.txt" }), await s.read({ path: "nope.txt" }));
	assert.equal((await s.precheck("Read", { path: "nope.txt" })).code, "NOT_FOUND");
	assert.equal((await s.precheck("Read", {})).code, "INVALID_ARGUMENT");
	assert.deepEqual(await s.precheck("Read", { path: "a.txt" }), ok);
	// Write: a folder is refused, a new file (even in a new folder) and an existing file pass; nothing is written.
	const dirWrite = await s.precheck("Write", { path: "dir", content: "x" });
	assert.equal(dirWrite.code, "INVALID_ARGUMENT");
	assert.equal(dirWrite.message, (await s.write({ path: "dir", content: "x" })).message);
	assert.deepEqual(await s.precheck("Write", { path: "new/deep/b.txt", content: "b" }), ok);
	assert.deepEqual(await s.precheck("Write", { path: "a.txt", content: "b" }), ok);
	assert.equal((await s.precheck("Write", { path: "a.txt" })).code, "INVALID_ARGUMENT");
	assert.equal(readFileSync(ws("a.txt"), "utf8"), "one\ntwo\n");
	// Edit: a malformed tag, bad ops, a missing file without a stand-in; the live tag passes (content is the call's).
	const tag = (await s.read({ path: "a.txt" })).tag;
	assert.deepEqual(await s.precheck("Edit", { path: "a.txt", tag, ops: "PUT 1.=1:\n+ONE" }, "T"), ok);
	assert.deepEqual(await s.precheck("Edit", { path: "a.txt", tag: "FFFF", ops: "PUT 1.=1:\n+ONE" }, "T"), ok, "an unknown tag needs the content: left to the call");
	const badTag = await s.precheck("Edit", { path: "a.txt", tag: "zz", ops: "PUT 1.=1:\n+ONE" }, "U");
	assert.deepEqual([badTag.code, badTag.failures, badTag.budgetExhausted], ["EDIT_TAG_REQUIRED", 1, false]);
	assert.equal((await s.precheck("Edit", { path: "a.txt", tag, ops: "FROB 1" }, "U")).code, "EDIT_PARSE_FAILED");
	const gone = await s.precheck("Edit", { path: "gone.txt", tag, ops: "PUT 1.=1:\n+ONE" }, "U");
	assert.equal(gone.code, "NOT_FOUND");
	// The refusals count against the retry budget as the call's would: the third spends it, the fourth is refused at once.
	assert.equal(gone.failures, 1, "another path, its own count");
	const third = await s.precheck("Edit", { path: "a.txt", tag: "zz", ops: "PUT 1.=1:\n+ONE" }, "U");
	assert.deepEqual([third.failures, third.budgetExhausted], [3, true]);
	const after = await s.precheck("Edit", { path: "a.txt", tag, ops: "PUT 1.=1:\n+ONE" }, "U");
	assert.deepEqual([after.budgetExhausted, /already failed 3 times/.test(after.message)], [true, true]);
	assert.equal(readFileSync(ws("a.txt"), "utf8"), "one\ntwo\n", "nothing was changed");
	// Word for word what the call says (in a new turn, with a fresh budget).
	assert.equal(badTag.message, (await s.edit({ path: "a.txt", tag: "zz", ops: "PUT 1.=1:\n+ONE" }, { turn: "V" })).message);
	// A missing path with a stand-in (a shown file of that name and tag) passes: the call rebinds it.
	const x = await s.read({ path: "dir/x.txt" });
	assert.deepEqual(await s.precheck("Edit", { path: "x.txt", tag: x.tag, ops: "PUT 1.=1:\n+X" }, "W"), ok);
	await assert.rejects(s.precheck("Glob", {}), /invalid-input/);
});
