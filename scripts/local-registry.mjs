// A throwaway npm registry (Verdaccio on 127.0.0.1, no uplinks) and the pieces the publish test and the install
// benchmark share: a staged copy of this checkout, a PATH without Rust, an RPC `/pct status` (docs/release.md).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { ROOT, TARGETS, binaryName, hostTarget, packageBinary } from "./release-lib.mjs";

export const VERDACCIO_VERSION = "6.10.4";
export const PI_VERSIONS = [
	{ name: "0.87.1", cli: join(ROOT, "node_modules/pi-087/dist/bundle/cli.js") },
	{ name: "1.6.0", cli: join(ROOT, "node_modules/pi-1x/dist/bundle/cli.js") },
];
export const NODE22 = (() => {
	const [maj, min] = process.versions.node.split(".").map(Number);
	return maj > 22 || (maj === 22 && min >= 19) ? process.execPath : join(ROOT, "node_modules/node/bin/node");
})();
export const FAUX = join(ROOT, "__test__/fixtures/faux-model.ts");

/** The environment with every npm_* variable of an enclosing `npm test` removed, plus `extra`. */
export function cleanEnv(extra = {}) {
	const env = {};
	for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && k !== "NODE_OPTIONS") env[k] = v;
	return { ...env, ...extra };
}

/** PATH with Node 22 first and every directory holding cargo or rustc removed (a user without Rust). */
export function pathWithoutRust() {
	const dirs = [dirname(NODE22), ...(process.env.PATH ?? "").split(delimiter)];
	return [...new Set(dirs)].filter((d) => d && !["cargo", "rustc", "rustup"].some((b) => existsSync(join(d, b)))).join(delimiter);
}

export function freePort() {
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
export function verdaccioBin() {
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

export async function startRegistry(work) {
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
	const npmrc = join(dir, "npmrc");
	try {
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
		writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
	} catch (err) {
		child.kill("SIGKILL"); // never leave the registry behind when start-up fails
		throw err;
	}
	return { url, child, npmrc, log: () => log, stop: () => child.exitCode === null && child.kill("SIGKILL") };
}

/** npm's environment for this registry: its own userconfig and an empty cache, so nothing comes from elsewhere. */
export const registryEnv = (registry, cache, extra = {}) =>
	cleanEnv({ npm_config_userconfig: registry.npmrc, npm_config_cache: cache, npm_config_update_notifier: "false", ...extra });

/** A copy of this checkout (tracked files) with the built binaries, as a release machine would have it. */
export function stageCheckout(work) {
	const stage = join(work, "checkout");
	const files = spawnSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).stdout.split("\0").filter(Boolean);
	assert.ok(files.includes("package.json"), "git ls-files found the checkout");
	for (const f of files) {
		if (!existsSync(join(ROOT, f))) continue;
		mkdirSync(dirname(join(stage, f)), { recursive: true });
		cpSync(join(ROOT, f), join(stage, f));
	}
	// The clone's devDependencies, as in a real clone after `npm install`: `npm pack`/`publish` run the `prepare`
	// script, which bundles the glue with esbuild (docs/release.md "The bundled entry").
	symlinkSync(join(ROOT, "node_modules"), join(stage, "node_modules"), "dir");
	// Release binaries from `npm run build:all` when present, else the host build `npm test` made; for the host
	// target the newer of the two, so a build:all left from an older checkout never hides the current build. A
	// binary built with test seams is never packed (docs/release.md "Test seams"): for the host target the root
	// binary counts only without them, else the seam-less one `npm test` writes to target/seamless/.
	const host = hostTarget();
	const binaries = [];
	const newer = (a, b) => (statSync(a).mtimeMs >= statSync(b).mtimeMs ? a : b);
	const seamless = (p) =>
		existsSync(p) && spawnSync(NODE22, ["-e", `process.exit(require(${JSON.stringify(p)}).testSeams() ? 1 : 0)`]).status === 0;
	for (const t of TARGETS) {
		const pkg = existsSync(packageBinary(t)) ? packageBinary(t) : null;
		const local =
			t !== host ? null : [join(ROOT, binaryName(t)), join(ROOT, "target", "seamless", binaryName(t))].filter(seamless).reduce((a, b) => (a ? newer(a, b) : b), null);
		const src = pkg && local ? newer(pkg, local) : (pkg ?? local);
		if (!src) continue;
		cpSync(src, join(stage, "npm", t.suffix, binaryName(t)));
		binaries.push(t.suffix);
	}
	return { stage, binaries };
}

/** One RPC-mode Pi without -ne, so the packages installed into the agent dir load; returns /pct status and commands. */
export async function pctStatusOverRpc(version, agentDir, cwd, env) {
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
		await request({ id: "c2", type: "prompt", message: "/pct status all" });
		const notes = records.slice(before).filter((r) => r.type === "extension_ui_request" && r.method === "notify").map((r) => r.message);
		return { commands: commands.data?.commands ?? [], status: notes.join("\n"), stderr };
	} finally {
		child.stdin.end();
		const t = setTimeout(() => child.kill("SIGKILL"), 10000);
		await closed;
		clearTimeout(t);
	}
}

/** The installed package directory (`node_modules/<name>`, scoped names too) under an agent dir (Pi's npm install
 * root differs between versions). */
export function findInstalled(dir, name, depth = 0) {
	if (depth > 7 || !existsSync(dir)) return null;
	const here = join(dir, "node_modules", name);
	if (existsSync(join(here, "package.json"))) return here;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		if (!e.isDirectory() || e.name === "node_modules") continue;
		const hit = findInstalled(join(dir, e.name), name, depth + 1);
		if (hit) return hit;
	}
	return null;
}
