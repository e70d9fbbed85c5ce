// Addon tests for the host file tools' engine (src/host via src/bind/host.rs): HostSession's JS-facing shapes,
// alias folding, failure codes, the external-path approval round trip, the snapshot store's bounds, and panics
// contained as `internal-panic` (docs/napi.md "Panics", in a child Node since the trigger is read per call).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, mkdirSync, rmSync, symlinkSync, realpathSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const native = require("../index.js");
const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const dirs = [];
after(() => {
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A temp folder with `ws/` (the files given) and `agent/`; returns it with a HostSession bound to it. */
function session(files = {}) {
	const dir = realpathSync(mkdtempSync(join(tmpdir(), "pct-host-")));
	dirs.push(dir);
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	for (const [rel, content] of Object.entries(files)) {
		mkdirSync(join(dir, "ws", rel, ".."), { recursive: true });
		writeFileSync(join(dir, "ws", rel), content);
	}
	return { dir, s: new native.HostSession(join(dir, "ws"), join(dir, "agent"), "sess-1") };
}

/** The spec's tag, computed independently: last two SHA-256 bytes of the normalized, right-trimmed text. */
function tagOf(text) {
	const norm = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
	const hashed = norm
		.split("\n")
		.map((l) => l.replace(/[ \t\r]+$/, ""))
		.join("\n");
	return createHash("sha256").update(hashed).digest("hex").slice(-4).toUpperCase();
}

test("constructor binds the roots and refuses bad input with the failure's code", () => {
	const { dir, s } = session();
	assert.equal(s.workspace, join(dir, "ws"));
	assert.equal(s.scratch, join(dir, "agent/pi-codex-toolkit/scratch/sess-1"));
	assert.throws(() => new native.HostSession("relative", join(dir, "agent"), "x"), { code: "INVALID_ARGUMENT" });
	assert.throws(() => new native.HostSession(join(dir, "ws"), join(dir, "agent"), "../x"), { code: "INVALID_ARGUMENT" });
	assert.throws(() => new native.HostSession(join(dir, "missing"), join(dir, "agent"), "x"), { code: "NOT_FOUND" });
});

test("resolvePath classifies workspace, scratch and external paths", () => {
	const { dir, s } = session({ "src/a.txt": "a\n" });
	assert.deepEqual(s.resolvePath("src/./a.txt"), {
		ok: true,
		root: "workspace",
		canonical: join(dir, "ws/src/a.txt"),
		path: "src/a.txt",
	});
	const dotdot = s.resolvePath("../agent/x");
	assert.equal(dotdot.root, "external");
	assert.equal(dotdot.external, "dotdot-escape");
	assert.equal(s.resolvePath(join(dir, "agent/pi-codex-toolkit/scratch/sess-1/n.md")).root, "scratch");
	assert.equal(s.resolvePath("/etc/hostname").external, "absolute-outside");
	symlinkSync(join(dir, "agent"), join(dir, "ws/link"));
	assert.equal(s.resolvePath("link/x").external, "symlink-escape");
	assert.deepEqual({ ...s.resolvePath("") }, { ok: false, code: "INVALID_ARGUMENT", message: s.resolvePath("").message });
});

test("read returns the header, absolute rows and the spec's fields; file_path is folded", async () => {
	const body = "one\r\ntwo  \r\nthree\r\n";
	const { s } = session({ "a.txt": body });
	const r = await s.read({ file_path: "a.txt", offset: 2, limit: 1 });
	assert.deepEqual(r, {
		ok: true,
		text: `[a.txt#${tagOf(body)}]\n2:two  \n[Showing lines 2-2 of 3. Use offset=3 to continue.]`,
		path: "a.txt",
		root: "workspace",
		offset: 2,
		lineCount: 1,
		totalLines: 3,
		truncated: true,
		fileBytes: Buffer.byteLength(body),
		tag: tagOf(body),
		clippedLines: 0,
	});
	// Both spellings: the canonical one wins.
	const both = await s.read({ path: "a.txt", file_path: "missing.txt" });
	assert.equal(both.ok, true);
});

test("read failures carry codes, messages and the Glob suggestion for a directory", async () => {
	const { s } = session({ "d/x.txt": "x" });
	const dirRead = await s.read({ path: "d" });
	assert.equal(dirRead.ok, false);
	assert.equal(dirRead.code, "INVALID_ARGUMENT");
	assert.deepEqual(dirRead.suggestion, { tool: "Glob", path: "d", pattern: "*" });
	assert.equal((await s.read({ path: "nope" })).code, "NOT_FOUND");
	assert.equal((await s.read({})).code, "INVALID_ARGUMENT");
	assert.equal((await s.read({ path: "d/x.txt", limit: 0 })).code, "INVALID_ARGUMENT");
	const out = await s.read({ path: "../agent" });
	assert.equal(out.code, "PATH_OUTSIDE_WORKSPACE");
	assert.match(out.message, /approve/);
});

test("an approved external read runs only while the path still resolves to the approved target", async () => {
	const { dir, s } = session();
	mkdirSync(join(dir, "ext"));
	writeFileSync(join(dir, "ext/f.txt"), "outside\n");
	const info = s.resolvePath("../ext/f.txt");
	assert.equal(info.root, "external");
	const r = await s.read({ path: "../ext/f.txt" }, { approvedPath: info.canonical });
	assert.equal(r.ok, true);
	assert.equal(r.root, "external");
	assert.equal(r.path, join(dir, "ext/f.txt"));
	// Swap the directory for a symlink elsewhere: the approval no longer covers the target.
	mkdirSync(join(dir, "other"));
	writeFileSync(join(dir, "other/f.txt"), "other\n");
	renameSync(join(dir, "ext"), join(dir, "ext.old"));
	symlinkSync(join(dir, "other"), join(dir, "ext"));
	const swapped = await s.read({ path: "../ext/f.txt" }, { approvedPath: info.canonical });
	assert.equal(swapped.code, "PATH_OUTSIDE_WORKSPACE");
	assert.match(swapped.message, /changed since approval/);
});

test("glob and grep on an approved external directory show absolute canonical paths", async () => {
	const { dir, s } = session();
	mkdirSync(join(dir, "ext/sub"), { recursive: true });
	writeFileSync(join(dir, "ext/sub/n.txt"), "needle\n");
	assert.equal((await s.grep({ pattern: "needle", path: "../ext" })).code, "PATH_OUTSIDE_WORKSPACE");
	const approvedPath = s.resolvePath("../ext").canonical;
	const g = await s.grep({ pattern: "needle", path: "../ext" }, { approvedPath });
	assert.equal(g.root, "external");
	assert.deepEqual(g.files, [join(dir, "ext/sub/n.txt")]);
	assert.ok(g.text.startsWith(`[${join(dir, "ext/sub/n.txt")}#`));
	const f = await s.glob({ pattern: "*.txt", path: "../ext" }, { approvedPath });
	assert.deepEqual(f.files, [join(dir, "ext/sub/n.txt")]);
	// A symlink inside the workspace that leads there is external too, and not followed by a workspace walk.
	symlinkSync(join(dir, "ext"), join(dir, "ws/link"));
	assert.equal((await s.grep({ pattern: "needle", path: "link" })).code, "PATH_OUTSIDE_WORKSPACE");
	assert.deepEqual((await s.grep({ pattern: "needle" })).files, []);
});

test("glob lists files sorted, honours .gitignore and folds query", async () => {
	const { s } = session({ ".gitignore": "out/\n", "src/b.rs": "", "src/a.rs": "", "out/c.rs": "", "README.md": "" });
	const r = await s.glob({ query: "*.rs" });
	assert.deepEqual(r, { ok: true, text: "src/a.rs\nsrc/b.rs", path: ".", root: "workspace", files: ["src/a.rs", "src/b.rs"], truncated: false });
	const cut = await s.glob({ pattern: "*.rs", limit: 1 });
	assert.equal(cut.truncated, true);
	assert.equal((await s.glob({ pattern: "[" })).code, "INVALID_ARGUMENT");
});

test("grep content, count and filesWithMatches modes with tags and Pi's parameter names", async () => {
	const a = "fn main() {\n    let Needle = 1;\n}\n";
	const { s } = session({ "src/a.rs": a, "src/b.txt": "needle\n", "bin.dat": Buffer.from("needle\0") });
	const r = await s.grep({ pattern: "needle", ignoreCase: true, glob: "*.rs", context: 1 });
	assert.equal(r.ok, true);
	assert.equal(r.text, `[src/a.rs#${tagOf(a)}]\n1-fn main() {\n2:    let Needle = 1;\n3-}`);
	assert.deepEqual(r.matches, [{ path: "src/a.rs", line: 2, text: "    let Needle = 1;" }]);
	assert.deepEqual(r.tags, { "src/a.rs": tagOf(a) });
	const counts = await s.grep({ query: "needle", ignoreCase: true, outputMode: "count" });
	assert.deepEqual(counts.counts, [
		{ path: "src/a.rs", count: 1 },
		{ path: "src/b.txt", count: 1 },
	]);
	assert.equal(counts.binarySkipped, 1);
	const files = await s.grep({ pattern: "needle", outputMode: "filesWithMatches", literal: true });
	assert.deepEqual(files.files, ["src/b.txt"]);
	assert.equal((await s.grep({ pattern: "(" })).code, "INVALID_ARGUMENT");
	assert.equal((await s.grep({ pattern: "x", outputMode: "nope" })).code, "INVALID_ARGUMENT");
});

test("glob and grep stop with TOOL_TIMEOUT once their budget is spent", async () => {
	const { s } = session({ "a.txt": "needle\n" });
	for (const call of [() => s.glob({ pattern: "*" }, { timeoutMs: 0 }), () => s.grep({ pattern: "needle" }, { timeoutMs: 0 })]) {
		const r = await call();
		assert.equal(r.code, "TOOL_TIMEOUT");
		assert.match(r.message, /0 ms budget/);
	}
	assert.equal((await s.grep({ pattern: "needle" }, { timeoutMs: 60_000 })).ok, true);
});

test("hostSweepScratch removes dead sessions' scratch directories and keeps live ones", async () => {
	const { dir } = session();
	const scratch = join(dir, "agent/pi-codex-toolkit/scratch");
	for (const id of ["live", "dead"]) {
		mkdirSync(join(scratch, id), { recursive: true });
		writeFileSync(join(scratch, id, "n.md"), "x");
	}
	assert.deepEqual(await native.hostSweepScratch(join(dir, "agent"), ["live"]), { ok: true, removed: ["dead"] });
	assert.deepEqual(await native.hostSweepScratch(join(dir, "agent"), ["live"]), { ok: true, removed: [] });
	assert.deepEqual(await native.hostSweepScratch(join(dir, "nothing-here"), []), { ok: true, removed: [] });
});

test("the snapshot store stays within 64 paths after many reads", async () => {
	const files = {};
	for (let i = 0; i < 80; i++) files[`f${i}.txt`] = `file ${i}\n`.repeat(10);
	const { s } = session(files);
	for (let i = 0; i < 80; i++) assert.equal((await s.read({ path: `f${i}.txt` })).ok, true);
	const st = s.snapshotStats();
	assert.equal(st.paths, 64);
	assert.ok(st.retainedBytes > 0 && st.retainedBytes <= 8 * 1024 * 1024);
});

test("panics in host exports come back as internal-panic and Node lives on", () => {
	const { dir } = session({ "a.txt": "a\n" });
	const child = `
const n = require(${JSON.stringify(join(root, "index.js"))});
const dir = process.argv[1];
(async () => {
	const out = {};
	process.env.PCT_TEST_PANIC = "";
	const s = new n.HostSession(dir + "/ws", dir + "/agent", "p");
	process.env.PCT_TEST_PANIC = "host.read,host.glob,host.grep,host.resolvePath,host.snapshotStats,host.new";
	for (const k of ["read", "glob", "grep"]) { const r = await s[k]({ path: "a.txt", pattern: "a" }); out[k] = r.code + "|" + r.message; }
	const rp = s.resolvePath("a.txt"); out.resolvePath = rp.code + "|" + rp.message;
	try { s.snapshotStats(); out.stats = "returned"; } catch (e) { out.stats = e.code + "|" + e.message; }
	try { new n.HostSession(dir + "/ws", dir + "/agent", "q"); out.new = "returned"; } catch (e) { out.new = e.code + "|" + e.message; }
	console.log(JSON.stringify(out));
})();`;
	const r = spawnSync(process.execPath, ["-e", child, dir], { encoding: "utf8" });
	assert.equal(r.status, 0, r.stderr);
	const out = JSON.parse(r.stdout);
	for (const [site, v] of Object.entries(out)) {
		assert.match(v, /^internal-panic\|internal error in the pi-codex-toolkit engine \(host\./, `${site}: ${v}`);
	}
	assert.equal(Object.keys(out).length, 6);
});

test("resolvePath stays synchronous: a 1,000-deep existing path, through a symlink, resolves as the OS walks it", (t) => {
	// It runs on Node's main thread before each call joins Pi's file mutation queue (docs/host.md "Paths"): the cost
	// is one lstat per component and one realpath per symlink and at the end, not a realpath of every prefix.
	const { dir, s } = session({});
	const rel = Array.from({ length: 1000 }, () => "d").join("/");
	mkdirSync(join(dir, "ws", rel), { recursive: true });
	symlinkSync(join(dir, "ws", rel), join(dir, "ws", "deep"));
	const t0 = performance.now();
	const r = s.resolvePath(`${rel}/f.txt`);
	const viaLink = s.resolvePath("deep/../f.txt");
	const ms = performance.now() - t0;
	assert.equal(r.ok, true, JSON.stringify(r).slice(0, 300));
	assert.equal(r.canonical, join(realpathSync(join(dir, "ws", rel)), "f.txt"));
	assert.equal(r.root, "workspace");
	// `deep/..` is the link target's parent, 999 levels down, as the OS walks it.
	assert.equal(viaLink.canonical, join(realpathSync(join(dir, "ws", rel, "..")), "f.txt"));
	// A realpath of every prefix took over 5 s here on a debug build: the time is a diagnostic, not a bound.
	t.diagnostic(`resolvePath through 1,000 levels: ${ms.toFixed(1)} ms`);
});
