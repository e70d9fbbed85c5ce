// Code cells, each figure beside a named baseline in the same run, reported as a ratio:
//  (a) cell start-up to completed result for a trivial program: our CodeManager (a thread + fresh QuickJS runtime
//      per cell) vs Node worker_threads + vm (a new Worker per cell running the program in a vm context — the
//      approach a TypeScript extension uses), and vs Pi 1.x's built-in codemode sandbox (QuickJS on WASI);
//  (b) compute: 10 million additions and a 1 MB JSON round trip, same three engines.
// Use a release build (`npx napi build --platform --release`). Usage: node bench/code.mjs [--quick]
import { Worker } from "node:worker_threads";
import { native } from "../__test__/helpers/addon.mjs";

const quick = process.argv.includes("--quick");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const PROGRAMS = {
	trivial: "return 1 + 1",
	additions: "let s = 0; for (let i = 0; i < 10000000; i++) s += i; return s",
	json1mb:
		"const items = []; for (let i = 0; i < 10000; i++) items.push({id: i, name: 'item-' + i, tags: ['a', 'b', 'c'], score: i * 1.5, note: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'});" +
		" const s = JSON.stringify({items}); const back = JSON.parse(s); return s.length + ':' + back.items.length",
};

// --- ours ---
const manager = new native.CodeManager(async () => ({ allow: true }));
async function ours(code) {
	const r = await manager.exec({ code, yield_time_ms: 60000 });
	if (r.status !== "completed") throw new Error(`cell failed: ${r.text}`);
	return r.result;
}

// --- baseline: a new Worker per cell, running the program in a fresh vm context ---
const WORKER_SRC = `
const { parentPort, workerData } = require("node:worker_threads");
const vm = require("node:vm");
const out = [];
const context = vm.createContext({ print: (...a) => out.push(a.join(" ")) });
const fn = vm.runInContext("(async function () {" + workerData + "\\n})", context);
fn().then((v) => parentPort.postMessage({ ok: true, result: typeof v === "string" ? v : JSON.stringify(v) }),
	(e) => parentPort.postMessage({ ok: false, error: String(e && e.stack || e) }));
`;
function workerVm(code) {
	return new Promise((resolve, reject) => {
		const w = new Worker(WORKER_SRC, { eval: true, workerData: code, resourceLimits: { maxOldGenerationSizeMb: 256 } });
		w.once("message", (m) => {
			w.terminate();
			m.ok ? resolve(m.result) : reject(new Error(m.error));
		});
		w.once("error", reject);
	});
}

// --- Pi 1.x's codemode sandbox (QuickJS compiled to WASI, in a worker) ---
let codemode = null;
try {
	const mod = await import("@earendil-works/pi-codemode");
	codemode = new mod.CodemodeSandbox({ timeoutMs: 120000 });
} catch (e) {
	console.log(`(Pi 1.x codemode not available: ${e.message})`);
}
async function piCodemode(code) {
	const r = await codemode.execute(code);
	if (r.error) throw new Error(`codemode failed: ${JSON.stringify(r.error)}`);
	return JSON.stringify(r.output ?? r.outcome ?? "").slice(0, 40);
}

async function timeIt(fn, code, rounds) {
	await fn(code); // warm-up
	const xs = [];
	for (let i = 0; i < rounds; i++) {
		const t0 = performance.now();
		await fn(code);
		xs.push(performance.now() - t0);
	}
	return median(xs);
}

const engines = [
	["pct-code (rquickjs thread)", ours],
	["worker_threads + vm", workerVm],
	...(codemode ? [["Pi 1.x codemode (QuickJS WASI)", piCodemode]] : []),
];

// Sanity: every engine computes the same answers.
for (const [name, fn] of engines.slice(0, 2)) {
	const a = await fn(PROGRAMS.additions);
	if (a !== "49999995000000") throw new Error(`${name} computed ${a}`);
}

const rows = [];
for (const [label, code, rounds] of [
	["(a) start-up: trivial program", PROGRAMS.trivial, quick ? 20 : 200],
	["(b) 10M additions", PROGRAMS.additions, quick ? 3 : 7],
	["(b) 1 MB JSON round trip", PROGRAMS.json1mb, quick ? 3 : 9],
]) {
	const ms = {};
	for (const [name, fn] of engines) ms[name] = await timeIt(fn, code, rounds);
	const base = ms["worker_threads + vm"];
	for (const [name] of engines) {
		rows.push({ workload: label, engine: name, "median ms": ms[name].toFixed(3), "ratio vs worker+vm": (ms[name] / base).toFixed(3) });
	}
}
console.log("\nCode cells (median per cell; ratio < 1 = faster than the worker_threads + vm baseline)");
console.table(rows);
await manager.shutdown();
if (codemode) await codemode.close();
