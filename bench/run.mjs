// `npm run bench`: every benchmark in bench/, one after another (pass --quick for a short run); `npm run bench -- NAME`
// runs only bench/NAME.mjs or bench/NAME/run.mjs (e.g. `npm run bench -- edit-drift`).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = dirname(fileURLToPath(import.meta.url));
const names = process.argv.slice(2).filter((a) => !a.startsWith("-") && (existsSync(join(dir, `${a}.mjs`)) || existsSync(join(dir, a, "run.mjs"))));
const extra = process.argv.slice(2).filter((a) => !names.includes(a));
const entry = (name) => (existsSync(join(dir, name, "run.mjs")) ? join(name, "run.mjs") : `${name}.mjs`);
const all = readdirSync(dir, { withFileTypes: true })
	.filter((e) => (e.isFile() && e.name.endsWith(".mjs") && e.name !== "run.mjs") || (e.isDirectory() && existsSync(join(dir, e.name, "run.mjs"))))
	.map((e) => e.name.replace(/\.mjs$/, ""))
	.sort();
// A SIGINT/SIGTERM sent to this runner alone is passed on to the running benchmark, so it stops and removes its temp
// folders (scripts/tmp.mjs) instead of running on orphaned; the runner waits for it, then stops with the signal's
// status. (spawnSync could not: it blocks the signal handlers until the child is done.)
let child = null;
let stopped = null;
for (const sig of ["SIGINT", "SIGTERM"]) {
	process.on(sig, () => {
		stopped = sig;
		child?.kill(sig);
	});
}
for (const f of (names.length ? names : all).map(entry)) {
	console.log(`\n=== bench/${f} ===`);
	child = spawn(process.execPath, [join(dir, f), ...extra], { stdio: "inherit" });
	const [status] = await once(child, "exit");
	if (stopped) process.exit(128 + constants.signals[stopped]);
	if (status !== 0) process.exitCode = 1;
}
