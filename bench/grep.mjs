// Host Grep benchmark (docs/host.md): the in-process Grep of HostSession against ripgrep (`rg`, on PATH) over the
// same large tree, in interleaved pairs (ours, rg, ours, rg, ...) so drift of the machine's speed hits both; the
// ratio ours/rg is taken pair by pair and its median reported. The goal is <= 1.0x rg's wall time (docs/host.md
// "Benchmark").
//
// Both sides search the same files: hidden files included, `.git` skipped, `.gitignore` honoured even outside a git
// repository (`rg --hidden --no-require-git -g '!.git'`). Ours is timed around the call (the addon is loaded once);
// rg is timed around its whole process (start-up included, output read through a pipe: rg answers faster when its
// stdout is /dev/null, which would not be a fair comparison). Before timing, the set of files with a match must
// agree (`filesWithMatches` vs `rg -l`); files ripgrep treats differently (a NUL after a match past its first
// buffer) are reported, not hidden.
//
// `--pi`: the same searches end to end through Pi 1.6.0's tool call (tool_execution_start -> end, timed by
// bench/fixtures/tool-timing.ts), where the user waits for them. Each round starts two `pi -p` processes in the tree
// (the faux model calls the tool CALLS times with `{pattern}`): one with the toolkit (host tools on) calling Grep, and
// one without it calling Pi's own grep tool (`--tools grep`: ripgrep from PATH, Pi's JSON parsing and render). Both
// tools show at most 100 matches by default; Pi's stops ripgrep at the 100th, ours counts every match of the tree
// (so a pattern with more matches than that is not the same work). The first call of each process is not counted (a
// Pi process's first tool call runs code for the first time, whatever the tool: bench/bash.mjs (d)); each process
// gives the median of its later calls, and the ratio ours/Pi's is taken round by round.
//
// Build the release addon first (`npm run build`). Pi needs Node 22 for --pi. Usage:
//   node bench/grep.mjs [--root DIR] [--pattern REGEX] [--runs N] [--once] [--pi]
// Default root: the project's node_modules (tens of thousands of files).
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { tempDir } from "../scripts/tmp.mjs";
import { FAUX, NODE22, PI_VERSIONS, sandbox, writeToolConfig } from "../__test__/helpers/pi.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(ROOT, "index.js"));
const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i >= 0 ? process.argv[i + 1] : dflt;
};
const root = resolve(arg("--root", join(ROOT, "node_modules")));
// A regex with Unicode word boundaries, the same with ASCII ones, and an alternation of literals.
const patterns = process.argv.includes("--pattern")
	? [arg("--pattern")]
	: ["function\\s+[a-z]+Error\\b", "(?-u:\\b)function\\s+[a-z]+Error(?-u:\\b)", "TODO|FIXME"];
const runs = Number(arg("--runs", "7"));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const RG = ["--hidden", "--no-require-git", "-g", "!.git"];
// rg searches its stdin when that is a pipe and no path is given: give it none.
const NO_STDIN = ["ignore", "pipe", "pipe"];

// `--once`: one Grep in a fresh process and exit, for whole-process timing by an outside harness
// (e.g. `/usr/bin/time -v node bench/grep.mjs --once --pattern P` against `rg -n P`).
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
	const files = spawnSync("rg", ["--files", ...RG], { cwd: root, encoding: "utf8", maxBuffer: 1 << 30, stdio: NO_STDIN }).stdout.split("\n").filter(Boolean).length;
	console.log(`tree: ${root} (${files} files searched by rg), ${runs} interleaved pairs per pattern`);
	if (process.argv.includes("--pi")) for (const pattern of patterns) throughPi(pattern);
	else for (const pattern of patterns) await one(s, pattern);
} finally {
	rmSync(agent, { recursive: true, force: true });
}

