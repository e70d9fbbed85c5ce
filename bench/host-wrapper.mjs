// Host tool wrapper benchmark (docs/host.md "In Pi"): what the Pi glue adds around one host call — admission,
// resolvePath, the permission decision and the audit line (redaction, hash, an O_APPEND write to a 0600 file).
// Interleaved pairs on the same 200-line file: Read through the registered tool (`execute` of src/pi/tools/host.ts)
// against `HostSession.read` called directly (the baseline); the ratio wrapped/direct is taken pair by pair.
// Build the addon first (`npm run build`). Needs Node 22 (the glue imports Pi):
//   node_modules/node/bin/node bench/host-wrapper.mjs [--runs N]
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { tempDir } from "../scripts/tmp.mjs";
import { register } from "../src/pi/tools/host.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(ROOT, "index.js"));
const i = process.argv.indexOf("--runs");
const runs = i >= 0 ? Number(process.argv[i + 1]) : 201;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = tempDir("pct-host-wrapper-bench-");
const ws = join(dir, "ws");
const agentDir = join(dir, "agent");
mkdirSync(ws);
mkdirSync(agentDir);
writeFileSync(join(ws, "a.txt"), Array.from({ length: 200 }, (_, k) => `line ${k} of the file`).join("\n") + "\n");
const tools = new Map();
const host = {
	agentDir,
	pi: { registerTool: (d) => tools.set(d.name, d), on: () => {} },
	hooks: {},
	shared: new Map(),
	isAdmitted: () => true,
	lifecycle: () => {},
	config: () => ({ hostTools: { enabled: true, permissionMode: "ask" } }),
};
register(host);
const ctx = { cwd: ws, hasUI: false, ui: {}, sessionManager: { getSessionId: () => "bench" } };
const read = tools.get("Read");
const direct = new native.HostSession(ws, agentDir, "bench");

const wrapped = async () => {
	const t = performance.now();
	const r = await read.execute("b", { path: "a.txt" }, undefined, undefined, ctx);
	if (!r.details.tag) throw new Error("no tag");
	return performance.now() - t;
};
const plain = async () => {
	const t = performance.now();
	const r = await direct.read({ path: "a.txt" });
	if (!r.ok) throw new Error(r.message);
	return performance.now() - t;
};
for (let k = 0; k < 20; k++) await wrapped(), await plain();
const a = [], b = [], ratio = [];
for (let k = 0; k < runs; k++) {
	const x = await wrapped();
	const y = await plain();
	a.push(x);
	b.push(y);
	ratio.push(x / y);
}
console.log(`Read through the wrapper: median ${median(a).toFixed(3)} ms; HostSession.read direct (baseline): median ${median(b).toFixed(3)} ms`);
console.log(`ratio wrapped/direct (per pair, ${runs} pairs): median ${median(ratio).toFixed(2)}x; added per call: ${(median(a) - median(b)).toFixed(3)} ms`);
