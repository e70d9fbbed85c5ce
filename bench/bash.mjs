// Host Bash benchmark (docs/host.md "Bash"), in process, interleaved pairs (ours, Pi's, ours, ...), ratio ours/Pi's
// taken pair by pair:
//  (a) Bash `true` from the call to its result: HostSession.bash against Pi's own bash tool (createBashTool(cwd)
//      .execute), both with the shell Pi resolves (getShellConfig()). Goal: ratio <= 0.6.
//  (b) 256 MiB of output (`yes <64-byte line> | head -c 256MiB`): both keep a tail for the model and write the full
//      output to a file (ours: the recovery file of stdout; Pi's: its full-output temp file), both deleted after.
// Build the release addon first (`npm run build`). Pi needs Node 22:
//   node_modules/node/bin/node bench/bash.mjs [--runs N] [--big-runs N] [--quick]
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { createBashTool, getShellConfig } from "@earendil-works/pi-coding-agent";
import { tempDir } from "../scripts/tmp.mjs";

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

try {
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
} finally {
	s.closeTasks();
	rmSync(dir, { recursive: true, force: true });
}
