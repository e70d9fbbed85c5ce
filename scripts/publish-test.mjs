// `npm run test:publish` (and the `publish` suite of `npm test`): the registry path end to end, offline except the
// package registries (docs/release.md §Publish test).
//   1. a throwaway Verdaccio on 127.0.0.1 (installed on demand into a cache dir, no uplinks: nothing is proxied);
//   2. `npm publish` from a staged copy of this checkout (tracked files + the built host binary), which runs the real
//      prepublishOnly/postpublish scripts: the host platform package is published, the others are skipped with a
//      notice, the main package lists exactly the published ones;
//   3. for each supported Pi version: `pi install npm:pi-codex-toolkit` into a fresh agent dir with no cargo or rustc
//      on PATH, then `/pct status` through RPC shows Apply Patch active (the engine loaded from the installed
//      platform package) and the /pct command comes from the installed package.
// A standalone node:test program: exits non-zero on failure and removes the registry process and every temp dir,
// also on failure or Ctrl-C. PCT_VERDACCIO_DIR overrides the cache dir.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { ROOT, TARGETS, binaryName, hostTarget, packageBinary } from "./release-lib.mjs";

export const VERDACCIO_VERSION = "6.10.4";
const PI_VERSIONS = [
	{ name: "0.87.1", cli: join(ROOT, "node_modules/pi-087/dist/bundle/cli.js") },
	{ name: "1.6.0", cli: join(ROOT, "node_modules/pi-1x/dist/bundle/cli.js") },
];
const NODE22 = (() => {
	const [maj, min] = process.versions.node.split(".").map(Number);
	return maj > 22 || (maj === 22 && min >= 19) ? process.execPath : join(ROOT, "node_modules/node/bin/node");
})();
const FAUX = join(ROOT, "__test__/fixtures/faux-model.ts");
const VERSION = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;

const work = mkdtempSync(join(tmpdir(), "pct-publish-"));
let registry = null; // { url, child }

function cleanup() {
	if (registry?.child && registry.child.exitCode === null) registry.child.kill("SIGKILL");
	rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

/** The environment with every npm_* variable of an enclosing `npm test` removed, plus `extra`. */
function cleanEnv(extra = {}) {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && k !== "NODE_OPTIONS") env[k] = v;
	return { ...env, ...extra };
}

/** PATH with Node 22 first and every directory holding cargo or rustc removed (a user without Rust). */
function pathWithoutRust() {
	const dirs = [dirname(NODE22), ...(process.env.PATH ?? "").split(delimiter)];
	return [...new Set(dirs)].filter((d) => d && !["cargo", "rustc", "rustup"].some((b) => existsSync(join(d, b)))).join(delimiter);
}

function freePort() {
	return new Promise((resolve, reject) => {
		const s = createServer();
		s.once("error", reject);
		s.listen(0, "127.0.0.1", () => {
			const { port } = s.address();
			s.close(() => resolve(port));
		});
	});
}

/** Verdaccio in a cache dir (installed once; ~20 s), so it is not a devDependency every CI run installs. */
function verdaccioBin() {
	const dir = process.env.PCT_VERDACCIO_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "pi-codex-toolkit", `verdaccio-${VERDACCIO_VERSION}`);
	const bin = join(dir, "node_modules/verdaccio/bin/verdaccio");
	if (existsSync(bin)) return bin;
	mkdirSync(dir, { recursive: true });
	// node-fetch 2.7.0: verdaccio 6.10's own pin does not install cleanly with npm 11.
	writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true, dependencies: { verdaccio: VERDACCIO_VERSION }, overrides: { "node-fetch": "2.7.0" } }));
	console.log(`# installing verdaccio ${VERDACCIO_VERSION} into ${dir}`);
	const r = spawnSync("npm", ["install", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, env: cleanEnv({ PATH: `${dirname(NODE22)}${delimiter}${process.env.PATH}` }), encoding: "utf8" });
	if (r.status !== 0 || !existsSync(bin)) throw new Error(`installing verdaccio failed: ${r.stderr}`);
	return bin;
}

