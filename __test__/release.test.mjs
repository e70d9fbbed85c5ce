// The release floor check (scripts/release-lib.mjs checkBinary, docs/release.md §The symbol trap) on tiny shared
// objects built here with the system C compiler: a symbol above the glibc floor and a libc symbol that links without
// a version (the trap) are refused; Node-API symbols and symbols at the floor pass. Also: the release targets match
// package.json and npm/. Fails (naming the install command) where cc or objdump is missing; skipped only off glibc.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT, TARGETS, checkBinary } from "../scripts/release-lib.mjs";
import { BUNDLE, GLUE_NAME, bundle, bundleIfStale } from "../scripts/bundle.mjs";
import { requireTools } from "./helpers/prereq.mjs";

const needTools = () => requireTools([["cc", ["--version"]], ["objdump", ["--version"]]], "apt-get install -y build-essential binutils");
const glibc = Boolean(process.report?.getReport()?.header?.glibcVersionRuntime);
const X64 = { suffix: "linux-x64-gnu", glibc: "2.28" };

/** Builds `source` into a shared object with undefined symbols allowed (as a cdylib links). */
function sharedObject(dir, name, source) {
	const c = join(dir, `${name}.c`);
	const so = join(dir, `${name}.so`);
	writeFileSync(c, source);
	const r = spawnSync("cc", ["-shared", "-fPIC", "-O1", "-o", so, c, "-lm"], { encoding: "utf8" });
	assert.equal(r.status, 0, r.stderr);
	return so;
}

