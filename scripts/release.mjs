// The publish half of the release flow (docs/release.md §Publishing), run by npm around `npm publish`:
//   prepublishOnly -> `node scripts/release.mjs prepublish`
//     1. the Cargo.toml version must equal package.json's (the loader refuses an engine of another version);
//     2. builds this host's binary into npm/<platform>/ when it is missing (through zig when available, to reach the
//        glibc floor; `npm run build:all` cross-builds the others first);
//     3. checks every present binary against its libc floor and refuses to publish on a violation;
//     4. publishes each platform package whose binary exists (same registry, tag and dry-run flag as the outer
//        publish: npm passes its config down in the environment), skips the others with a notice (unless that
//        version is already on the registry);
//     5. writes those packages as exact-version optionalDependencies into package.json (backup kept), which npm
//        re-reads before it uploads the main package.
//   postpublish    -> `node scripts/release.mjs postpublish`: restores package.json from the backup.
//   `node scripts/release.mjs check`: step 3 alone, for every binary under npm/.
// PCT_RELEASE_LOCAL=1 (the throwaway-registry test, scripts/publish-test.mjs) reports a floor violation instead of
// refusing, because the host build of a plain checkout needs this machine's glibc.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, TARGETS, binaryName, checkBinary, hostTarget, manifest, packageBinary, packageDir, zigAvailable } from "./release-lib.mjs";

const BACKUP = join(ROOT, ".tmp/package.json.prepublish");
const log = (m) => console.log(`release: ${m}`);
const fail = (m) => {
	console.error(`release: ${m}`);
	process.exit(1);
};

function restore() {
	if (!existsSync(BACKUP)) return false;
	renameSync(BACKUP, join(ROOT, "package.json"));
	return true;
}

// npm is npm.cmd on Windows, which only a shell runs.
const shell = process.platform === "win32";
function npm(args, opts = {}) {
	return spawnSync("npm", args, { encoding: "utf8", shell, ...opts });
}

/** Is `name@version` already on the registry npm is configured for? */
function published(name, version) {
	const r = npm(["view", `${name}@${version}`, "version", "--json"], { cwd: ROOT });
	return r.status === 0 && r.stdout.trim() !== "" && JSON.parse(r.stdout) === version;
}

function cargoVersion() {
	const m = /^\[package\][^[]*?^version\s*=\s*"([^"]+)"/ms.exec(readFileSync(join(ROOT, "Cargo.toml"), "utf8"));
	return m?.[1];
}

/** Builds the host's release binary straight into its platform package. */
function buildHost(t) {
	const zig = t.where.includes("zig") ? zigAvailable() : null;
	const stage = join(ROOT, ".tmp/build-all", t.suffix);
	mkdirSync(stage, { recursive: true });
	const cmd = [join(ROOT, "node_modules/@napi-rs/cli/dist/cli.js"), "build", "--platform", "--release", "--no-js"];
	cmd.push("--output-dir", stage, "--dts", "index.d.ts", "--target-dir", join(ROOT, `target-${t.target}`));
	if (zig) cmd.push("--target", t.build, "-x");
	else cmd.push("--target", t.target);
	log(`building ${t.suffix} (${zig ? `zig, glibc floor ${t.glibc}` : "host toolchain: its glibc floor is this machine's; install ziglang + cargo-zigbuild for the release floor"})`);
	const r = spawnSync(process.execPath, cmd, { cwd: ROOT, stdio: "inherit" });
	if (r.status !== 0) fail(`build of ${t.suffix} failed (exit ${r.status}); no package was published`);
	copyFileSync(join(stage, binaryName(t)), packageBinary(t));
}

/** Floor check of every present binary; returns the problems as lines. */
function checkAll() {
	const lines = [];
	for (const t of TARGETS) {
		if (!existsSync(packageBinary(t))) continue;
		const { floor, problems } = checkBinary(t, packageBinary(t));
		log(`${t.suffix}: needs ${floor}${problems.length ? ` — ${problems.length} problem(s)` : ""}`);
		for (const p of problems) lines.push(`${t.suffix}: ${p}`);
	}
	return lines;
}

function prepublish() {
	if (restore()) log("restored package.json left over from an interrupted publish");
	const pkg = manifest();
	const version = pkg.version;
	if (cargoVersion() !== version) fail(`Cargo.toml version ${cargoVersion()} != package.json version ${version}; set both to the same release version`);
	const host = hostTarget();
	if (host && !existsSync(packageBinary(host))) buildHost(host);

	const problems = checkAll();
	if (problems.length) {
		const shown = problems.slice(0, 8).map((p) => `  ${p}`);
		if (problems.length > shown.length) shown.push(`  ... and ${problems.length - shown.length} more`);
		const text = shown.join("\n");
		if (process.env.PCT_RELEASE_LOCAL !== "1") fail(`binaries above their libc floor (nothing published):\n${text}\nrebuild them with \`npm run build:all\``);
		log(`floor violations reported, not enforced (PCT_RELEASE_LOCAL=1):\n${text}`);
	}

	const optional = {};
	for (const t of TARGETS) {
		const dir = packageDir(t);
		const pj = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
		if (pj.version !== version) {
			pj.version = version;
			writeFileSync(join(dir, "package.json"), JSON.stringify(pj, null, 2) + "\n");
		}
		if (!existsSync(packageBinary(t))) {
			if (published(pj.name, version)) {
				log(`${pj.name}@${version}: no binary here, already on the registry — listed`);
				optional[pj.name] = version;
			} else log(`${pj.name}@${version}: skipped — no binary at npm/${t.suffix}/${binaryName(t)} (built on ${t.where}: \`npm run build:all\`)`);
			continue;
		}
		if (published(pj.name, version)) {
			log(`${pj.name}@${version}: already on the registry — not republished, listed`);
			optional[pj.name] = version;
			continue;
		}
		log(`publishing ${pj.name}@${version}`);
		const r = spawnSync("npm", ["publish"], { cwd: dir, stdio: "inherit", shell });
		if (r.status !== 0) fail(`npm publish of ${pj.name} failed (exit ${r.status}); the main package was not published`);
		optional[pj.name] = version;
	}
	if (Object.keys(optional).length === 0) fail("no platform package is published or publishable; build one first (`npm run build`)");

	mkdirSync(join(ROOT, ".tmp"), { recursive: true });
	copyFileSync(join(ROOT, "package.json"), BACKUP);
	writeFileSync(join(ROOT, "package.json"), JSON.stringify({ ...pkg, optionalDependencies: optional }, null, 2) + "\n");
	log(`main package lists ${Object.keys(optional).join(", ")}`);
}

const cmd = process.argv[2];
if (cmd === "prepublish") prepublish();
else if (cmd === "postpublish") log(restore() ? "package.json restored" : "nothing to restore");
else if (cmd === "check") {
	const problems = checkAll();
	if (problems.length) fail(`binaries above their libc floor:\n${problems.map((p) => `  ${p}`).join("\n")}`);
} else fail("usage: node scripts/release.mjs prepublish|postpublish|check");
