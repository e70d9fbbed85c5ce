// The start-up scratch sweep's session list (docs/startup.md "What changed"): Pi's `SessionManager.listAll()`,
// which the sweep called before, against src/pi/sessions.ts `sessionIds`, which reads each file up to its header,
// on an agent folder of N sessions of S KiB each (5 project folders), in interleaved rounds. Reports the main
// process's CPU time (all its threads) and the wall time of each, medians, and their ratio.
// Usage: node bench/session-list.mjs [--sessions 200] [--kib 500] [--runs 7] [--pi 1.6.0]   (Node >= 22.19)
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sessionIds } from "../src/pi/sessions.ts";

const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : dflt;
};
const SESSIONS = Number(arg("--sessions", 200));
const KIB = Number(arg("--kib", 500));
const RUNS = Number(arg("--runs", 7));
const PI = arg("--pi", "1.6.0");

const base = mkdtempSync(join(tmpdir(), "pct-session-list-"));
process.on("exit", () => rmSync(base, { recursive: true, force: true }));
// Sessions shaped as Pi writes them: a header, then message entries (user and assistant text).
const text = "lorem ipsum dolor sit amet ".repeat(80);
for (let i = 0; i < SESSIONS; i++) {
	const dir = join(base, "sessions", `--project-${i % 5}--`);
	mkdirSync(dir, { recursive: true });
	const id = randomUUID();
	const lines = [JSON.stringify({ type: "session", version: 3, id, timestamp: new Date().toISOString(), cwd: "/work" })];
	let size = 0;
	for (let k = 0; size < KIB * 1024; k++) {
		const line = JSON.stringify({ type: "message", id: `m${k}`, parentId: k ? `m${k - 1}` : null, timestamp: new Date().toISOString(), message: { role: k % 2 ? "assistant" : "user", content: [{ type: "text", text }], timestamp: Date.now() } });
		lines.push(line);
		size += line.length + 1;
	}
	writeFileSync(join(dir, `2026-12-07T00-00-00-000Z_${id}.jsonl`), lines.join("\n") + "\n");
}
process.env.PI_CODING_AGENT_DIR = base;
const { SessionManager } = await import(`../node_modules/${PI === "0.87.1" ? "pi-087" : "pi-1x"}/dist/index.js`);

async function time(fn) {
	const c0 = process.cpuUsage();
	const t0 = performance.now();
	const ids = await fn();
	const wall = performance.now() - t0;
	const c = process.cpuUsage(c0);
	return { cpu: (c.user + c.system) / 1000, wall, n: ids.length };
}
const variants = [
	["Pi's SessionManager.listAll() (before)", async () => (await SessionManager.listAll()).map((s) => s.id)],
	["sessionIds (src/pi/sessions.ts)", () => sessionIds(base)],
];
for (const [, fn] of variants) await fn(); // warm-up: page cache, module code
const results = variants.map(() => []);
for (let r = 0; r < RUNS; r++) for (let i = 0; i < variants.length; i++) results[i].push(await time(variants[i][1]));
const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
console.log(`\nPi ${PI}: the session list of ${SESSIONS} sessions of ${KIB} KiB, ${RUNS} interleaved rounds\n`);
console.log("| variant | sessions | CPU ms (process) | wall ms | CPU ratio to listAll |");
console.log("| --- | ---: | ---: | ---: | ---: |");
const base0 = median(results[0].map((x) => x.cpu));
for (let i = 0; i < variants.length; i++) {
	const cpu = median(results[i].map((x) => x.cpu));
	console.log(`| ${variants[i][0]} | ${results[i][0].n} | ${cpu.toFixed(1)} | ${median(results[i].map((x) => x.wall)).toFixed(1)} | ${(cpu / base0).toFixed(3)} |`);
}
