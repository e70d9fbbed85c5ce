// Host Read benchmark (docs/host.md):
//  (a) Read of a 100,000-line file (first window, default limit) by HostSession against Pi's own read tool on the
//      same file, in interleaved pairs (ours, Pi's, ours, ...); the ratio ours/Pi's is taken pair by pair. Both are
//      timed in process around the call. Ours also hashes the whole file for its tag and records the seen lines.
//  (b) The snapshot store's memory after 10,000 reads of 300 files (sizes from 1 KiB to 1 MiB, paged reads among
//      them): its own accounting (`snapshotStats`) must stay within 64 paths and 8 MiB, and the process's RSS growth
//      is printed beside it.
// Build the release addon first (`npm run build`). Pi needs Node 22: node_modules/node/bin/node bench/read.mjs [--runs N]
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { createReadTool } from "@earendil-works/pi-coding-agent";
import { tempDir } from "../scripts/tmp.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(ROOT, "index.js"));
const i = process.argv.indexOf("--runs");
const runs = i >= 0 ? Number(process.argv[i + 1]) : 15;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `median ${median(xs).toFixed(2)} ms (min ${Math.min(...xs).toFixed(2)}, max ${Math.max(...xs).toFixed(2)})`;

const dir = tempDir("pct-read-bench-");
try {
	const ws = join(dir, "ws");
	const agent = join(dir, "agent");
	const { mkdirSync } = await import("node:fs");
	mkdirSync(ws);
	mkdirSync(agent);
	const lines = Array.from({ length: 100_000 }, (_, k) => `line ${k}: the quick brown fox jumps over ${k % 97} lazy dogs`);
	writeFileSync(join(ws, "big.txt"), lines.join("\n") + "\n");
	const s = new native.HostSession(ws, agent, "bench");
	const pi = createReadTool(ws);

	// (a)
	const ours = async () => {
		const t = performance.now();
		const r = await s.read({ path: "big.txt" });
		if (!r.ok || !r.truncated) throw new Error(JSON.stringify(r).slice(0, 300));
		return performance.now() - t;
	};
	const theirs = async () => {
		const t = performance.now();
		const r = await pi.execute("bench", { path: "big.txt" });
		if (!r.content[0].text.includes("Use offset=")) throw new Error("Pi's read did not truncate as expected");
		return performance.now() - t;
	};
	await ours();
	await theirs();
	const a = [], b = [], ratio = [];
	for (let k = 0; k < runs; k++) {
		const x = await ours();
		const y = await theirs();
		a.push(x);
		b.push(y);
		ratio.push(x / y);
	}
	console.log(`(a) Read of a 100,000-line file (${(lines.join("\n").length / 1048576).toFixed(1)} MiB), first window (both stop at 50 KiB), ${runs} interleaved pairs`);
	console.log(`    ours (HostSession.read): ${fmt(a)}`);
	console.log(`    Pi's read tool:          ${fmt(b)}`);
	console.log(`    ratio ours/Pi's, pair by pair: median ${median(ratio).toFixed(2)}x (min ${Math.min(...ratio).toFixed(2)}, max ${Math.max(...ratio).toFixed(2)})`);

	// (b)
	const sizes = [1024, 16 * 1024, 256 * 1024, 1024 * 1024];
	for (let f = 0; f < 300; f++) {
		const size = sizes[f % sizes.length];
		const row = `file ${f} `.padEnd(63, "x") + "\n";
		writeFileSync(join(ws, `f${f}.txt`), row.repeat(Math.ceil(size / row.length)));
	}
	global.gc?.();
	const rss0 = process.memoryUsage().rss;
	const t0 = performance.now();
	let maxBytes = 0, maxPaths = 0;
	for (let k = 0; k < 10_000; k++) {
		const f = (k * 7919) % 300;
		const r = await s.read({ path: `f${f}.txt`, offset: 1 + ((k * 31) % 16), limit: 200 });
		if (!r.ok) throw new Error(r.message);
		if (k % 100 === 0) {
			const st = s.snapshotStats();
			maxBytes = Math.max(maxBytes, st.retainedBytes);
			maxPaths = Math.max(maxPaths, st.paths);
		}
	}
	const elapsed = performance.now() - t0;
	const st = s.snapshotStats();
	global.gc?.();
	const rss1 = process.memoryUsage().rss;
	console.log(`(b) 10,000 reads of 300 files (1 KiB-1 MiB) in ${(elapsed / 1000).toFixed(2)} s`);
	console.log(`    snapshot store after: ${st.paths} paths, ${(st.retainedBytes / 1048576).toFixed(2)} MiB retained (largest seen: ${maxPaths} paths, ${(maxBytes / 1048576).toFixed(2)} MiB); bounds 64 paths, 8 MiB`);
	console.log(`    process RSS growth over the 10,000 reads: ${((rss1 - rss0) / 1048576).toFixed(1)} MiB`);
	if (st.paths > 64 || maxPaths > 64 || maxBytes > 8 * 1048576) {
		console.error("snapshot store exceeded its bounds");
		process.exitCode = 1;
	}
} finally {
	rmSync(dir, { recursive: true, force: true });
}
