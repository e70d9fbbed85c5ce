// Host Grep benchmark (docs/host.md "Benchmark"): the toolkit's Grep against Pi's grep (ripgrep as Pi runs it) on the
// same tree, in interleaved rounds (ours, theirs, ours, theirs, ...) so drift of the machine's speed hits both; the
// ratio ours/theirs is taken round by round and its median reported. The goal is <= 1.0x on every pattern.
//
// Both tools show the first 100 matches by default. Pi's grep runs `rg --json` and kills it at the 101st match it
// meets, in whatever order ripgrep's threads find them; ours walks the tree in path order and stops once the first
// 100 matches in path order (and whether there are more) are known, so it answers the same on every call. How far into
// the tree that is depends on where the matches lie, so each pattern's line says after how many files, in path
// order, the answer is known.
//
// Engine only (default): ours is timed around the in-process call (the addon loaded once); Pi's side is timed around
// ripgrep's whole process run exactly as Pi's grep tool runs it (same arguments, its JSON lines read until the 101st
// match, then killed), without Pi around either. Before timing, each pattern is checked: the same files match
// (`filesWithMatches` against `rg -l`), and the 100 matches ours shows are the first 100 of ripgrep's full list sorted
// by path and line.
//
// `--pi`: the same searches end to end through Pi 1.6.0's tool call (tool_execution_start -> end, timed by
// bench/fixtures/tool-timing.ts), where the user waits for them. Each round starts two `pi -p` processes in the tree
// (the faux model calls the tool CALLS times with `{pattern}`): one with the toolkit (host tools on) calling Grep, and
// one without it calling Pi's own grep tool (`--tools grep`: ripgrep from PATH, Pi's JSON parsing and render). The
// first call of each process is not counted (a Pi process's first tool call runs code for the first time, whatever the
// tool: bench/bash.mjs (d)); each process gives the median of its later calls. Beside ours, the engine's own run inside
// the call (the audit line's `durationMs`: the addon call from JS to its result), so what the wrapper adds shows.
//
// `--base FILE.node`: a second baseline, another build of the addon (e.g. the one before a change), timed beside the
// other two sides in the same rounds (in process, or through Pi with NAPI_RS_NATIVE_LIBRARY_PATH naming it).
//
// `--corpus`: search the pinned tree of bench/grep-corpus.mjs (about 17,000 files of npm packages, installed outside
// the repository once) with four patterns: no match, and about 460, 820 and 1,800 matches.
//
// Build the release addon first (`npm run build`); `rg` must be on PATH. Pi needs Node 22 for --pi. Usage:
//   node bench/grep.mjs [--root DIR | --corpus [--corpus-dir DIR]] [--pattern REGEX] [--runs N] [--base FILE.node]
//                       [--pi] [--once]
// Default root: the project's node_modules.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { tempDir } from "../scripts/tmp.mjs";
import { FAUX, NODE22, PI_VERSIONS, sandbox, writeToolConfig } from "../__test__/helpers/pi.mjs";
import { DEFAULT_CORPUS, ensureCorpus } from "./grep-corpus.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const native = require(join(ROOT, "index.js"));
const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i >= 0 ? process.argv[i + 1] : dflt;
};
const corpus = process.argv.includes("--corpus");
const root = corpus ? ensureCorpus(arg("--corpus-dir", DEFAULT_CORPUS)) : resolve(arg("--root", join(ROOT, "node_modules")));
const basePath = arg("--base") ? resolve(arg("--base")) : null;
const base = basePath ? require(basePath) : null;
// On the corpus: no match, and about 460, 820 and 1,800 matches. Elsewhere: a regex with Unicode word boundaries, the
// same with ASCII ones, and an alternation of literals.
const patterns = process.argv.includes("--pattern")
	? [arg("--pattern")]
	: corpus
		? ["\\bqqxj[a-z]*\\b", "toLowerCase|toUpperCase", "WeakMap", "deprecated"]
		: ["function\\s+[a-z]+Error\\b", "(?-u:\\b)function\\s+[a-z]+Error(?-u:\\b)", "TODO|FIXME"];
