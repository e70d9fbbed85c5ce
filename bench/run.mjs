// `npm run bench`: every benchmark in bench/, one after another (pass --quick for a short run).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = dirname(fileURLToPath(import.meta.url));
const extra = process.argv.slice(2);
for (const f of readdirSync(dir).filter((f) => f.endsWith(".mjs") && f !== "run.mjs").sort()) {
	console.log(`\n=== bench/${f} ===`);
	const r = spawnSync(process.execPath, [join(dir, f), ...extra], { stdio: "inherit" });
	if (r.status !== 0) process.exitCode = 1;
}
