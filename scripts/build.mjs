// `npm run build` (release) / `npm run build:debug`: builds the native addon for this machine and writes
// `pi-codex-toolkit.<platform>.node` at the package root, where the loader (index.js) finds it in a clone. Not run
// by `npm install` (a registry install must never need Rust); `npm test` and `npm run demo` call it when the binary
// is missing (`--if-missing`). Release binaries for the platform packages come from `npm run build:all`
// (docs/release.md).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT, binaryName, hostTarget } from "./release-lib.mjs";

const debug = process.argv.includes("--debug");
const host = hostTarget();
if (process.argv.includes("--if-missing") && host && existsSync(join(ROOT, binaryName(host)))) process.exit(0);

const cargo = spawnSync("cargo", ["--version"], { encoding: "utf8" });
if (cargo.error || cargo.status !== 0) {
	console.error(
		"build: cargo was not found. Building the native engine from source needs Rust (https://rustup.rs).\n" +
			"To use the toolkit without Rust, install the published package instead: pi install npm:pi-codex-toolkit",
	);
	process.exit(1);
}
const napi = join(ROOT, "node_modules/@napi-rs/cli/dist/cli.js");
if (!existsSync(napi)) {
	console.error("build: @napi-rs/cli is missing; run `npm install` in the clone first (it installs the devDependencies).");
	process.exit(1);
}
console.log(`build: ${debug ? "debug" : "release"} build of the native engine (first release build takes a few minutes)`);
const r = spawnSync(process.execPath, [napi, "build", "--platform", "--esm", ...(debug ? [] : ["--release"])], { cwd: ROOT, stdio: "inherit" });
process.exit(r.status ?? 1);