/** `--pi`: one pattern through Pi's tool call, ours against Pi's grep tool (header above). */
function throughPi(pattern) {
	const CALLS = 6;
	const version = PI_VERSIONS.find((v) => v.name === "1.6.0");
	const box = sandbox("pct-bench-grep-pi-");
	writeToolConfig(box, { hostTools: { enabled: true } });
	const TIMING = join(ROOT, "bench/fixtures/tool-timing.ts");
	const sample = (theirs) => {
		const tool = theirs ? "grep" : "Grep";
		const call = `{ tools: [{ name: "${tool}", args: { pattern: ${JSON.stringify(pattern)} } }] }`;
		const script = join(box.base, "script.mjs");
		writeFileSync(script, `export default [${Array(CALLS).fill(call).join(", ")}, { text: "done" }];\n`);
		const times = join(box.base, "times.jsonl");
		rmSync(times, { force: true });
		const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script, PCT_BENCH_TIMES: times };
		delete env.NODE_OPTIONS;
		const ext = theirs ? ["--tools", "grep"] : ["-e", ROOT];
		const args = [version.cli, "--no-session", "-ne", "-e", FAUX, "-e", TIMING, ...ext, "--provider", "faux", "--model", "faux-1", "-p", "go"];
		execFileSync(NODE22, args, { cwd: root, env, stdio: "ignore" });
		const recs = readFileSync(times, "utf8").trim().split("\n").map((l) => JSON.parse(l));
		if (recs.length !== CALLS || recs.some((r) => r.tool !== tool || r.isError)) throw new Error(`unexpected tool calls: ${JSON.stringify(recs)}`);
		return median(recs.slice(1).map((r) => r.ms));
	};
	// One uncounted round (page cache, jiti's cache of the toolkit's bundle).
	sample(false);
	sample(true);
	const a = [], b = [], ratio = [];
	for (let i = 0; i < runs; i++) {
		const x = sample(false);
		const y = sample(true);
		a.push(x);
		b.push(y);
		ratio.push(x / y);
	}
	const fmt = (xs) => `median ${median(xs).toFixed(1)} ms (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`;
	console.log(`\npattern /${pattern}/ through Pi ${version.name}'s tool call, ${runs} rounds (median of calls 2-${CALLS} of each process)`);
	console.log(`ours (the toolkit's Grep):            ${fmt(a)}`);
	console.log(`Pi's grep tool (ripgrep from PATH):   ${fmt(b)}`);
	console.log(`ratio ours/Pi's, round by round: median ${median(ratio).toFixed(2)}x (min ${Math.min(...ratio).toFixed(2)}, max ${Math.max(...ratio).toFixed(2)}); goal <= 1.0x`);
}

async function one(s, pattern) {
	// Correctness first: the same files match.
	const ours = await s.grep({ pattern, outputMode: "filesWithMatches", limit: 100_000 });
	if (!ours.ok) throw new Error(`Grep failed: ${ours.code}: ${ours.message}`);
	const rgl = spawnSync("rg", ["-l", ...RG, pattern], { cwd: root, encoding: "utf8", maxBuffer: 1 << 30, stdio: NO_STDIN });
	const rgFiles = new Set(rgl.stdout.split("\n").filter(Boolean));
	const ourFiles = new Set(ours.files);
	const onlyOurs = [...ourFiles].filter((f) => !rgFiles.has(f));
	const onlyRg = [...rgFiles].filter((f) => !ourFiles.has(f));
	console.log(`\npattern /${pattern}/`);
	console.log(`files with a match: ours ${ourFiles.size}, rg ${rgFiles.size}; only ours ${onlyOurs.length}, only rg ${onlyRg.length}`);
	for (const f of [...onlyOurs.slice(0, 5), ...onlyRg.slice(0, 5)]) console.log(`  differs: ${f}`);

	const timeOurs = async () => {
		const t = performance.now();
		const r = await s.grep({ pattern });
		if (!r.ok) throw new Error(r.message);
		return performance.now() - t;
	};
	const timeRg = () => {
		const t = performance.now();
		const r = spawnSync("rg", ["-n", ...RG, pattern], { cwd: root, maxBuffer: 1 << 30, stdio: NO_STDIN });
		if (r.status !== 0 && r.status !== 1) throw new Error(`rg exited ${r.status}: ${r.stderr}`);
		return performance.now() - t;
	};
	// One warm-up pair (page cache, thread pools), not counted.
	await timeOurs();
	timeRg();
	const a = [], b = [], ratio = [];
	for (let i = 0; i < runs; i++) {
		const x = await timeOurs();
		const y = timeRg();
		a.push(x);
		b.push(y);
		ratio.push(x / y);
	}
	const fmt = (xs) => `median ${median(xs).toFixed(1)} ms (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`;
	console.log(`ours (in-process Grep, content mode): ${fmt(a)}`);
	console.log(`rg -n (whole process):               ${fmt(b)}`);
	console.log(`ratio ours/rg, pair by pair: median ${median(ratio).toFixed(2)}x (min ${Math.min(...ratio).toFixed(2)}, max ${Math.max(...ratio).toFixed(2)}); goal <= 1.0x`);
}
