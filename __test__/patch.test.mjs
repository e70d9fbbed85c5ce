// Addon tests for the apply_patch executor (src/patch via src/lib.rs): the JS-facing shapes, abort, paths,
// and the partial-commit report through the PCT_TEST_PATCH_FAULT hook (run in a child process: it is read per call).
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, readFileSync, mkdirSync, existsSync, readdirSync, statSync, chmodSync, linkSync, rmSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { tempDir } from "./helpers/tmp.mjs";

const require = createRequire(import.meta.url);
const native = require("../index.js");

function ws(files = {}) {
	const dir = tempDir("pct-patch-");
	for (const [rel, content] of Object.entries(files)) {
		mkdirSync(join(dir, rel, ".."), { recursive: true });
		writeFileSync(join(dir, rel), content);
	}
	return dir;
}

/** Every file under a folder with its bytes (hex), for "nothing changed" checks. */
function tree(dir, base = dir, out = {}) {
	for (const name of readdirSync(dir).sort()) {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) tree(p, base, out);
		else out[p.slice(base.length + 1)] = readFileSync(p).toString("hex");
	}
	return out;
}

const env = (body) => `*** Begin Patch\n${body}*** End Patch\n`;
/** The screen view an operation carries (docs/render.md "Diffs"). */
const view = (text, added, removed, firstChangedLine, beforeLines, afterLines) => ({ text, added, removed, exact: true, omittedRows: 0, firstChangedLine, beforeLines, afterLines });

test("applies a multi-file patch and reports text and operations", async () => {
	const dir = ws({ "a.txt": "one\ntwo\n", "old.txt": "x\n", "m/src.txt": "s\n" });
	const r = await native.applyPatch(
		dir,
		env("*** Add File: notes/todo.md\n+first line\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** Delete File: old.txt\n*** Update File: m/src.txt\n*** Move to: n/dst.txt\n-s\n+t\n"),
	);
	assert.equal(r.ok, true);
	assert.equal(r.text, "Applied patch:\n- add notes/todo.md\n- update a.txt\n- delete old.txt\n- move m/src.txt -> n/dst.txt");
	assert.deepEqual(r.operations, [
		{ operation: "add", path: "notes/todo.md", diff: view("+1 first line", 1, 0, 1, 0, 1) },
		{ operation: "update", path: "a.txt", diff: view(" 1 one\n-2 two\n+2 TWO", 1, 1, 2, 2, 2) },
		{ operation: "delete", path: "old.txt" },
		{ operation: "move", path: "n/dst.txt", from: "m/src.txt", diff: view("-1 s\n+1 t", 1, 1, 1, 1, 1) },
	]);
	assert.equal(readFileSync(join(dir, "notes/todo.md"), "utf8"), "first line\n");
	assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "one\nTWO\n");
	assert.equal(existsSync(join(dir, "old.txt")), false);
	assert.equal(readFileSync(join(dir, "n/dst.txt"), "utf8"), "t\n");
	assert.equal(r.code, undefined);
});

test("a refused patch resolves with the exact text, code and outcome and changes nothing", async () => {
	const dir = ws({ "a.txt": "one\n", "b.txt": "two\n" });
	const before = tree(dir);
	const r = await native.applyPatch(dir, env("*** Update File: a.txt\n-one\n+1\n*** Update File: b.txt\n-zwei\n+2\n"));
	assert.equal(r.ok, false);
	assert.equal(r.code, "context-mismatch");
	assert.equal(r.outcome, "no-change");
	assert.match(r.text, /^apply_patch failed \(no-change\): context mismatch in 'b\.txt'\. Chunk 1 of 1 did not match at or after line 1\. Expected lines:\n {2}\| zwei\n/);
	assert.deepEqual(r.operations, []);
	assert.deepEqual(tree(dir), before);
});

