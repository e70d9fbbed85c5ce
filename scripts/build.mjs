// Builds the native addon (release; `--esm`: the package is `"type": "module"`, so the generated loader index.js is ESM) and places the binary where both the loader and the per-platform package
// (npm/linux-x64-gnu) find it. Runs on `npm install` in a clone (the `prepare` script).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const debug = process.argv.includes("--debug");
const napi = join(root, "node_modules/@napi-rs/cli/dist/cli.js");
execFileSync(process.execPath, [napi, "build", "--platform", "--esm", ...(debug ? [] : ["--release"])], { cwd: root, stdio: "inherit" });
const binary = "pi-codex-toolkit.linux-x64-gnu.node";
if (process.platform === "linux" && process.arch === "x64" && existsSync(join(root, binary))) {
	copyFileSync(join(root, binary), join(root, "npm/linux-x64-gnu", binary));
}