async function startRegistry() {
	const port = await freePort();
	const dir = join(work, "registry");
	mkdirSync(dir);
	const config = join(dir, "config.yaml");
	writeFileSync(
		config,
		[
			`storage: ${join(dir, "storage")}`,
			"auth:",
			"  htpasswd:",
			`    file: ${join(dir, "htpasswd")}`,
			"uplinks: {}",
			"packages:",
			"  '**':",
			"    access: $all",
			"    publish: $authenticated",
			"max_body_size: 500mb",
			"log: { type: stdout, format: pretty, level: warn }",
			"",
		].join("\n"),
	);
	const child = spawn(NODE22, [verdaccioBin(), "--config", config, "--listen", `127.0.0.1:${port}`], { cwd: dir, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
	let log = "";
	child.stdout.on("data", (d) => (log += d));
	child.stderr.on("data", (d) => (log += d));
	const url = `http://127.0.0.1:${port}/`;
	for (let i = 0; i < 300; i++) {
		if (child.exitCode !== null) throw new Error(`verdaccio exited (${child.exitCode}): ${log}`);
		try {
			if ((await fetch(`${url}-/ping`)).ok) break;
		} catch {}
		await new Promise((r) => setTimeout(r, 100));
		if (i === 299) throw new Error(`verdaccio did not answer on ${url}: ${log}`);
	}
	// A user for publishing; reading stays anonymous (what `pi install` does).
	const res = await fetch(`${url}-/user/org.couchdb.user:pct`, {
		method: "PUT",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ name: "pct", password: "pct-throwaway", type: "user" }),
	});
	const { token } = await res.json();
	assert.ok(token, `verdaccio gave no token (${res.status})`);
	const npmrc = join(work, "npmrc");
	writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
	return { url, child, npmrc, log: () => log };
}

/** npm's environment for this registry: its own userconfig and an empty cache, so nothing comes from elsewhere. */
const npmEnv = (extra = {}) =>
	cleanEnv({ npm_config_userconfig: registry.npmrc, npm_config_cache: join(work, "npm-cache"), npm_config_update_notifier: "false", ...extra });

/** A copy of this checkout (tracked files) with the built binaries, as a release machine would have it. */
function stageCheckout() {
	const stage = join(work, "checkout");
	const files = spawnSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).stdout.split("\0").filter(Boolean);
	assert.ok(files.includes("package.json"), "git ls-files found the checkout");
	for (const f of files) {
		if (!existsSync(join(ROOT, f))) continue;
		mkdirSync(dirname(join(stage, f)), { recursive: true });
		cpSync(join(ROOT, f), join(stage, f));
	}
	// Release binaries from `npm run build:all` when present, else the host build `npm test` made.
	const host = hostTarget();
	const binaries = [];
	for (const t of TARGETS) {
		const src = existsSync(packageBinary(t)) ? packageBinary(t) : t === host && existsSync(join(ROOT, binaryName(t))) ? join(ROOT, binaryName(t)) : null;
		if (!src) continue;
		cpSync(src, join(stage, "npm", t.suffix, binaryName(t)));
		binaries.push(t.suffix);
	}
	return { stage, binaries };
}

