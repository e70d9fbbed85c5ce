// `npm run bench`: every benchmark in bench/, one after another (pass --quick for a short run).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = dirname(fileURLToPath(import.meta.url));
const extra = process.argv.slice(2);
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
for (const f of readdirSync(dir).filter((f) => f.endsWith(".mjs") && f !== "run.mjs").sort()) {
	console.log(`\n=== bench/${f} ===`);
	child = spawn(process.execPath, [join(dir, f), ...extra], { stdio: "inherit" });
	const [status] = await once(child, "exit");
	if (stopped) process.exit(128 + constants.signals[stopped]);
	if (status !== 0) process.exitCode = 1;
}
