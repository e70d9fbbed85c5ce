// Host Bash benchmark (docs/host.md "Bash"), in process, interleaved pairs (ours, Pi's, ours, ...), ratio ours/Pi's
// taken pair by pair:
//  (a) Bash `true` from the call to its result: HostSession.bash against Pi's own bash tool (createBashTool(cwd)
//      .execute), both with the shell Pi resolves (getShellConfig()). Goal: ratio <= 0.6.
//  (b) 256 MiB of output (`yes <64-byte line> | head -c 256MiB`): both keep a tail for the model and write the full
//      output to a file (ours: the recovery file of stdout; Pi's: its full-output temp file), both deleted after.
//  (c) the first Bash call of a process against a later one (ratio first/later, goal <= 1.2): each sample is a fresh
//      Node process that creates its HostSession and calls prewarmBash (the login-PATH probe of $SHELL and the shell
//      watchdog start there, in the background, as at a Pi session start with Bash on),
//      waits --think ms (default 500: the model's first answer comes before the first tool call), then times
//      five `true` calls; "later" is the median of calls 2-5. --think 0 shows the worst case (a call at once).
//      All samples share one agent dir, as the processes of one user do, so the PATH the probe remembered there
//      (docs/host.md "Bash") is what a later process's first call uses; one uncounted process writes it first
//      and is shown on its own (the first process ever, or the first after a profile edit; it waits 6 s instead of
//      --think so its probe ends before it exits).
//  (d) with --pi: (c) through the real Pi tool call: each sample is a `pi -p` process (Pi 1.6.0, the faux model, Bash
//      admitted) whose model waits --think ms, then calls Bash `true` five times in five turns; each call is timed from
//      Pi's `tool_execution_start` to its `tool_execution_end` (bench/fixtures/tool-timing.ts), so the permission
//      gate, the wrapper and the result rendering are in; the processes share one agent dir, as in (c).
// Build the release addon first (`npm run build`). Pi needs Node 22:
//   node_modules/node/bin/node bench/bash.mjs [--runs N] [--big-runs N] [--samples N] [--think MS] [--quick]
//   [--first-call-only] [--pi]
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { createBashTool, getShellConfig } from "@earendil-works/pi-coding-agent";
import { tempDir } from "../scripts/tmp.mjs";
import { FAUX, NODE22, PI_VERSIONS, sandbox, writeToolConfig } from "../__test__/helpers/pi.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(ROOT, "index.js"));
const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const quick = process.argv.includes("--quick");
const runs = arg("--runs", quick ? 11 : 41);
const bigRuns = arg("--big-runs", quick ? 1 : 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs, unit = "ms", k = 1) =>
	`median ${(median(xs) / k).toFixed(2)} ${unit} (min ${(Math.min(...xs) / k).toFixed(2)}, max ${(Math.max(...xs) / k).toFixed(2)})`;

// One sample of (c), run in a fresh Node process (the probe cache is per process): prints the five times as JSON.
const FIRST_CALL_CHILD = `
import { createRequire } from "node:module";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const [addon, think, shell, args, agent] = process.argv.slice(1);
const native = createRequire(import.meta.url)(addon);
const d = mkdtempSync(join(tmpdir(), "pct-bash-first-"));
try {
	mkdirSync(join(d, "ws"));
	const session = new native.HostSession(join(d, "ws"), agent, "first-call");
	// What the Pi glue does once Bash is admitted at session start: the login-PATH probe and the watchdog start.
	session.prewarmBash();
	await new Promise((r) => setTimeout(r, Number(think)));
	const times = [];
	for (let i = 0; i < 5; i++) {
		const t = performance.now();
		const r = await session.bash({ command: "true" }, { shell: { shell, args: JSON.parse(args) } });
		times.push(performance.now() - t);
		if (!r.ok) throw new Error(r.text);
	}
	session.closeTasks();
	console.log(JSON.stringify(times));
} finally {
	rmSync(d, { recursive: true, force: true });
}
`;

