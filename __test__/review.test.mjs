// Addon tests for review changes (src/review via src/bind/review.rs and applyPatch's review target): the JS-facing
// shapes, the listing rows, a diff, rollback of all (tree back byte for byte), the conflict guard, the sweep.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, readdirSync, statSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";
import { underTimer } from "./helpers/timer.mjs";

/** A workspace and an agent dir under one temp folder, removed after the test. */
function box(t, files = {}) {
	const base = mkdtempSync(join(tmpdir(), "pct-review-"));
	t.after(() => rmSync(base, { recursive: true, force: true }));
	const cwd = join(base, "work");
	const agentDir = join(base, "agent");
	mkdirSync(cwd);
	mkdirSync(agentDir);
	for (const [rel, content] of Object.entries(files)) {
		mkdirSync(join(cwd, rel, ".."), { recursive: true });
		writeFileSync(join(cwd, rel), content);
	}
	return { base, cwd, agentDir };
}

function tree(dir, base = dir, out = {}) {
	for (const name of readdirSync(dir).sort()) {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) tree(p, base, out);
		else out[p.slice(base.length + 1)] = readFileSync(p).toString("hex");
	}
	return out;
}

const PATCH = [
	"*** Begin Patch",
	"*** Add File: notes/todo.md",
	"+first line",
	"*** Update File: src/app.js",
	"@@",
	" a",
	"-b",
	"+B",
	"*** Delete File: obsolete.txt",
	"*** Update File: old/name.md",
	"*** Move to: new/name.md",
	"*** End Patch",
].join("\n");