const runs = Number(arg("--runs", "7"));
const LIMIT = 100;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `median ${median(xs).toFixed(1)} ms (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`;
const fmtRatio = (xs) => `${median(xs).toFixed(2)}x (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
// The same files as our walk: hidden files, `.git` skipped, `.gitignore` honoured outside a git repository too.
const RG = ["--hidden", "--no-require-git", "-g", "!.git"];
// rg searches its stdin when that is a pipe and no path is given: give it none.
const NO_STDIN = ["ignore", "pipe", "pipe"];
const byPath = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

// `--once`: one Grep in a fresh process and exit, for whole-process timing by an outside harness.
if (process.argv.includes("--once")) {
	const agentOnce = tempDir("pct-grep-once-");
	const r = await new native.HostSession(root, agentOnce, "once").grep({ pattern: patterns[0] });
	rmSync(agentOnce, { recursive: true, force: true });
	console.log(r.ok ? `${r.files.length} files, ${r.matches.length} matches shown` : `${r.code}: ${r.message}`);
	process.exit(r.ok ? 0 : 1);
}
const rgCheck = spawnSync("rg", ["--version"], { encoding: "utf8" });
if (rgCheck.error || rgCheck.status !== 0) {
	console.error("bench/grep: `rg` (ripgrep) is not on PATH; install it (Debian: apt-get install ripgrep).");
	process.exit(2);
}
const agent = tempDir("pct-grep-bench-");
try {
	const s = new native.HostSession(root, agent, "bench");
	const b = base ? new base.HostSession(root, agent, "bench-base") : null;
	const files = rgLines(["--files", ...RG]).sort(byPath);
	console.log(`tree: ${root} (${files.length} files searched by rg), ${runs} interleaved rounds per pattern, ${rgCheck.stdout.split("\n")[0]}`);
	if (basePath) console.log(`second baseline: ${basePath}`);
	for (const pattern of patterns) {
		await check(s, pattern, files);
		if (process.argv.includes("--pi")) throughPi(pattern);
		else await engine(s, b, pattern);
	}
} finally {
	rmSync(agent, { recursive: true, force: true });
}

function rgLines(args) {
	const r = spawnSync("rg", args, { cwd: root, encoding: "utf8", maxBuffer: 1 << 30, stdio: NO_STDIN });
	if (r.status !== 0 && r.status !== 1) throw new Error(`rg ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
	return r.stdout.split("\n").filter(Boolean);
}

/** Correctness first, and where the answer lies: the same files match, and ours shows ripgrep's first 100 in path order. */
async function check(s, pattern, files) {
	const ours = await s.grep({ pattern, outputMode: "filesWithMatches", limit: 100_000 });
	if (!ours.ok) throw new Error(`Grep failed: ${ours.code}: ${ours.message}`);
	const rgFiles = new Set(rgLines(["-l", ...RG, pattern]));
	const ourFiles = new Set(ours.files);
	const onlyOurs = [...ourFiles].filter((f) => !rgFiles.has(f));
	const onlyRg = [...rgFiles].filter((f) => !ourFiles.has(f));
	// rg -n: path:line:text; paths here never contain ':'.
	const all = rgLines(["-n", "--no-heading", "--with-filename", ...RG, pattern])
		.map((l) => {
			const [path, line] = l.split(":", 2);
			return { path, line: Number(line) };
		})
		.sort((x, y) => byPath(x.path, y.path) || x.line - y.line);
	const shown = await s.grep({ pattern });
	if (!shown.ok) throw new Error(`Grep failed: ${shown.code}: ${shown.message}`);
	const want = all.slice(0, LIMIT).map((m) => `${m.path}:${m.line}`);
	const got = shown.matches.map((m) => `${m.path}:${m.line}`);
	const same = want.length === got.length && want.every((w, i) => w === got[i]);
	// The file whose match settles the answer: the 101st match's (it proves the cut), or the tree's end.
	const settle = all.length > LIMIT ? files.indexOf(all[LIMIT].path) + 1 : files.length;
	console.log(`\npattern /${pattern}/: ${all.length} matches in ${rgFiles.size} files (rg)`);
	console.log(`  files with a match: ours ${ourFiles.size}, rg ${rgFiles.size}; only ours ${onlyOurs.length}, only rg ${onlyRg.length}`);
	for (const f of [...onlyOurs.slice(0, 5), ...onlyRg.slice(0, 5)]) console.log(`  differs: ${f}`);
	console.log(`  the ${got.length} matches shown are rg's first ${want.length} in path order: ${same ? "yes" : "NO"}`);
	console.log(`  answer known after ${settle} of ${files.length} files in path order (${((100 * settle) / files.length).toFixed(0)}%)`);
}

/** ripgrep's whole run as Pi's grep tool makes it: `--json`, lines read until the 101st match, then killed. */
function rgAsPi(pattern) {
	return new Promise((resolveRun, reject) => {
		const t = performance.now();
		const child = spawn("rg", ["--no-config", "--json", "--line-number", "--color=never", "--hidden", "--", pattern, "."], { cwd: root, stdio: NO_STDIN });
		const rl = createInterface({ input: child.stdout });
		let matches = 0;
		rl.on("line", (line) => {
			if (matches > LIMIT) return;
			const event = JSON.parse(line);
			if (event.type === "match" && ++matches > LIMIT) child.kill();
		});
		child.on("error", reject);
		child.on("close", () => resolveRun(performance.now() - t));
	});
}

async function timeCall(session, pattern) {
	const t = performance.now();
	const r = await session.grep({ pattern });
	if (!r.ok) throw new Error(r.message);
	return performance.now() - t;
}

