// What the toolkit draws must never hold up Pi (docs/render.md "Diffs"): the longest event-loop stall on Node's main
// thread while the toolkit makes the permission card, the row preview and the landed result view of the biggest
// changes it accepts — goal ≤ 50 ms — and how long the card takes to be ready.
//  Inputs (each in its own temp workspace):
//   - a Write that rewrites a 20,000-line file, every line changed (the case that froze Pi: 54.8 s before);
//   - the same file with one line changed (the diff finishes: real rows);
//   - a Write over a 2 MiB file (the diff limit: the largest file the engine compares) and one over it;
//   - an Edit preview on a 2 MiB file (the preview read limit);
//   - rows as Pi draws them (the renderer's component in pi-tui's Box, Pi's real theme, 120 columns), each collapsed
//     and expanded on its own (ctrl+o redraws one row in one frame): the landed result of a Write with 500 rows of
//     400 ASCII characters (the most rows a view keeps), of 200 CJK characters and of 100 emoji (the rows pi-tui
//     measures slowly), a new 500-line Python file (highlighted), Bash output at its limit (2 x 50 KiB of short
//     lines) and one 50 KiB line; and the redraw a running Bash row gets every second for its timer.
//  And, for scale, the same stall probe while nothing runs (the machine's own noise).
//  Baseline, in the same run: the hand-written JS line diff the card used before (src/pi/render/diff.ts `lineDiff` at
//  the commit before the engine's diff replaced it, loaded from git), on a rewrite of 5,000 lines (20,000 with
//  --full: it takes about a minute there).
//  The stall is the largest gap between two turns of a setImmediate chain while the work runs (the same gap a
//  keypress or a redraw would wait), and beside it the main thread's own CPU time in its busiest turn (on a loaded
//  machine the gap also holds the time the thread waited for a core; the idle probe shows how much); the ratio is baseline / ours for the 5,000-line card. Each case runs once
//  unmeasured first (warm code, as in a running Pi).
//  With --before <git ref>, every row case is drawn a second time by the renderers as they were at that commit
//  (`[before]`), in the same run: the baseline for the rows, with the ratio before / now.
// Build the addon first (`npm run build`): node bench/render-stall.mjs [--runs N] [--quick] [--full] [--only TEXT]
//   [--before REF]
import { execFileSync } from "node:child_process";
import { symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { tempDir } from "../scripts/tmp.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { cardText } = await import(join(ROOT, "src/pi/render/card.ts"));
const { renderersFor } = await import(join(ROOT, "src/pi/render/tools.ts"));
const { initTheme } = await import("@earendil-works/pi-coding-agent");
initTheme("dark", false);

const i = process.argv.indexOf("--runs");
// `--before <git ref>`: also draw every row with the renderers as they were at that commit (src/ at the ref, in a
// temp folder that shares this clone's engine and node_modules): the baseline for the rows, in the same run.
const bi = process.argv.indexOf("--before");
let beforeMod;
if (bi >= 0) {
	const ref = process.argv[bi + 1];
	const dir = tempDir("pct-render-stall-before-");
	execFileSync("sh", ["-c", `git archive ${JSON.stringify(ref)} src | tar -x -C ${JSON.stringify(dir)}`], { cwd: ROOT });
	for (const f of ["index.js", "index.d.ts", "package.json", "node_modules"]) symlinkSync(join(ROOT, f), join(dir, f));
	beforeMod = await import(pathToFileURL(join(dir, "src/pi/render/tools.ts")).href);
}
const runs = i >= 0 ? Number(process.argv[i + 1]) : process.argv.includes("--quick") ? 3 : 7;
const full = process.argv.includes("--full");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs `work` while a setImmediate chain measures the gaps between event-loop turns; resolves its duration and the
 * longest gap (ms). */
async function stall(work) {
	let last = performance.now();
	let worst = 0;
	// The main thread's own CPU time in each turn (process.threadCpuUsage): on a loaded machine a gap is also time
	// the thread waited for a core; the CPU in the busiest turn is the part of a stall the work itself made. The
	// kernel counts it in scheduler ticks (4 ms on Linux), so it says something about stalls of 10 ms and more.
	const cpuNow = () => {
		const u = process.threadCpuUsage();
		return (u.user + u.system) / 1000;
	};
	let lastCpu = cpuNow();
	let busiest = 0;
	let on = true;
	const tick = () => {
		const t = performance.now();
		const c = cpuNow();
		worst = Math.max(worst, t - last);
		busiest = Math.max(busiest, c - lastCpu);
		last = t;
		lastCpu = c;
		if (on) setImmediate(tick);
	};
	setImmediate(tick);
	await new Promise((r) => setImmediate(r));
	const t0 = performance.now();
	await work();
	const ms = performance.now() - t0;
	on = false;
	await new Promise((r) => setImmediate(r));
	// The gap that spans the end of the work counts too.
	worst = Math.max(worst, performance.now() - last);
	busiest = Math.max(busiest, cpuNow() - lastCpu);
	return { ms, stall: worst, cpu: busiest };
}

const lines = (n, f) => Array.from({ length: n }, (_, k) => `${f(k + 1)}\n`).join("");
const info = (dir, path) => ({ ok: true, root: "workspace", canonical: join(dir, path), path });

// The baseline: diff.ts as it was before the engine's diff, loaded from git history.
// The newest commit that added or removed `lineDiff` is the one that removed it; its parent has it.
const before = execFileSync("git", ["log", "--format=%H", "-1", "-S", "export function lineDiff", "--", "src/pi/render/diff.ts"], { cwd: ROOT, encoding: "utf8" }).trim();
const oldDiffSrc = execFileSync("git", ["show", `${before}~1:src/pi/render/diff.ts`], { cwd: ROOT, encoding: "utf8" });
const oldDir = tempDir("pct-render-stall-old-");
writeFileSync(join(oldDir, "diff.ts"), oldDiffSrc);
const old = await import(pathToFileURL(join(oldDir, "diff.ts")).href);
if (typeof old.lineDiff !== "function") throw new Error(`the baseline's diff.ts (${before}~1) has no lineDiff`);

async function card(n, f, g) {
	const dir = tempDir("pct-render-stall-");
	writeFileSync(join(dir, "big.txt"), lines(n, f));
	const content = lines(n, g);
	return () => cardText("Write", { path: "big.txt", content }, info(dir, "big.txt"), dir);
}

const cases = [];
const add = async (name, make, baseline = false) => cases.push({ name, run: await make(), baseline });
await add("card: Write rewriting 5,000 lines (every line changed)", () => card(5_000, (k) => `old line ${k}`, (k) => `new line ${k}`));
await add("card: Write rewriting 20,000 lines (every line changed)", () => card(20_000, (k) => `old line ${k}`, (k) => `new line ${k}`));
await add("card: Write of 20,000 lines, one changed", () => card(20_000, (k) => `line ${k}`, (k) => (k === 10_000 ? "changed" : `line ${k}`)));
await add("card: Write over a 2 MiB file (the diff limit)", () => card((2 * 1024 * 1024) / 64 - 1, (k) => `${"x".repeat(50)} ${String(k).padStart(12)}`, (k) => `${"y".repeat(50)} ${String(k).padStart(12)}`));
await add("card: Write over an 8 MiB file (over the diff limit: not compared)", () => card((8 * 1024 * 1024) / 64, (k) => `${"x".repeat(50)} ${String(k).padStart(12)}`, (k) => `${"y".repeat(50)} ${String(k).padStart(12)}`));
await add("card: Edit on a 2 MiB file (the preview read limit)", async () => {
	const dir = tempDir("pct-render-stall-");
	writeFileSync(join(dir, "e.txt"), lines(2 * 1024 * 1024 / 32, (k) => `${"e".repeat(20)} ${String(k).padStart(10)}`));
	return () => cardText("Edit", { path: "e.txt", tag: "T", ops: "PUT 10.=12:\n+ten\n+eleven" }, info(dir, "e.txt"), dir);
});
// Rows are drawn as Pi draws a tool row: the renderer's component inside pi-tui's Box (padding, the row's background),
// with Pi's real theme, at 120 columns. Each run draws fresh inputs (pi-tui caches the widths of the last 512
// non-ASCII strings it measured; a row drawn before would be measured for free).
const { Box } = await import("@earendil-works/pi-tui");
const realTheme = globalThis[Symbol.for("@earendil-works/pi-coding-agent:theme")];
const variants = runs + 2;
const drawRow = (renderers, name, results, path, expanded) => {
	let k = 0;
	return () => {
		const r = results[k++ % results.length];
		const ctx = { args: { path }, toolCallId: `b${k}`, invalidate() {}, lastComponent: undefined, state: {}, cwd: ROOT, executionStarted: true, argsComplete: true, isPartial: false, expanded, showImages: false, isError: false };
		const box = new Box(1, 1, (s) => realTheme.bg("toolSuccessBg", s));
		box.addChild(renderers(name).renderResult(r, { expanded, isPartial: false }, realTheme, ctx));
		box.render(120);
	};
};
const landed = (v, row) => {
	const rows = Array.from({ length: 500 }, (_, k) => `${k % 2 ? "+" : "-"}${String(k + 1).padStart(4)} ${row(k, v)}`).join("\n");
	return { content: [{ type: "text", text: "Wrote" }], details: { created: false, lines: 20_000, diff: { text: rows, added: 250, removed: 250, exact: true, omittedRows: 39_500, beforeLines: 20_000, afterLines: 20_000 } } };
};
const make = (f) => Array.from({ length: variants }, (_, v) => f(v));
const rowCases = [
	["landed Write, 500 rows of 400 ASCII characters", "Write", make((v) => landed(v, (k) => `${v} ${"z".repeat(396)}`)), "big.txt"],
	["landed Write, 500 rows of 200 CJK characters", "Write", make((v) => landed(v, (k) => `${v} ${"漢字".repeat(100)}`)), "big.txt"],
	["landed Write, 500 rows of 100 emoji", "Write", make((v) => landed(v, (k) => `${v} ${"😀".repeat(100)}`)), "big.txt"],
	[
		"landed new 500-line Python file (highlighted collapsed)",
		"Write",
		make((v) => {
			const rows = Array.from({ length: 500 }, (_, k) => `+${String(k + 1).padStart(3)} def f${k}_${v}(x): return [i * ${k} for i in range(x) if i % 3 == 0]  # ${"c".repeat(60)}`).join("\n");
			return { content: [{ type: "text", text: "Created" }], details: { created: true, lines: 500, diff: { text: rows, added: 500, removed: 0, exact: true, omittedRows: 0, beforeLines: 0, afterLines: 500 } } };
		}),
		"gen.py",
	],
	// Bash keeps the last 51,200 bytes of each stream (docs/host.md): both full, of short lines, and one long line.
	["Bash output, 2 x 50 KiB of short lines", "Bash", make((v) => ({ content: [{ type: "text", text: "" }], details: { stdout: Array.from({ length: 5120 }, (_, k) => `${v}ok ${k}`.padEnd(9)).join("\n"), stderr: Array.from({ length: 5120 }, (_, k) => `${v}er ${k}`.padEnd(9)).join("\n"), exitCode: 0 } })), undefined],
	["Bash output, one line of 50 KiB", "Bash", make((v) => ({ content: [{ type: "text", text: "" }], details: { stdout: `${v}${"w ".repeat(25_600)}`, stderr: "", exitCode: 0 } })), undefined],
];
for (const [label, name, results, path] of rowCases)
	for (const expanded of [false, true]) {
		const rows = { name: `row: ${label}, ${expanded ? "expanded" : "collapsed"}` };
		cases.push({ ...rows, run: drawRow(renderersFor, name, results, path, expanded) });
		if (beforeMod) cases.push({ name: `${rows.name} [before]`, run: drawRow(beforeMod.renderersFor, name, results, path, expanded) });
	}
// A running row is drawn again every second (its timer): what that redraw costs with 1,000 lines of output expanded.
{
	const r = { content: [{ type: "text", text: "" }], details: { stdout: Array.from({ length: 1000 }, (_, k) => `build step ${k} ${"·".repeat(40)}`).join("\n"), stderr: "", exitCode: 0 } };
	const redraw = (renderers) => {
		const state = {};
		let last;
		const box = new Box(1, 1, (s) => realTheme.bg("toolPendingBg", s));
		return () => {
			const ctx = { args: { command: "make" }, toolCallId: "tick", invalidate() {}, lastComponent: last, state, cwd: ROOT, executionStarted: true, argsComplete: true, isPartial: true, expanded: true, showImages: false, isError: false };
			state.startedAt = Date.now() - 1000 * Math.floor(Math.random() * 100);
			box.clear();
			last = renderers("Bash").renderResult(r, { expanded: true, isPartial: true }, realTheme, ctx);
			box.addChild(last);
			box.render(120);
			clearInterval(state.interval);
			state.interval = undefined;
		};
	};
	const n = "redraw: a running Bash row's timer tick, 1,000 lines expanded";
	cases.push({ name: n, run: redraw(renderersFor) });
	if (beforeMod) cases.push({ name: `${n} [before]`, run: redraw(beforeMod.renderersFor) });
}
cases.push({ name: "idle: the probe alone, nothing running (the machine's own noise)", run: () => new Promise((r) => setTimeout(r, 300)) });
const baseN = full ? 20_000 : 5_000;
cases.push({
	name: `baseline: the old JS lineDiff on a ${baseN.toLocaleString("en")}-line rewrite (the card's diff before)`,
	baseline: true,
	run: () => old.lineDiff(lines(baseN, (k) => `old line ${k}`), lines(baseN, (k) => `new line ${k}`)),
});

// `--only <text>`: the cases whose name contains it (and the idle probe).
const o = process.argv.indexOf("--only");
if (o >= 0) cases.splice(0, cases.length, ...cases.filter((c) => c.name.includes(process.argv[o + 1]) || c.name.startsWith("idle")));
const results = new Map(cases.map((c) => [c.name, { ms: [], stall: [], cpu: [] }]));
// One unmeasured round first: Pi is a long-running process, its code warm (highlight.js loads a language on first
// use, V8 compiles the wrapping code); the cold first draw is not what a person sees on the hundredth row.
for (const c of cases) if (!c.baseline) await c.run();
for (let r = 0; r < runs; r++) {
	for (const c of cases) {
		// The baseline at 20,000 lines takes about a minute: once is enough to show it.
		if (c.baseline && full && r > 0) continue;
		const m = await stall(c.run);
		results.get(c.name).ms.push(m.ms);
		results.get(c.name).stall.push(m.stall);
		results.get(c.name).cpu.push(m.cpu);
	}
}
console.log(`runs: ${runs} (median of each; the goal is a stall of at most 50 ms)`);
for (const [name, m] of results) {
	console.log(
		`${name}\n    ready in ${median(m.ms).toFixed(1)} ms, longest main-thread stall ${median(m.stall).toFixed(1)} ms (max ${Math.max(...m.stall).toFixed(1)}), its own CPU in the busiest turn ${median(m.cpu).toFixed(1)} ms (max ${Math.max(...m.cpu).toFixed(1)})`,
	);
}
const ours = results.get("card: Write rewriting 5,000 lines (every line changed)");
const base = [...results].find(([n]) => n.startsWith("baseline"))?.[1];
if (!full && ours && base) console.log(`5,000-line rewrite card, longest stall: baseline / ours = ${(median(base.stall) / median(ours.stall)).toFixed(0)}x`);
for (const [name, m] of results) {
	const b = results.get(`${name} [before]`);
	if (b) console.log(`${name}: longest stall before / now = ${(median(b.stall) / median(m.stall)).toFixed(1)}x`);
}
const worst = Math.max(...[...results].filter(([n]) => !n.startsWith("baseline") && !n.startsWith("idle") && !n.endsWith("[before]")).map(([, m]) => median(m.stall)));
const busiest = Math.max(...[...results].filter(([n]) => !n.startsWith("baseline") && !n.startsWith("idle") && !n.endsWith("[before]")).map(([, m]) => median(m.cpu)));
console.log(`the toolkit's longest stall over every input: ${worst.toFixed(1)} ms (goal ≤ 50 ms); main-thread CPU in its busiest turn: ${busiest.toFixed(1)} ms`);
