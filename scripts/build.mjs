// `npm run build` (release) / `npm run build:debug`: builds the native addon for this machine and writes
// `pi-codex-toolkit.<platform>.node` at the package root, where the loader (index.js) finds it in a clone. Not run
// by `npm install` (a registry install must never need Rust); `npm test` and `npm run demo` call it when the binary
// is missing (`--if-missing`). Release binaries for the platform packages come from `npm run build:all`
// (docs/release.md).
// Flags: `--debug` (debug profile), `--test-seams` (the cargo feature `test-seams`: the environment variables the test
// suites use to inject faults, docs/release.md "Test seams"; `build:debug` and `npm test` use it, a release build
// never does), `--out-dir <dir>` (write the binary, and a copy of the types, there instead of the root, leaving index.js alone; `npm test`
// puts the seam-less binary under target/seamless/ this way), `--if-missing`.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { ROOT, binaryName, hostTarget } from "./release-lib.mjs";

const debug = process.argv.includes("--debug");
const seams = process.argv.includes("--test-seams");
const outAt = process.argv.indexOf("--out-dir");
const outDir = outAt >= 0 ? process.argv[outAt + 1] : null;
if (outAt >= 0 && !outDir) {
	console.error("build: --out-dir needs a directory");
	process.exit(2);
}
const host = hostTarget();
if (process.argv.includes("--if-missing") && host && existsSync(join(outDir ? resolve(ROOT, outDir) : ROOT, binaryName(host)))) process.exit(0);

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
console.log(
	`build: ${debug ? "debug" : "release"} build of the native engine${seams ? " with test seams" : ""} (first release build takes a few minutes)`,
);
const args = [napi, "build", "--platform", "--esm", ...(debug ? [] : ["--release"]), ...(seams ? ["--features", "test-seams"] : [])];
// Only the binary in another folder: the committed loader and types come from the build at the root.
if (outDir) args.push("--output-dir", resolve(ROOT, outDir), "--no-js");
const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: "inherit" });
process.exit(r.status ?? 1);