const dir = tempDir("pct-bash-bench-");
const ws = join(dir, "ws");
const agent = join(dir, "agent");
mkdirSync(ws);
mkdirSync(agent);
let s = new native.HostSession(ws, agent, "bench");
const shell = getShellConfig();
const pi = createBashTool(ws);
const BIG = 256 * 1024 * 1024;
const LINE = "x".repeat(63);

async function ours(command, check) {
	const t = performance.now();
	const r = await s.bash({ command, timeout: 600 }, { shell: { shell: shell.shell, args: shell.args } });
	const ms = performance.now() - t;
	if (!r.ok) throw new Error(`ours failed: ${r.text.slice(0, 300)}`);
	check?.(r);
	return ms;
}

async function theirs(command, check) {
	const t = performance.now();
	const r = await pi.execute("bench", { command, timeout: 600 });
	const ms = performance.now() - t;
	check?.(r);
	if (r.details?.fullOutputPath) rmSync(r.details.fullOutputPath, { force: true });
	return ms;
}

async function pairs(label, n, command, checkOurs, checkTheirs, unit, k) {
	await ours(command, checkOurs);
	await theirs(command, checkTheirs);
	const a = [], b = [], ratio = [];
	for (let i = 0; i < n; i++) {
		const x = await ours(command, checkOurs);
		const y = await theirs(command, checkTheirs);
		a.push(x);
		b.push(y);
		ratio.push(x / y);
	}
	console.log(`${label}, ${n} interleaved pairs (shell ${shell.shell} ${shell.args.join(" ")})`);
	console.log(`    ours (HostSession.bash): ${fmt(a, unit, k)}`);
	console.log(`    Pi's bash tool:          ${fmt(b, unit, k)}`);
	console.log(`    ratio ours/Pi's, pair by pair: median ${median(ratio).toFixed(2)}x (min ${Math.min(...ratio).toFixed(2)}, max ${Math.max(...ratio).toFixed(2)})`);
	return median(ratio);
}

function firstCall(samples, think) {
	const first = [], later = [], ratio = [];
	const agentDir = join(dir, "first-call-agent");
	mkdirSync(agentDir, { recursive: true });
	const sample = (ms = think) => JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", FIRST_CALL_CHILD, join(ROOT, "index.js"), String(ms), shell.shell, JSON.stringify(shell.args), agentDir], { encoding: "utf8" }));
	// It waits past the probe's 5 s bound, so its probe has ended (and written its answer) before it exits.
	const w = sample(6000);
	console.log(`    uncounted first process (6 s before its calls, so its probe ends and is remembered): first call ${w[0].toFixed(2)} ms, later ${median(w.slice(1)).toFixed(2)} ms`);
	for (let i = 0; i < samples; i++) {
		const t = sample();
		const rest = median(t.slice(1));
		first.push(t[0]);
		later.push(rest);
		ratio.push(t[0] / rest);
	}
	console.log(`(c) first Bash call of a process vs later ones, ${samples} processes, ${think} ms after the session started (SHELL=${process.env.SHELL ?? "unset"})`);
	console.log(`    first call:  ${fmt(first)}`);
	console.log(`    later calls: ${fmt(later)}`);
	console.log(`    ratio first/later: median ${median(ratio).toFixed(2)}x (min ${Math.min(...ratio).toFixed(2)}, max ${Math.max(...ratio).toFixed(2)})`);
	return median(ratio);
}

/** (d): one `pi -p` process per sample, five Bash calls each; returns the ratio first/later as (c) does. With
 * `theirs`, the same with Pi's own `bash` tool and no toolkit (the baseline: what Pi's first tool call costs anyway). */
