// `npm test`: Rust unit tests, node:test suites against the addon, then end-to-end suites in the real Pi
// (both supported versions). Builds the addon first if it is missing.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const only = process.argv.slice(2); // e.g. `npm test -- rust addon e2e`
const want = (k) => only.length === 0 || only.includes(k);

function run(cmd, args, opts = {}) {
	console.log(`\n$ ${cmd} ${args.join(" ")}`);
	const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
	if (r.status !== 0) {
		console.error(`\n${cmd} failed (exit ${r.status ?? r.signal})`);
		process.exit(r.status || 1);
	}
}

const node = process.execPath;
if (want("rust")) run("cargo", ["test", "--quiet"]);
if (!existsSync(join(root, "pi-codex-toolkit.linux-x64-gnu.node"))) run(node, ["scripts/build.mjs"]);
const files = (dir) =>
	existsSync(join(root, dir)) ? readdirSync(join(root, dir)).filter((f) => f.endsWith(".test.mjs")).sort().map((f) => join(dir, f)) : [];
if (want("addon")) run(node, ["--test", "--test-concurrency=2", ...files("__test__")]);
if (want("e2e")) run(node, ["--test", "--test-concurrency=2", "--test-timeout=180000", ...files("__test__/e2e")]);