test("floor check: above-floor glibc symbols and unversioned libc symbols are refused; Node-API passes", { skip: !glibc && "the floor check reads glibc symbol versions" }, () => {
	needTools();
	const dir = mkdtempSync(join(tmpdir(), "pct-release-"));
	try {
		const ok = sharedObject(dir, "ok", `#include <string.h>
			extern int napi_create_object(void *, void *);
			int f(char *d, const char *s) { memcpy(d, s, 4); return napi_create_object(0, 0); }`);
		assert.deepEqual(checkBinary(X64, ok).problems, []);

		// A symbol only a newer glibc has (the host's glibc is 2.36 on Debian 12: hypot is GLIBC_2.35 there).
		const recent = sharedObject(dir, "recent", `#include <math.h>
			double f(double a, double b) { return hypot(a, b); }`);
		const r = checkBinary(X64, recent);
		assert.match(r.problems.join("\n"), /^hypot needs GLIBC_2\.\d+, above the floor 2\.28$/m);
		assert.match(r.floor, /^glibc 2\.\d+$/);
		assert.deepEqual(checkBinary({ ...X64, glibc: "9.99" }, recent).problems, [], "at or below the floor passes");

		// The trap: a function the linking libc lacks stays undefined without a version.
		const trap = sharedObject(dir, "trap", `extern int renameat9(int, const char *, int, const char *, unsigned);
			int f(void) { return renameat9(0, "a", 0, "b", 1); }`);
		assert.deepEqual(checkBinary(X64, trap).problems, ["renameat9 is undefined without a version (missing from the target libc; loading would fail)"]);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("release targets: package.json napi.targets, npm/<platform>/package.json os/cpu/libc and the floors agree", () => {
	const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
	assert.deepEqual(pkg.napi.targets, TARGETS.map((t) => t.target));
	assert.equal(pkg.optionalDependencies, undefined, "no optionalDependencies in the repository (added at publish)");
	// No native build on install: `prepare` (a clone's `npm install`, `npm pack`) only bundles the glue, and a registry
	// install runs no script of ours (docs/release.md "The bundled entry").
	assert.equal(pkg.scripts.prepare, "node scripts/bundle.mjs");
	for (const s of ["preinstall", "install", "postinstall"]) assert.equal(pkg.scripts[s], undefined, `no ${s} script`);
	assert.ok(pkg.files.includes("docs/") && pkg.files.includes("LICENSE"));
	for (const t of TARGETS) {
		const pj = JSON.parse(readFileSync(join(ROOT, "npm", t.suffix, "package.json"), "utf8"));
		const [os, cpu, abi] = t.suffix.split("-");
		assert.equal(pj.name, `pi-codex-toolkit-${t.suffix}`);
		assert.equal(pj.version, pkg.version);
		assert.deepEqual([pj.os, pj.cpu], [[os], [cpu]]);
		assert.deepEqual(pj.libc, abi === "gnu" ? ["glibc"] : abi === "musl" ? ["musl"] : undefined);
		assert.deepEqual(pj.files, [`pi-codex-toolkit.${t.suffix}.node`]);
		assert.equal(pj.main, `pi-codex-toolkit.${t.suffix}.node`);
		if (abi === "gnu") assert.match(t.build, new RegExp(`\\.${t.glibc.replace(".", "\\.")}$`), "zig target carries the floor");
	}
});

/** A minimal checkout for scripts/release.mjs: its scripts, package.json, Cargo.toml and the npm/ package files. */
function miniCheckout(dir) {
	for (const f of ["package.json", "Cargo.toml", "scripts/release.mjs", "scripts/release-lib.mjs"]) {
		mkdirSync(join(dir, f, ".."), { recursive: true });
		cpSync(join(ROOT, f), join(dir, f));
	}
	for (const t of TARGETS) {
		mkdirSync(join(dir, "npm", t.suffix), { recursive: true });
		cpSync(join(ROOT, "npm", t.suffix, "package.json"), join(dir, "npm", t.suffix, "package.json"));
	}
}

test("prepublish refuses a binary above its floor and a Cargo/package version mismatch; nothing is published or changed", { skip: !(glibc && process.arch === "x64") && "the floor is the linux-x64-gnu one" }, () => {
	needTools();
	const dir = mkdtempSync(join(tmpdir(), "pct-release-"));
	try {
		miniCheckout(dir);
		const before = readFileSync(join(dir, "package.json"), "utf8");
		// The host platform binary needs a newer glibc than the 2.28 floor (hypot is GLIBC_2.35 on this glibc).
		const so = sharedObject(dir, "recent", "#include <math.h>\ndouble f(double a, double b) { return hypot(a, b); }");
		cpSync(so, join(dir, "npm/linux-x64-gnu/pi-codex-toolkit.linux-x64-gnu.node"));
		const env = { ...process.env, PCT_RELEASE_LOCAL: "", npm_config_registry: "http://127.0.0.1:9/" };
		let r = spawnSync(process.execPath, ["scripts/release.mjs", "prepublish"], { cwd: dir, env, encoding: "utf8" });
		assert.equal(r.status, 1, r.stdout + r.stderr);
		assert.match(r.stderr, /binaries above their libc floor \(nothing published\):\n {2}linux-x64-gnu: hypot needs GLIBC_2\.\d+, above the floor 2\.28/);
		assert.doesNotMatch(r.stdout, /publishing/);
		assert.equal(readFileSync(join(dir, "package.json"), "utf8"), before, "package.json untouched");

		writeFileSync(join(dir, "Cargo.toml"), readFileSync(join(dir, "Cargo.toml"), "utf8").replace(/^version = ".*"$/m, 'version = "9.9.9"'));
		r = spawnSync(process.execPath, ["scripts/release.mjs", "prepublish"], { cwd: dir, env, encoding: "utf8" });
		assert.equal(r.status, 1);
		assert.match(r.stderr, /Cargo\.toml version 9\.9\.9 != package\.json version /);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("npm run build without Rust: a clear message pointing at the registry install, not a stack trace", () => {
	const nodeOnly = mkdtempSync(join(tmpdir(), "pct-release-"));
	try {
		// An empty PATH: no cargo (the script runs in this Node, started by path).
		const r = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs"), "--debug"], { cwd: ROOT, env: { ...process.env, PATH: nodeOnly }, encoding: "utf8" });
		assert.equal(r.status, 1);
		assert.match(r.stderr, /^build: cargo was not found\. Building the native engine from source needs Rust/);
		assert.match(r.stderr, /pi install npm:pi-codex-toolkit/);
		assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
	} finally {
		rmSync(nodeOnly, { recursive: true, force: true });
	}
});

test("Pi loads the bundle of src/ and names it pi-codex-toolkit: the manifest's entry, through Pi's own label code on both versions", async () => {
	const entry = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).pi.extensions;
	assert.deepEqual(entry, ["./dist/pi-codex-toolkit/index.ts"]);
	assert.equal(join(ROOT, entry[0]), BUNDLE);
	// The file Pi loads is exactly what src/ bundles to now (docs/release.md "The bundled entry").
	await bundleIfStale();
	const fresh = mkdtempSync(join(tmpdir(), "pct-bundle-"));
	try {
		await bundle(join(fresh, "index.ts"));
		for (const f of ["index.ts", GLUE_NAME]) {
			assert.ok(readFileSync(join(dirname(BUNDLE), f)).equals(readFileSync(join(fresh, f))), `the bundle's ${f} is stale: run node scripts/bundle.mjs`);
		}
	} finally {
		rmSync(fresh, { recursive: true, force: true });
	}
	// It exports what embedders get from src/index.ts, and imports nothing of Pi's by path (Pi hands over its own).
	const [viaEntry, viaIndex] = await Promise.all([import(BUNDLE), import(join(ROOT, "src/index.ts"))]);
	assert.deepEqual(Object.keys(viaEntry).sort(), Object.keys(viaIndex).sort());
	assert.equal(typeof viaEntry.default, "function");
	assert.equal(typeof viaEntry.createPiCodexToolkit, "function");
	const text = readFileSync(BUNDLE, "utf8");
	const hosts = [];
	for (const m of text.matchAll(/^import .* from "([^"]+)";$/gm)) {
		assert.match(m[1], /^(node:|@earendil-works\/|typebox)/, m[0]);
		if (!m[1].startsWith("node:")) hosts.push(m[1]);
	}
	// The glue (docs/release.md "The bundled entry") requires Pi's packages only by the names the entry imports and
	// hands over; everything else it requires is Node's (node: modules, the native loader at run time).
	const glue = readFileSync(join(dirname(BUNDLE), GLUE_NAME), "utf8");
	assert.doesNotMatch(glue, /^import /m, "the glue is CommonJS");
	const required = new Set([...glue.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]).filter((id) => !id.startsWith("node:")));
	assert.deepEqual([...required].sort(), [...hosts].sort());
	for (const dir of ["pi-087", "pi-1x"]) {
		const { InteractiveMode } = await import(join(ROOT, "node_modules", dir, "dist/modes/interactive/interactive-mode.js"));
		const mode = Object.create(InteractiveMode.prototype);
		const label = (path, sourceInfo) => mode.getCompactExtensionLabels([{ path, sourceInfo }])[0];
		// `pi -e <clone>`: Pi resolves the manifest's entry against the folder (whatever the clone is called).
		const local = join("/home/u/work/some-clone", entry[0]);
		assert.equal(label(local, { source: "local", scope: "temporary" }), "pi-codex-toolkit", dir);
		assert.equal(label("/home/u/work/some-clone/src/index.ts", { source: "local", scope: "temporary" }), "src", `${dir}: what the old entry showed`);
		// An npm install: the package name first.
		const base = "/home/u/.pi/agent/npm/node_modules/pi-codex-toolkit";
		assert.equal(label(join(base, entry[0]), { source: "npm:pi-codex-toolkit", scope: "user", baseDir: base }), "pi-codex-toolkit:dist/pi-codex-toolkit", dir);
	}
});