function piFirstCall(samples, think, theirs = false) {
	const version = PI_VERSIONS.find((v) => v.name === "1.6.0");
	const box = sandbox("pct-bench-bash-pi-");
	writeToolConfig(box, { hostTools: { enabled: true } });
	const TIMING = join(ROOT, "bench/fixtures/tool-timing.ts");
	const tool = theirs ? "bash" : "Bash";
	const sample = (ms) => {
		const script = join(box.base, "script.mjs");
		const call = `{ tools: [{ name: "${tool}", args: { command: "true" } }] }`;
		writeFileSync(script, `export default [async () => { await new Promise((r) => setTimeout(r, ${ms})); return ${call}; }, ${Array(4).fill(call).join(", ")}, { text: "done" }];\n`);
		const times = join(box.base, "times.jsonl");
		rmSync(times, { force: true });
		const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script, PCT_BENCH_TIMES: times };
		delete env.NODE_OPTIONS;
		const args = [version.cli, "--no-session", "-ne", "-e", FAUX, "-e", TIMING, ...(theirs ? [] : ["-e", ROOT]), "--provider", "faux", "--model", "faux-1", "-p", "go"];
		execFileSync(NODE22, args, { cwd: box.cwd, env, stdio: "ignore" });
		const recs = readFileSync(times, "utf8").trim().split("\n").map((l) => JSON.parse(l));
		if (recs.length !== 5 || recs.some((r) => r.tool !== tool || r.isError)) throw new Error(`unexpected tool calls: ${JSON.stringify(recs)}`);
		return recs.map((r) => r.ms);
	};
	const w = sample(6000);
	console.log(`    uncounted first process (6 s before its calls): first call ${w[0].toFixed(2)} ms, later ${median(w.slice(1)).toFixed(2)} ms`);
	const first = [], later = [], ratio = [];
	for (let i = 0; i < samples; i++) {
		const t = sample(think);
		const rest = median(t.slice(1));
		first.push(t[0]);
		later.push(rest);
		ratio.push(t[0] / rest);
	}
	console.log(`(d) the same through Pi ${version.name}'s tool call (tool_execution_start -> end), ${theirs ? "Pi's own bash tool, no toolkit" : "the toolkit's Bash"}, ${samples} Pi processes, ${think} ms after the model was asked (SHELL=${process.env.SHELL ?? "unset"})`);
	console.log(`    first call:  ${fmt(first)}`);
	console.log(`    later calls: ${fmt(later)}`);
	console.log(`    ratio first/later: median ${median(ratio).toFixed(2)}x (min ${Math.min(...ratio).toFixed(2)}, max ${Math.max(...ratio).toFixed(2)})`);
	return median(ratio);
}

try {
	if (process.argv.includes("--first-call-only")) {
		const f = firstCall(arg("--samples", quick ? 5 : 11), arg("--think", 500));
		if (f > 1.2) console.log(`    goal <= 1.2x not met (${f.toFixed(2)}x)`);
		if (process.argv.includes("--pi")) {
			const g = piFirstCall(arg("--samples", quick ? 5 : 11), arg("--think", 500));
			if (g > 1.2) console.log(`    goal <= 1.2x not met (${g.toFixed(2)}x)`);
			piFirstCall(arg("--samples", quick ? 5 : 11), arg("--think", 500), true);
		}
		s.closeTasks();
		rmSync(dir, { recursive: true, force: true });
		process.exit(0);
	}
	const r = await pairs("(a) Bash `true` to its result", runs, "true");
	if (r > 0.6) console.log(`    goal <= 0.6x not met (${r.toFixed(2)}x)`);
	const big = `yes '${LINE}' | head -c ${BIG}`;
	await pairs(
		"(b) 256 MiB of output",
		bigRuns,
		big,
		(r) => {
			if (r.stdoutBytes !== BIG || !r.stdoutTruncated || r.stdoutRecovery?.bytes !== BIG) {
				throw new Error(`ours: unexpected ${JSON.stringify({ bytes: r.stdoutBytes, rec: r.stdoutRecovery })}`);
			}
			// closeTasks deletes this session's recovery files and ends it: the next run gets a fresh session
			s.closeTasks();
			s = new native.HostSession(ws, agent, "bench");
		},
		(r) => {
			if (!r.details?.truncation?.truncated) throw new Error("Pi's bash did not truncate");
		},
		"s",
		1000,
	);
	const f = firstCall(arg("--samples", quick ? 5 : 11), arg("--think", 500));
	if (f > 1.2) console.log(`    goal <= 1.2x not met (${f.toFixed(2)}x)`);
} finally {
	s.closeTasks();
	rmSync(dir, { recursive: true, force: true });
}