/** One RPC-mode Pi without -ne, so the packages installed into the agent dir load; returns /pct status and commands. */
async function pctStatusOverRpc(version, agentDir, cwd, env) {
	const args = [version.cli, "--no-session", "-e", FAUX, "--provider", "faux", "--model", "faux-1", "--mode", "rpc"];
	const child = spawn(NODE22, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
	let stderr = "";
	child.stderr.on("data", (d) => (stderr += d));
	const records = [];
	const waiters = [];
	let buf = "";
	child.stdout.setEncoding("utf8");
	child.stdout.on("data", (chunk) => {
		buf += chunk;
		let i;
		while ((i = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			try {
				const rec = JSON.parse(line);
				records.push(rec);
				for (const w of [...waiters]) if (w.pred(rec)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(rec);
			} catch {}
		}
	});
	const closed = new Promise((r) => child.on("close", r));
	const request = (cmd) =>
		new Promise((resolve, reject) => {
			const t = setTimeout(() => reject(new Error(`rpc ${cmd.type} timed out; stderr: ${stderr.slice(-2000)}`)), 60000);
			waiters.push({ pred: (r) => r.type === "response" && r.id === cmd.id, resolve: (r) => (clearTimeout(t), resolve(r)) });
			child.stdin.write(JSON.stringify(cmd) + "\n");
		});
	try {
		const commands = await request({ id: "c1", type: "get_commands" });
		const before = records.length;
		await request({ id: "c2", type: "prompt", message: "/pct status" });
		const notes = records.slice(before).filter((r) => r.type === "extension_ui_request" && r.method === "notify").map((r) => r.message);
		return { commands: commands.data?.commands ?? [], status: notes.join("\n"), stderr };
	} finally {
		child.stdin.end();
		const t = setTimeout(() => child.kill("SIGKILL"), 10000);
		await closed;
		clearTimeout(t);
	}
}

let published; // { binaries, skipped }

before(async () => {
	registry = await startRegistry();
});

after(() => cleanup());

test("npm publish from a checkout: present platform packages published, the rest skipped with a notice", { timeout: 300000 }, async (t) => {
	const { stage, binaries } = stageCheckout();
	assert.ok(binaries.includes(hostTarget().suffix), "the host binary is built (npm run build)");
	const r = spawnSync("npm", ["publish"], { cwd: stage, env: npmEnv({ PCT_RELEASE_LOCAL: "1", PATH: pathWithoutRust() }), encoding: "utf8" });
	const out = `${r.stdout}\n${r.stderr}`;
	assert.equal(r.status, 0, out);
	const skipped = TARGETS.filter((t) => !binaries.includes(t.suffix));
	for (const s of binaries) assert.match(out, new RegExp(`release: publishing pi-codex-toolkit-${s}@${VERSION}`), out);
	for (const t of skipped) assert.match(out, new RegExp(`pi-codex-toolkit-${t.suffix}@${VERSION}: skipped — no binary at npm/${t.suffix}/`), out);
	// postpublish restored the checkout's package.json (no optionalDependencies left behind).
	assert.equal(JSON.parse(readFileSync(join(stage, "package.json"), "utf8")).optionalDependencies, undefined);

	const view = spawnSync("npm", ["view", `pi-codex-toolkit@${VERSION}`, "--json"], { cwd: work, env: npmEnv(), encoding: "utf8" });
	assert.equal(view.status, 0, view.stderr);
	const meta = JSON.parse(view.stdout);
	assert.deepEqual(meta.optionalDependencies, Object.fromEntries(binaries.map((s) => [`pi-codex-toolkit-${s}`, VERSION])));
	assert.equal(meta.scripts?.prepare, undefined, "no build on install");
	for (const s of binaries) {
		const p = JSON.parse(spawnSync("npm", ["view", `pi-codex-toolkit-${s}@${VERSION}`, "--json"], { cwd: work, env: npmEnv(), encoding: "utf8" }).stdout);
		const t = TARGETS.find((x) => x.suffix === s);
		assert.deepEqual([p.os, p.cpu], [[s.split("-")[0]], [s.split("-")[1]]]);
		if (t.glibc) assert.deepEqual(p.libc, ["glibc"]);
		if (t.musl) assert.deepEqual(p.libc, ["musl"]);
	}
	// The main tarball: docs and LICENSE in, no binary, no Rust sources.
	const pack = spawnSync("npm", ["pack", `pi-codex-toolkit@${VERSION}`, "--pack-destination", work, "--json"], { cwd: work, env: npmEnv(), encoding: "utf8" });
	assert.equal(pack.status, 0, pack.stderr);
	const list = spawnSync("tar", ["tzf", join(work, JSON.parse(pack.stdout)[0].filename)], { encoding: "utf8" }).stdout.split("\n");
	for (const f of ["package/LICENSE", "package/index.js", "package/index.d.ts", "package/src/index.ts", "package/docs/release.md", "package/README.md"]) assert.ok(list.includes(f), `${f} in ${list.join(" ")}`);
	assert.ok(!list.some((f) => f.endsWith(".node") || f.endsWith(".rs")), "no binary or Rust source in the main package");
	published = { binaries, skipped };
	for (const line of out.split("\n").filter((l) => /^release: (publishing|.*skipped|main package)/.test(l))) t.diagnostic(line);
});

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] pi install npm:pi-codex-toolkit with no Rust on PATH, then /pct status over RPC`, { timeout: 300000 }, async (t) => {
		assert.ok(published, "the publish test passed");
		const box = mkdtempSync(join(work, `pi-${version.name}-`));
		const agentDir = join(box, "agent");
		const cwd = join(box, "work");
		mkdirSync(join(agentDir, "extensions"), { recursive: true });
		mkdirSync(cwd);
		mkdirSync(join(box, "tmp"));
		writeFileSync(join(agentDir, "extensions", "pi-codex-toolkit.json"), JSON.stringify({ applyPatch: { enabled: true } }));
		const env = npmEnv({ PATH: pathWithoutRust(), PI_CODING_AGENT_DIR: agentDir, TMPDIR: join(box, "tmp"), PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" });
		assert.equal(spawnSync("cargo", ["--version"], { env }).error?.code, "ENOENT", "cargo is not on PATH");
		assert.equal(spawnSync("rustc", ["--version"], { env }).error?.code, "ENOENT", "rustc is not on PATH");

		const started = Date.now();
		const inst = spawnSync(NODE22, [version.cli, "install", "npm:pi-codex-toolkit"], { cwd, env, encoding: "utf8", timeout: 240000 });
		t.diagnostic(`pi install took ${((Date.now() - started) / 1000).toFixed(1)} s`);
		assert.equal(inst.status, 0, `${inst.stdout}\n${inst.stderr}`);
		const pkgDir = findInstalled(agentDir, "pi-codex-toolkit");
		assert.ok(pkgDir, "the package is under the agent dir");
		const host = hostTarget();
		const platformPkg = join(dirname(pkgDir), `pi-codex-toolkit-${host.suffix}`);
		assert.ok(statSync(join(platformPkg, binaryName(host))).size > 0, "npm installed the host platform package with its binary");
		assert.ok(!existsSync(join(pkgDir, "node_modules/@napi-rs")), "no build tooling installed");

		const r = await pctStatusOverRpc(version, agentDir, cwd, { ...env, PI_OFFLINE: "1" });
		assert.match(r.status, /^Apply Patch\n {2}configured: on\n {2}effective: active\n/m, `${r.status}\n${r.stderr}`);
		assert.doesNotMatch(r.status, /could not be loaded/);
		const pct = r.commands.find((c) => c.name === "pct");
		assert.ok(pct, JSON.stringify(r.commands));
		assert.ok(JSON.stringify(pct.sourceInfo ?? {}).includes(agentDir), `/pct comes from the installed package: ${JSON.stringify(pct.sourceInfo)}`);
	});
}

/** The installed package directory under an agent dir (Pi's npm install root differs between versions). */
function findInstalled(dir, name, depth = 0) {
	if (depth > 6 || !existsSync(dir)) return null;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		if (!e.isDirectory()) continue;
		const p = join(dir, e.name);
		if (e.name === name && dirname(p).endsWith("node_modules") && existsSync(join(p, "package.json"))) return p;
		const hit = findInstalled(p, name, depth + 1);
		if (hit) return hit;
	}
	return null;
}