test("the minimal envelope from the tool description works, and the envelope is strict", async () => {
	const dir = ws();
	const ok = await native.applyPatch(dir, "*** Begin Patch\n*** Add File: notes/todo.md\n+first line\n*** End Patch\n");
	assert.equal(ok.text, "Applied patch:\n- add notes/todo.md");
	const crlf = await native.applyPatch(dir, "*** Begin Patch\r\n*** Add File: x\r\n+y\r\n*** End Patch\r\n");
	assert.equal(crlf.code, "invalid-patch");
	assert.equal(crlf.text, "apply_patch failed (no-change): invalid patch: the patch contains a carriage return (\\r); send it with LF line endings only");
	const trailing = await native.applyPatch(dir, "*** Begin Patch\n*** Add File: x\n+y\n*** End Patch trailing\n");
	assert.equal(trailing.text, "apply_patch failed (no-change): invalid patch: The last line of the patch must be '*** End Patch'");
	assert.equal(existsSync(join(dir, "x")), false);
});

test("an aborted handle refuses before anything changes", async () => {
	const dir = ws({ "a.txt": "one\n" });
	const abort = new native.PatchAbort();
	assert.equal(abort.aborted, false);
	abort.abort();
	assert.equal(abort.aborted, true);
	const r = await native.applyPatch(dir, env("*** Update File: a.txt\n-one\n+1\n"), abort);
	assert.deepEqual([r.ok, r.code, r.text], [false, "aborted", "apply_patch failed (no-change): aborted"]);
	assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "one\n");
	// a fresh handle applies
	const r2 = await native.applyPatch(dir, env("*** Update File: a.txt\n-one\n+1\n"), new native.PatchAbort());
	assert.equal(r2.ok, true);
});

test("patchPaths lists sorted absolute paths (move source and destination) or the parse error", () => {
	const dir = ws();
	const r = native.patchPaths(dir, env("*** Update File: z.txt\n*** Move to: a/b.txt\n-x\n+y\n*** Add File: m.txt\n+x\n"));
	assert.deepEqual(r, { ok: true, paths: [join(dir, "a/b.txt"), join(dir, "m.txt"), join(dir, "z.txt")] });
	const bad = native.patchPaths(dir, env("*** Add File: ../escape\n+x\n"));
	assert.deepEqual(bad, {
		ok: false,
		paths: [],
		error: "apply_patch failed (no-change): path traversal is not allowed: '../escape'",
		code: "path-traversal",
	});
	assert.equal(native.patchPaths(dir, "nope").code, "invalid-patch");
});

test("CRLF, missing final newline, BOM and mode bits survive an update", async () => {
	const dir = ws({ "w.txt": "\ufeffa\r\nb\r\nc" });
	chmodSync(join(dir, "w.txt"), 0o750);
	const r = await native.applyPatch(dir, env("*** Update File: w.txt\n@@\n a\n-b\n+B\n"));
	assert.equal(r.ok, true, r.text);
	assert.equal(readFileSync(join(dir, "w.txt")).toString("hex"), Buffer.from("\ufeffa\r\nB\r\nc").toString("hex"));
	assert.equal(statSync(join(dir, "w.txt")).mode & 0o7777, 0o750);
});

test("a failed second commit step is reported as partial (injected fault, child process)", () => {
	const dir = ws({ "b.txt": "b\n" });
	const script = `
		const native = require(${JSON.stringify(require.resolve("../index.js"))});
		native.applyPatch(${JSON.stringify(dir)}, ${JSON.stringify(env("*** Add File: a.txt\n+new\n*** Update File: b.txt\n-b\n+B\n"))})
			.then((r) => process.stdout.write(JSON.stringify(r)));`;
	const out = spawnSync(process.execPath, ["-e", script], { env: { ...process.env, PCT_TEST_PATCH_FAULT: "commit:2:28" }, encoding: "utf8" });
	assert.equal(out.status, 0, out.stderr);
	const r = JSON.parse(out.stdout);
	assert.deepEqual(
		[r.ok, r.outcome, r.code, r.text],
		[false, "partial", "commit-failed", "apply_patch failed (partial); committed: add a.txt; reread: none; filesystem commit failed (ENOSPC)"],
	);
	assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "new\n");
	assert.equal(readFileSync(join(dir, "b.txt"), "utf8"), "b\n");
	assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".pct-patch-")), []);
});