/** Engine only: ours and the base build in process, ripgrep as Pi runs it. */
async function engine(s, b, pattern) {
	// One warm-up round (page cache, thread pools), not counted.
	await timeCall(s, pattern);
	if (b) await timeCall(b, pattern);
	await rgAsPi(pattern);
	const ours = [], theirs = [], old = [], ratio = [], vsOld = [];
	for (let i = 0; i < runs; i++) {
		const x = await timeCall(s, pattern);
		const z = b ? await timeCall(b, pattern) : null;
		const y = await rgAsPi(pattern);
		ours.push(x);
		theirs.push(y);
		ratio.push(x / y);
		if (b) {
			old.push(z);
			vsOld.push(x / z);
		}
	}
	console.log(`  ours (in-process Grep, default limit):        ${fmt(ours)}`);
	if (b) console.log(`  base build (in-process Grep):                 ${fmt(old)}`);
	console.log(`  rg as Pi's grep runs it (stopped at the 101st): ${fmt(theirs)}`);
	console.log(`  ratio ours/rg, round by round: ${fmtRatio(ratio)}; goal <= 1.0x`);
	if (b) console.log(`  ratio ours/base build: ${fmtRatio(vsOld)}; base/rg: ${fmtRatio(old.map((z, i) => z / theirs[i]))}`);
}

/** `--pi`: one pattern through Pi's tool call, ours (and the base build) against Pi's grep tool (header above). */
function throughPi(pattern) {
	const CALLS = 6;
	const version = PI_VERSIONS.find((v) => v.name === "1.6.0");
	const box = sandbox("pct-bench-grep-pi-");
	writeToolConfig(box, { hostTools: { enabled: true } });
	const TIMING = join(ROOT, "bench/fixtures/tool-timing.ts");
	const sample = (side) => {
		const theirs = side === "pi";
		const tool = theirs ? "grep" : "Grep";
		const call = `{ tools: [{ name: "${tool}", args: { pattern: ${JSON.stringify(pattern)} } }] }`;
		const script = join(box.base, "script.mjs");
		writeFileSync(script, `export default [${Array(CALLS).fill(call).join(", ")}, { text: "done" }];\n`);
		const times = join(box.base, "times.jsonl");
		rmSync(times, { force: true });
		const auditDir = join(box.agentDir, "pi-codex-toolkit", "audit");
		rmSync(auditDir, { recursive: true, force: true });
		const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script, PCT_BENCH_TIMES: times };
		delete env.NODE_OPTIONS;
		// Ours loads the addon index.js finds (NAPI_RS_NATIVE_LIBRARY_PATH, when set, names another build).
		if (side === "pi") delete env.NAPI_RS_NATIVE_LIBRARY_PATH;
		if (side === "base") env.NAPI_RS_NATIVE_LIBRARY_PATH = basePath;
		const ext = theirs ? ["--tools", "grep"] : ["-e", ROOT];
		const args = [version.cli, "--no-session", "-ne", "-e", FAUX, "-e", TIMING, ...ext, "--provider", "faux", "--model", "faux-1", "-p", "go"];
		execFileSync(NODE22, args, { cwd: root, env, stdio: "ignore" });
		const recs = readFileSync(times, "utf8").trim().split("\n").map((l) => JSON.parse(l));
		if (recs.length !== CALLS || recs.some((r) => r.tool !== tool || r.isError)) throw new Error(`unexpected tool calls: ${JSON.stringify(recs)}`);
		// Ours: the engine's own run inside the call (the audit line's durationMs: `session.grep` from the call into the
		// addon to its result in JS), so the wrapper's share of the call shows beside it.
		if (!theirs) {
			const lines = readdirSync(auditDir).flatMap((f) => readFileSync(join(auditDir, f), "utf8").trim().split("\n"));
			const runs = lines.map((l) => JSON.parse(l)).filter((a) => a.tool === tool).map((a) => a.durationMs);
			if (runs.length !== CALLS) throw new Error(`expected ${CALLS} audit lines, got ${runs.length}`);
			inner[side].push(median(runs.slice(1)));
		}
		return median(recs.slice(1).map((r) => r.ms));
	};
	const inner = { ours: [], base: [] };
	const sides = basePath ? ["ours", "pi", "base"] : ["ours", "pi"];
	// One uncounted round (page cache, jiti's cache of the toolkit's bundle).
	for (const side of sides) sample(side);
	const t = Object.fromEntries(sides.map((side) => [side, []]));
	for (let i = 0; i < runs; i++) for (const side of sides) t[side].push(sample(side));
	const ratio = (a, b) => t[a].map((x, i) => x / t[b][i]);
	console.log(`  through Pi ${version.name}'s tool call, ${runs} rounds (median of calls 2-${CALLS} of each process):`);
	// The first (uncounted) round's samples are left out of the engine's times too.
	for (const side of sides) if (inner[side]) inner[side] = inner[side].slice(1);
	console.log(`  ours (the toolkit's Grep):            ${fmt(t.ours)}; of it the engine's run: ${fmt(inner.ours)}`);
	if (basePath) console.log(`  base build (the toolkit's Grep):      ${fmt(t.base)}; of it the engine's run: ${fmt(inner.base)}`);
	console.log(`  Pi's grep tool (ripgrep from PATH):   ${fmt(t.pi)}`);
	console.log(`  ratio ours/Pi's, round by round: ${fmtRatio(ratio("ours", "pi"))}; goal <= 1.0x`);
	if (basePath) console.log(`  ratio base/Pi's: ${fmtRatio(ratio("base", "pi"))}; ours/base: ${fmtRatio(ratio("ours", "base"))}`);
}
