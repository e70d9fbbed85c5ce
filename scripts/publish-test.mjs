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
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { NODE22, PI_VERSIONS, findInstalled, pathWithoutRust, pctStatusOverRpc, registryEnv, stageCheckout, startRegistry } from "./local-registry.mjs";
import { ROOT, TARGETS, binaryName, hostTarget } from "./release-lib.mjs";

const VERSION = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
const work = mkdtempSync(join(tmpdir(), "pct-publish-"));
let registry = null;

function cleanup() {
	registry?.stop();
	rmSync(work, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));
const npmEnv = (extra = {}) => registryEnv(registry, join(work, "npm-cache"), extra);

let published; // { binaries, skipped }

before(async () => {
	registry = await startRegistry(work);
});

after(() => cleanup());

test("npm publish from a checkout: present platform packages published, the rest skipped with a notice", { timeout: 300000 }, async (t) => {
	const { stage, binaries } = stageCheckout(work);
	assert.ok(binaries.includes(hostTarget().suffix), "the host binary is built without test seams (npm run build)");
	const packed = join(stage, "npm", hostTarget().suffix, binaryName(hostTarget()));
	const seams = spawnSync(NODE22, ["-e", `process.stdout.write(String(require(${JSON.stringify(packed)}).testSeams()))`], { encoding: "utf8" });
	assert.equal(seams.stdout, "false", `the packed binary reads no test seams (docs/release.md): ${seams.stderr}`);
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
	// `prepare` bundles the glue in a clone and before packing; npm never runs it for a registry install (the
	// tarball has no scripts/ folder, so the install below would fail if it did), and nothing else runs on install.
	assert.equal(meta.scripts?.prepare, "node scripts/bundle.mjs");
	for (const s of ["preinstall", "install", "postinstall"]) assert.equal(meta.scripts?.[s], undefined, `no ${s} script`);
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
	for (const f of ["package/LICENSE", "package/index.js", "package/index.d.ts", "package/src/index.ts", "package/src/pi-codex-toolkit/index.ts", "package/dist/pi-codex-toolkit/index.ts", "package/dist/pi-codex-toolkit/toolkit.cjs", "package/docs/release.md", "package/README.md"]) assert.ok(list.includes(f), `${f} in ${list.join(" ")}`);
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
		for (const s of published.binaries.filter((s) => s !== host.suffix)) {
			assert.ok(!existsSync(join(dirname(pkgDir), `pi-codex-toolkit-${s}`)), `npm skipped ${s} (os/cpu/libc)`);
		}

		const r = await pctStatusOverRpc(version, agentDir, cwd, { ...env, PI_OFFLINE: "1" });
		assert.match(r.status, /^Apply Patch\n {2}configured: on\n {2}effective: active\n/m, `${r.status}\n${r.stderr}`);
		assert.doesNotMatch(r.status, /could not be loaded/);
		const pct = r.commands.find((c) => c.name === "pct");
		assert.ok(pct, JSON.stringify(r.commands));
		assert.ok(JSON.stringify(pct.sourceInfo ?? {}).includes(agentDir), `/pct comes from the installed package: ${JSON.stringify(pct.sourceInfo)}`);
	});
}