test("parallel applyPatch calls waiting on the lock never block Node's libuv pool (child process)", () => {
	// Six applies queue on the process-wide lock, each pausing inside it; a threadpool crypto job started after
	// them must finish before the first apply does. Run on the 4-worker libuv pool, the applies would hold every
	// worker and the crypto job would only run after several applies had finished.
	const dir = ws({ "f.txt": "a\n" });
	const script = `
		const native = require(${JSON.stringify(require.resolve("../index.js"))});
		const crypto = require("node:crypto");
		const events = [];
		const patches = Array.from({ length: 6 }, (_, i) =>
			native.applyPatch(${JSON.stringify(dir)}, "*** Begin Patch\\n*** Add File: n" + i + ".txt\\n+x\\n*** End Patch\\n")
				.then((r) => events.push(r.ok ? "patch" : "patch-failed: " + r.text)));
		// Queued after the six: on a libuv pool the applies would already hold (or wait for) every worker, FIFO.
		const hashed = new Promise((done) => crypto.pbkdf2("pw", "salt", 1, 16, "sha256", () => done(events.push("crypto"))));
		Promise.all([...patches, hashed]).then(() => process.stdout.write(JSON.stringify(events)));`;
	const out = spawnSync(process.execPath, ["-e", script], {
		env: { ...process.env, PCT_TEST_PATCH_DELAY_MS: "1500", UV_THREADPOOL_SIZE: "4" },
		encoding: "utf8",
	});
	assert.equal(out.status, 0, out.stderr);
	const events = JSON.parse(out.stdout);
	assert.deepEqual(events, ["crypto", "patch", "patch", "patch", "patch", "patch", "patch"]);
});

test("many concurrent applyPatch calls on one file lose no update (process-wide lock)", async () => {
	const lines = Array.from({ length: 24 }, (_, i) => `line${i}`);
	const dir = ws({ "f.txt": lines.join("\n") + "\n" });
	const results = await Promise.all(lines.map((l, i) => native.applyPatch(dir, env(`*** Update File: f.txt\n@@ ${l}\n+added${i}\n`))));
	for (const r of results) assert.equal(r.ok, true, r.text);
	const text = readFileSync(join(dir, "f.txt"), "utf8");
	lines.forEach((l, i) => assert.ok(text.includes(`${l}\nadded${i}\n`), `lost update ${i}`));
});

test("a process killed in the middle of a rewrite leaves the old content recoverable; the next patch puts it back", async () => {
	const old = Array.from({ length: 200 }, (_, i) => `old line ${i}`).join("\n") + "\n";
	const dir = ws({ "a.txt": old, "b.txt": "b\n" });
	const patch = env("*** Update File: b.txt\n-b\n+B\n*** Update File: a.txt\n@@\n-old line 0\n+NEW FIRST LINE, LONGER THAN THE OLD ONE\n*** Add File: later.txt\n+later\n");
	const script = `
		const native = require(${JSON.stringify(require.resolve("../index.js"))});
		native.applyPatch(${JSON.stringify(dir)}, ${JSON.stringify(patch)}).then((r) => process.stdout.write(JSON.stringify(r)));`;
	// Commit step 2 is the rewrite of a.txt: half of it is written, then the process aborts (a real crash).
	const out = spawnSync(process.execPath, ["-e", script], { env: { ...process.env, PCT_TEST_PATCH_FAULT: "crash:2" }, encoding: "utf8" });
	assert.equal(out.signal, "SIGABRT", out.stderr);
	const torn = readFileSync(join(dir, "a.txt"), "utf8");
	assert.notEqual(torn, old);
	assert.ok(torn.startsWith("NEW FIRST"), torn.slice(0, 40));
	assert.equal(readFileSync(join(dir, "b.txt"), "utf8"), "B\n"); // committed before the crash
	assert.equal(readdirSync(dir).filter((n) => n.endsWith(".journal")).length, 1);
	assert.equal(readdirSync(dir).filter((n) => n.startsWith(".pct-patch-") && n.endsWith(".tmp")).length, 1); // later.txt, staged
	assert.equal(existsSync(join(dir, "later.txt")), false);

	const r = await native.applyPatch(dir, env("*** Add File: c.txt\n+c\n"));
	assert.deepEqual(
		[r.ok, r.code, r.outcome, r.text],
		[false, "interrupted-patch", "no-change", "apply_patch failed (no-change): an earlier apply_patch was interrupted while writing; restored to their content before it: a.txt; changed since and left as they are: none. Nothing of this patch was applied: re-read these files, then send it again"],
	);
	assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), old);
	assert.equal(readFileSync(join(dir, "b.txt"), "utf8"), "B\n");
	assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".pct-patch-")), []);
	assert.equal((await native.applyPatch(dir, env("*** Add File: c.txt\n+c\n"))).ok, true);
	rmSync(dir, { recursive: true, force: true });
});

