// A missing or wrong native binary never stops Pi (docs/release.md §Missing binary): the extension loads with a fake
// Pi, registers only /pct, warns once at start-up, and /pct status names the platform triple, what was looked for
// and the fix. Each case runs in a child process, because the engine is loaded once per process at import.
// Needs Node >= 22.6 (type stripping) — the project's test runner uses the Node 22 devDependency.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./helpers/pi.mjs";
import { diagnose, diagnosisText, loadNative, platformTriple, suffixOfTarget } from "../src/pi/native.ts";

const VERSION = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
const TRIPLE = platformTriple();

/** Loads src/index.ts in a child with `env`, drives a fake Pi through start-up and `/pct <args>`, returns what it saw. */
function loadWithFakePi(env, pctArgs = ["status", "", "reload"]) {
	const script = `
		const seen = { tools: [], commands: [], notes: [], stderr: [] };
		const handlers = {};
		const pi = new Proxy({
			registerTool: (d) => seen.tools.push(d.name),
			registerCommand: (name, o) => { seen.commands.push(name); handlers["/" + name] = o.handler; },
			on: (ev, h) => { (handlers[ev] ??= []).push(h); },
		}, { get: (t, k) => (k in t ? t[k] : () => undefined) });
		const ctx = { hasUI: true, ui: { notify: (message, type) => seen.notes.push({ message, type }) } };
		const mod = await import(${JSON.stringify(join(ROOT, "src/index.ts"))});
		mod.default(pi);
		for (const h of handlers.session_start ?? []) await h({ reason: "startup" }, ctx);
		for (const h of handlers.session_start ?? []) await h({ reason: "new" }, ctx);
		seen.startup = seen.notes.splice(0);
		seen.pct = [];
		for (const a of ${JSON.stringify(pctArgs)}) { await handlers["/pct"](a, ctx); seen.pct.push(seen.notes.splice(0)); }
		console.log(JSON.stringify(seen));
	`;
	const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8" });
	assert.equal(r.status, 0, r.stderr);
	return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

test("no binary: the extension loads, registers only /pct, warns once, /pct names triple, packages and fix", () => {
	const dir = mkdtempSync(join(tmpdir(), "pct-native-"));
	try {
		// The loader's own override: only this (absent) path is tried, like a clone without a build.
		const seen = loadWithFakePi({ NAPI_RS_NATIVE_LIBRARY_PATH: join(dir, "absent.node") });
		assert.deepEqual(seen.tools, [], "no tool without an engine");
		assert.deepEqual(seen.commands, ["pct"]);
		assert.equal(seen.startup.length, 1, "one start-up warning across two session starts");
		assert.equal(seen.startup[0].type, "warning");
		const text = seen.startup[0].message;
		assert.match(text, new RegExp(`could not be loaded on ${TRIPLE}\\.`));
		assert.match(text, new RegExp(`looked for: pi-codex-toolkit\\.${TRIPLE}\\.node next to index\\.js; npm package pi-codex-toolkit-${TRIPLE}@${VERSION.replace(/\./g, "\\.")}`));
		assert.match(text, /reason: no engine binary for .* is installed/);
		assert.match(text, /fix: reinstall so npm fetches .*pi install npm:pi-codex-toolkit/);
		assert.doesNotMatch(text, /npm has a bug/);
		for (const out of seen.pct) assert.deepEqual(out, [{ message: text, type: "warning" }], "every /pct subcommand shows the diagnosis");
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("a wrong binary (not loadable) is reported with the loader's reason, not a crash", () => {
	const dir = mkdtempSync(join(tmpdir(), "pct-native-"));
	try {
		const bad = join(dir, `pi-codex-toolkit.${TRIPLE}.node`);
		writeFileSync(bad, "not an ELF file\n");
		const seen = loadWithFakePi({ NAPI_RS_NATIVE_LIBRARY_PATH: bad }, ["status"]);
		assert.deepEqual(seen.tools, []);
		assert.equal(seen.startup.length, 1);
		assert.match(seen.startup[0].message, /reason: an engine binary was found but cannot be loaded: .*(invalid ELF header|file too short)/);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("with the binary present the full toolkit loads (the fallback is only for a missing engine); an off feature registers no tool", () => {
	const seen = loadWithFakePi({}, []);
	assert.deepEqual(seen.commands, ["pct"]);
	assert.deepEqual(seen.tools, [], "every feature is off: nothing is registered (docs/rules.md §Registration)");
	assert.equal(seen.startup.filter((n) => /could not be loaded/.test(n.message)).length, 0);
});

test("loadNative: an engine of another version counts as wrong; diagnosis names both versions", () => {
	const dir = mkdtempSync(join(tmpdir(), "pct-native-"));
	try {
		writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "pi-codex-toolkit", version: "1.2.3", napi: { binaryName: "pi-codex-toolkit", targets: ["x86_64-unknown-linux-gnu"] } }));
		writeFileSync(join(dir, "index.js"), "module.exports = { engineVersion: () => '1.2.2' };");
		const r = loadNative(dir);
		assert.equal(r.ok, false);
		assert.match(r.diagnosis.reason, /the loaded engine is version 1\.2\.2, this package is 1\.2\.3/);
		assert.match(r.diagnosis.lookedFor[1], /@1\.2\.3$/);
		const same = join(dir, "same");
		mkdirSync(same);
		writeFileSync(join(same, "package.json"), readFileSync(join(dir, "package.json")));
		writeFileSync(join(same, "index.js"), "module.exports = { engineVersion: () => '1.2.3' };");
		assert.equal(loadNative(same).ok, true, "the same version loads");
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("loadNative: a binary of the same version that lacks newer exports is refused naming them, not loaded", () => {
	const dir = mkdtempSync(join(tmpdir(), "pct-native-"));
	try {
		writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "pi-codex-toolkit", version: "1.2.3", napi: { binaryName: "pi-codex-toolkit", targets: ["x86_64-unknown-linux-gnu"] } }));
		// What napi-rs's index.js does with an older binary: every export is re-exported, missing ones as undefined.
		writeFileSync(join(dir, "index.js"), "const b = { engineVersion: () => '1.2.3' }; module.exports = { engineVersion: b.engineVersion, HostPermissions: b.HostPermissions, reviewList: b.reviewList };");
		const r = loadNative(dir);
		assert.equal(r.ok, false);
		assert.match(r.diagnosis.reason, /the engine binary is out of date: it lacks HostPermissions, reviewList/);
		assert.match(r.diagnosis.fix, /npm run build/);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("diagnose: unsupported platform -> build from source; glibc too old -> says so; triples", () => {
	const m = { name: "pi-codex-toolkit", version: "0.1.0", napi: { binaryName: "pi-codex-toolkit", targets: ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin"] } };
	const notFound = Object.assign(new Error("Cannot find native binding. npm has a bug"), { cause: new Error("Cannot find module './x.node'") });
	const riscv = diagnose(m, "linux-riscv64-gnu", notFound);
	assert.match(riscv.reason, /no prebuilt engine is published for linux-riscv64-gnu \(prebuilt: linux-x64-gnu, darwin-arm64\)/);
	assert.match(riscv.fix, /npm install && npm run build/);
	const old = diagnose(m, "linux-x64-gnu", Object.assign(new Error("Cannot find native binding"), { cause: new Error("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.35' not found (required by x.node)") }));
	assert.match(old.reason, /cannot be loaded: .*GLIBC_2\.35' not found/);
	assert.match(old.fix, /glibc is older than the engine needs \(GLIBC_2\.35\)/);
	assert.match(diagnosisText(old), /^Pi Codex Toolkit is off: its native engine could not be loaded on linux-x64-gnu\. No toolkit tools are registered\.\n {2}looked for: /);
	assert.equal(platformTriple("linux", "arm64", "musl"), "linux-arm64-musl");
	assert.equal(platformTriple("win32", "x64"), "win32-x64-msvc");
	assert.equal(platformTriple("darwin", "arm64"), "darwin-arm64");
	assert.deepEqual(
		["x86_64-unknown-linux-gnu", "x86_64-unknown-linux-musl", "aarch64-unknown-linux-gnu", "x86_64-apple-darwin", "aarch64-apple-darwin", "x86_64-pc-windows-msvc"].map(suffixOfTarget),
		["linux-x64-gnu", "linux-x64-musl", "linux-arm64-gnu", "darwin-x64", "darwin-arm64", "win32-x64-msvc"],
	);
	// Every napi target in package.json has a platform package of that name under npm/.
	for (const t of JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).napi.targets) {
		const pj = JSON.parse(readFileSync(join(ROOT, "npm", suffixOfTarget(t), "package.json"), "utf8"));
		assert.equal(pj.name, `pi-codex-toolkit-${suffixOfTarget(t)}`);
	}
});