test("applyPatch with a review target records one change per path; the list, a diff, and rollback of all", async (t) => {
	const b = box(t, { "src/app.js": "a\nb\nc\n", "obsolete.txt": "bye\n", "old/name.md": "# T\n" });
	const before = tree(b.cwd);
	const target = { agentDir: b.agentDir, sessionId: "sess-1", messageId: "entry-7" };
	const r = await native.applyPatch(b.cwd, PATCH, undefined, target);
	assert.equal(r.ok, true, r.text);
	const listed = await native.reviewList(b.agentDir, "sess-1");
	assert.equal(listed.ok, true);
	assert.deepEqual(
		listed.changes.map((c) => c.row),
		[
			"#1 A notes/todo.md  write  +1 -0  active",
			"#2 M src/app.js  edit  +1 -1  active",
			"#3 D obsolete.txt  delete  +0 -1  active",
			"#4 D old/name.md (moved to new/name.md)  delete  +0 -0  active",
			"#5 A new/name.md (moved from old/name.md)  write  +0 -0  active",
		],
	);
	assert.equal(listed.text.split("\n")[0], "Review: 5 changes in this session (5 active, 0 rolled back)");
	const c = listed.changes[1];
	assert.deepEqual(
		{ version: c.version, messageId: c.messageId, path: c.path, operation: c.operation, status: c.status, state: c.state, additions: c.additions, deletions: c.deletions, hunks: c.hunks, reversible: c.reversible, tool: c.tool },
		{ version: 1, messageId: "entry-7", path: "src/app.js", operation: "edit", status: "modified", state: "active", additions: 1, deletions: 1, hunks: 1, reversible: true, tool: "apply_patch" },
	);
	assert.match(c.snapshotId, /^[0-9a-f]{32}$/);
	assert.equal(listed.changes[3].group, listed.changes[4].group);
	// The store is outside the workspace, private.
	const store = join(b.agentDir, "pi-codex-toolkit", "review", "sess-1");
	assert.equal(statSync(store).mode & 0o777, 0o700);
	assert.equal(statSync(join(store, "index.jsonl")).mode & 0o777, 0o600);

	const shown = await native.reviewShow(b.agentDir, "sess-1", "2");
	assert.equal(shown.ok, true);
	assert.equal(shown.text, "#2 M src/app.js  edit  +1 -1  active by apply_patch (modified, message entry-7)\n--- a/src/app.js\n+++ b/src/app.js\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
	assert.equal((await native.reviewShow(b.agentDir, "sess-1", "99")).code, "not-found");

	const rb = await native.reviewRollback(b.agentDir, "sess-1");
	assert.equal(rb.ok, true, rb.message);
	assert.equal(rb.rolledBack.length, 5);
	assert.equal(rb.text.split("\n")[0], "Rolled back 5 changes:");
	assert.ok(rb.paths.includes(join(b.cwd, "src/app.js")) || rb.paths.some((p) => p.endsWith("/src/app.js")));
	assert.deepEqual(tree(b.cwd), before);
	assert.ok((await native.reviewList(b.agentDir, "sess-1")).changes.every((x) => x.state === "rolledBack"));
});

test("a rollback after an external edit is refused with conflict and touches nothing", async (t) => {
	const b = box(t, { "a.txt": "one\n", "b.txt": "two\n" });
	const target = { agentDir: b.agentDir, sessionId: "sess-2" };
	const p = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-two\n+TWO\n*** End Patch";
	assert.equal((await native.applyPatch(b.cwd, p, undefined, target)).ok, true);
	writeFileSync(join(b.cwd, "b.txt"), "TWO\nmine\n");
	const now = tree(b.cwd);
	const rb = await native.reviewRollback(b.agentDir, "sess-2");
	assert.equal(rb.ok, false);
	assert.equal(rb.code, "conflict");
	assert.match(rb.message, /'b\.txt' was changed by someone else/);
	assert.deepEqual(tree(b.cwd), now);
	const one = await native.reviewRollback(b.agentDir, "sess-2", "1");
	assert.equal(one.ok, true);
	assert.equal(readFileSync(join(b.cwd, "a.txt"), "utf8"), "one\n");
	assert.equal((await native.reviewRollback(b.agentDir, "sess-2", "1")).code, "already-rolled-back");
});

test("without a review target nothing is recorded; a failed patch records nothing; a bad session id is refused", async (t) => {
	const b = box(t, { "a.txt": "x\n" });
	assert.equal((await native.applyPatch(b.cwd, "*** Begin Patch\n*** Add File: n.txt\n+n\n*** End Patch")).ok, true);
	assert.equal(existsSync(join(b.agentDir, "pi-codex-toolkit")), false);
	const target = { agentDir: b.agentDir, sessionId: "sess-3" };
	const bad = await native.applyPatch(b.cwd, "*** Begin Patch\n*** Update File: a.txt\n@@\n-nope\n+y\n*** End Patch", undefined, target);
	assert.equal(bad.ok, false);
	assert.deepEqual((await native.reviewList(b.agentDir, "sess-3")).changes, []);
	assert.equal((await native.reviewList(b.agentDir, "sess-3")).text, "No file changes recorded in this session.");
	const r = await native.reviewList(b.agentDir, "../escape");
	assert.equal(r.ok, false);
	assert.equal(r.code, "invalid-session");
	const p = await native.applyPatch(b.cwd, "*** Begin Patch\n*** Add File: m.txt\n+m\n*** End Patch", undefined, { agentDir: b.agentDir, sessionId: "a/b" });
	assert.equal(p.ok, false);
	assert.equal(p.code, "review-failed");
	assert.equal(existsSync(join(b.cwd, "m.txt")), false, "a change that cannot be recorded is not made");
});

test("reviewSweep removes the stores of deleted sessions and keeps the current one; reviewRemoveSession", async (t) => {
	const b = box(t, { "a.txt": "1\n", "b.txt": "2\n" });
	const file = join(b.base, "session.jsonl");
	writeFileSync(file, "");
	const add = (sessionId, sessionFile, rel) =>
		native.applyPatch(b.cwd, `*** Begin Patch\n*** Delete File: ${rel}\n*** End Patch`, undefined, { agentDir: b.agentDir, sessionId, sessionFile });
	assert.equal((await add("kept", file, "a.txt")).ok, true);
	assert.equal((await add("gone", join(b.base, "deleted.jsonl"), "b.txt")).ok, true);
	const s = await native.reviewSweep(b.agentDir, "current");
	assert.equal(s.ok, true);
	assert.deepEqual(s.removed, ["gone"]);
	assert.ok(s.totalBytes > 0);
	assert.equal(await native.reviewRemoveSession(b.agentDir, "kept"), true);
	assert.equal(await native.reviewRemoveSession(b.agentDir, "kept"), false);
});

test("a rollback invalidates the host session's snapshot entries of the paths it restored", async (t) => {
	const b = box(t, { "a.txt": "one\n", "keep.txt": "k\n" });
	const host = new native.HostSession(b.cwd, b.agentDir, "sess-host");
	assert.equal((await host.read({ path: "a.txt" })).ok, true);
	assert.equal((await host.read({ path: "keep.txt" })).ok, true);
	assert.equal(host.snapshotStats().paths, 2);
	const p = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch";
	assert.equal((await native.applyPatch(b.cwd, p, undefined, { agentDir: b.agentDir, sessionId: "sess-host" })).ok, true);
	const rb = await native.reviewRollback(b.agentDir, "sess-host");
	assert.equal(rb.ok, true);
	assert.equal(host.snapshotStats().paths, 1, "a.txt's entries are gone, keep.txt's stay");
});

test("HostSession.write and .edit with a review target record their changes; rollback of all restores the tree", async (t) => {
	const b = box(t, { "e.txt": "one\ntwo\n" });
	const before = tree(b.cwd);
	const host = new native.HostSession(b.cwd, b.agentDir, "sess-we");
	const review = { agentDir: b.agentDir, sessionId: "sess-we", messageId: "m-9" };
	const w = await host.write({ path: "new/w.txt", content: "w\n" }, { review });
	assert.equal(w.ok, true, w.message);
	const r = await host.read({ path: "e.txt" });
	const e = await host.edit({ path: "e.txt", tag: r.tag, ops: "PUT 2.=2:\n+TWO" }, { review });
	assert.equal(e.ok, true, e.message);
	// Without a target (e.g. outside a Pi session) nothing is recorded.
	assert.equal((await host.write({ path: "untracked.txt", content: "u\n" })).ok, true);
	const listed = await native.reviewList(b.agentDir, "sess-we");
	assert.deepEqual(listed.changes.map((c) => [c.row, c.tool, c.messageId]), [
		["#1 A new/w.txt  write  +1 -0  active", "Write", "m-9"],
		["#2 M e.txt  edit  +1 -1  active", "Edit", "m-9"],
	]);
	const rb = await native.reviewRollback(b.agentDir, "sess-we");
	assert.equal(rb.ok, true, rb.message);
	const after = tree(b.cwd);
	delete after["untracked.txt"];
	assert.deepEqual(after, before);
	assert.equal(existsSync(join(b.cwd, "new")), false);
});

test("Write and Edit results carry their review evidence (the spec's ReviewChange fields, bounded); scratch and untracked calls carry none", async (t) => {
	const b = box(t, { "e.txt": "one\ntwo\n" });
	const host = new native.HostSession(b.cwd, b.agentDir, "sess-ev");
	const review = { agentDir: b.agentDir, sessionId: "sess-ev", messageId: "m-1" };
	const w = await host.write({ path: "w.txt", content: "a\nb\n" }, { review });
	assert.equal(w.ok, true, w.message);
	assert.equal(w.review.length, 1);
	const [ev] = w.review;
	assert.deepEqual(Object.keys(ev).sort(), ["additions", "deletions", "hunks", "messageId", "operation", "path", "reversible", "snapshotId", "state", "status", "version"].sort());
	assert.deepEqual({ ...ev, snapshotId: undefined }, { version: 1, snapshotId: undefined, messageId: "m-1", path: "w.txt", operation: "write", status: "added", state: "active", additions: 2, deletions: 0, hunks: 1, reversible: true });
	// The evidence names the change the store holds.
	assert.equal((await native.reviewList(b.agentDir, "sess-ev")).changes[0].snapshotId, ev.snapshotId);
	const r = await host.read({ path: "e.txt" });
	const e = await host.edit({ path: "e.txt", tag: r.tag, ops: "PUT 2.=2:\n+TWO\nMV moved.txt" }, { review });
	assert.equal(e.ok, true, e.message);
	assert.deepEqual(e.review.map((c) => [c.path, c.operation, c.status, c.additions, c.deletions]), [
		["e.txt", "delete", "deleted", 0, 0],
		["moved.txt", "edit", "added", 1, 1],
	]);
	// Without a review target (outside a Pi session) and in scratch: nothing recorded, no evidence.
	const plain = await host.write({ path: "untracked.txt", content: "u\n" });
	assert.deepEqual(plain.review, []);
	const scratch = await host.write({ path: join(host.scratch, "s.txt"), content: "s\n" }, { review });
	assert.equal(scratch.ok, true, scratch.message);
	assert.deepEqual(scratch.review, []);
});

test("Edit's REM is recorded as a delete: the result's evidence, the store's listing and a rollback that brings the bytes back", async (t) => {
	const b = box(t, { "gone.txt": "keep me\nplease\n" });
	const host = new native.HostSession(b.cwd, b.agentDir, "sess-rem");
	const review = { agentDir: b.agentDir, sessionId: "sess-rem", messageId: "m-2" };
	const r = await host.read({ path: "gone.txt" });
	const e = await host.edit({ path: "gone.txt", tag: r.tag, ops: "REM" }, { review });
	assert.equal(e.ok, true, e.message);
	assert.equal(e.deleted, true);
	assert.equal(existsSync(join(b.cwd, "gone.txt")), false);
	assert.deepEqual(e.review.map((c) => [c.path, c.operation, c.status, c.reversible]), [["gone.txt", "delete", "deleted", true]]);
	const listed = await native.reviewList(b.agentDir, "sess-rem");
	assert.deepEqual(listed.changes.map((c) => [c.path, c.operation, c.tool, c.messageId, c.snapshotId]), [["gone.txt", "delete", "Edit", "m-2", e.review[0].snapshotId]]);
	const rb = await native.reviewRollback(b.agentDir, "sess-rem");
	assert.equal(rb.ok, true, rb.message);
	assert.equal(readFileSync(join(b.cwd, "gone.txt"), "utf8"), "keep me\nplease\n");
});

test("reviewList and reviewShow of a 16 MiB change run off Node's main thread: a 2 ms timer keeps ticking", async (t) => {
	// 16 MiB exactly (the largest snapshot the store keeps), 64-byte lines; one line changed.
	const lines = [];
	for (let i = 0; i < (16 << 20) / 64; i++) lines.push(`${i}`.padEnd(63, i % 2 ? "x" : "y") + "\n");
	const b = box(t, { "big.txt": lines.join("") });
	const patch = ["*** Begin Patch", "*** Update File: big.txt", "@@", ` ${lines[0].slice(0, -1)}`, `-${lines[1].slice(0, -1)}`, "+changed", "*** End Patch"].join("\n");
	const r = await native.applyPatch(b.cwd, patch, undefined, { agentDir: b.agentDir, sessionId: "sess-big" });
	assert.equal(r.ok, true, r.text);
	const listed = await underTimer(() => native.reviewList(b.agentDir, "sess-big"));
	assert.equal(listed.result.ok, true);
	assert.deepEqual(listed.result.changes.map((c) => [c.row, c.truncated]), [["#1 M big.txt  edit  +1 -1  active", undefined]]);
	const shown = await underTimer(() => native.reviewShow(b.agentDir, "sess-big", "1"));
	assert.equal(shown.result.ok, true, shown.result.message);
	assert.match(shown.result.text, /\n-1x+\n\+changed\n/);
	// The timer ran while the diff was computed (a synchronous export lets no timer run before it answers); the
	// stall figures are the diagnostic below, not a pass/fail bound.
	assert.ok(shown.ticks >= 1, `the event loop never turned while reviewShow ran (${shown.ms.toFixed(1)} ms)`);
	t.diagnostic(`reviewList: ${listed.ms.toFixed(1)} ms, max timer gap ${listed.maxGap.toFixed(1)} ms; reviewShow: ${shown.ms.toFixed(1)} ms, max timer gap ${shown.maxGap.toFixed(1)} ms, ${shown.ticks} ticks`);
});