test("an update rewrites in place: inode and hard links are kept; a pure move is a rename", async () => {
	const dir = ws({ "f.txt": "one\n", "bin/blob.dat": "\u0000\u00ff" });
	linkSync(join(dir, "f.txt"), join(dir, "link.txt"));
	const ino = statSync(join(dir, "f.txt")).ino;
	const blob = statSync(join(dir, "bin/blob.dat")).ino;
	const r = await native.applyPatch(dir, env("*** Update File: f.txt\n-one\n+two\n*** Update File: bin/blob.dat\n*** Move to: moved/blob.dat\n"));
	assert.equal(r.ok, true, r.text);
	assert.equal(r.text, "Applied patch:\n- update f.txt\n- move bin/blob.dat -> moved/blob.dat");
	assert.equal(statSync(join(dir, "f.txt")).ino, ino);
	assert.equal(statSync(join(dir, "f.txt")).nlink, 2);
	assert.equal(readFileSync(join(dir, "link.txt"), "utf8"), "two\n");
	assert.equal(statSync(join(dir, "moved/blob.dat")).ino, blob);
	rmSync(dir, { recursive: true, force: true });
});

test("a patch whose context drifted is located through the copy the session's Read showed, or refused", async () => {
	const dir = tempDir("pct-patch-shown-");
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	const cwd = join(dir, "ws");
	const s = new native.HostSession(cwd, join(dir, "agent"), "sess-shown");
	const target = { agentDir: join(dir, "agent"), sessionId: "sess-shown" };
	const shown = "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n";
	writeFileSync(join(cwd, "m.rs"), shown);
	assert.equal((await s.read({ path: "m.rs" })).ok, true);
	// The edited window copied above since the Read: its context matches twice in the file, once in the shown copy.
	const now = "fn b() {\n    y();\n}\n" + shown;
	writeFileSync(join(cwd, "m.rs"), now);
	const patch = env("*** Update File: m.rs\n@@\n fn b() {\n-    y();\n+    z();\n }\n");
	const noSession = await native.applyPatch(cwd, patch);
	assert.equal(noSession.ok, false);
	assert.match(noSession.text, /ambiguous context/);
	const r = await native.applyPatch(cwd, patch, undefined, target);
	assert.equal(r.ok, true, r.text);
	assert.equal(readFileSync(join(cwd, "m.rs"), "utf8"), "fn b() {\n    y();\n}\n" + shown.replace("y();", "z();"));
	assert.match(r.text, /^Applied patch:\n- update m\.rs\nNote: 'm\.rs' changed since it was shown to you; the patch was matched against the version you were shown/);
	// A line added inside a run of equal lines since the Read: ambiguous in the shown copy's light too, refused.
	writeFileSync(join(cwd, "f.txt"), "begin\nitem\nitem\nitem\nend\n");
	assert.equal((await s.read({ path: "f.txt" })).ok, true);
	writeFileSync(join(cwd, "f.txt"), "begin\nitem\nitem\nitem\nitem\nend\n");
	const f = await native.applyPatch(cwd, env("*** Update File: f.txt\n@@\n begin\n item\n-item\n+ITEM\n item\n end\n"), undefined, target);
	assert.equal(f.ok, false);
	assert.equal(f.code, "context-mismatch");
	assert.match(f.text, /The version of 'f\.txt' you were shown before it changed could not place the patch either: .*ambiguous/);
	assert.equal(readFileSync(join(cwd, "f.txt"), "utf8"), "begin\nitem\nitem\nitem\nitem\nend\n");
});
