// Pi's start-up with the toolkit against Pi without it: wall time of one `pi -p` run with the faux model (start,
// one scripted answer, exit), in interleaved rounds (A, B, C, A, B, C, ...) so machine drift hits every
// configuration alike. Reports the median of each and the median of the per-round ratios with their spread.
// Usage: node bench/startup.mjs [--quick] [--runs N] [--pi 1.6.0] [--baseline DIR]   (Node >= 22.19; build the addon
// first). `--baseline DIR` adds another checkout of the toolkit (its own built addon and bundle, e.g. a worktree of
// the previous commit) with every feature on, interleaved in the same rounds: old and new against one Pi alone.
// `--bundled` leaves out the two unbundled rows (shorter rounds, so more of them fit while the machine is steady).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { NODE22, PI_VERSIONS, ROOT, FAUX, sandbox, writeConfig } from "../__test__/helpers/pi.mjs";
import { ALL_ON } from "./helpers/configs.mjs";

const quick = process.argv.includes("--quick");
const runsArg = process.argv.indexOf("--runs");
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : quick ? 3 : 10;
// The third element is the entry Pi loads: the package (its manifest names the bundle of src/, docs/release.md "The
// bundled entry"), or src/ unbundled, as Pi loaded it before the bundle (the before/after of that change).
const UNBUNDLED = join(ROOT, "src/pi-codex-toolkit/index.ts");
const baselineArg = process.argv.indexOf("--baseline");
const BASELINE = baselineArg > 0 ? resolve(process.argv[baselineArg + 1]) : null;
const CONFIGS = [
	["Pi alone", null, null],
	["toolkit, every feature off", {}, ROOT],
	["toolkit, every feature on", ALL_ON, ROOT],
	...(process.argv.includes("--bundled")
		? []
		: [
				["toolkit unbundled (src/), every feature off", {}, UNBUNDLED],
				["toolkit unbundled (src/), every feature on", ALL_ON, UNBUNDLED],
			]),
	...(BASELINE ? [[`baseline ${BASELINE}, every feature on`, ALL_ON, BASELINE]] : []),
];

async function once_(version, box, entry) {
	const args = [version.cli, "--no-session", "-ne", "-e", FAUX];
	if (entry) args.push("-e", entry);
	args.push("--provider", "faux", "--model", "faux-1", "-p", "go");
	const script = join(box.base, "script.mjs");
	writeFileSync(script, `export default [{ text: "done" }];`);
	const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script };
	delete env.NODE_OPTIONS;
	const t0 = process.hrtime.bigint();
	const child = spawn(NODE22, args, { cwd: box.cwd, env, stdio: "ignore" });
	const [code] = await once(child, "close");
	if (code !== 0) throw new Error(`pi ${version.name} exited ${code}`);
	return Number(process.hrtime.bigint() - t0) / 1e6;
}

const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const piArg = process.argv.indexOf("--pi");
for (const version of PI_VERSIONS.filter((v) => piArg < 0 || v.name === process.argv[piArg + 1])) {
	const boxes = CONFIGS.map(([, config]) => {
		const box = sandbox("pct-startup-");
		if (config) writeConfig(box, config);
		return box;
	});
	// One warm-up round (module caches, page cache), not counted.
	for (let i = 0; i < CONFIGS.length; i++) await once_(version, boxes[i], CONFIGS[i][2]);
	const times = CONFIGS.map(() => []);
	for (let r = 0; r < RUNS; r++) {
		for (let i = 0; i < CONFIGS.length; i++) times[i].push(await once_(version, boxes[i], CONFIGS[i][2]));
	}
	console.log(`\nPi ${version.name}: start-up, ${RUNS} interleaved rounds (wall ms of pi -p with one scripted answer)\n`);
	console.log("| configuration | median ms | ratio to Pi alone: median (min–max over rounds) |");
	console.log("| --- | ---: | --- |");
	for (let i = 0; i < CONFIGS.length; i++) {
		const ratios = times[i].map((t, r) => t / times[0][r]);
		const spread = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`;
		console.log(`| ${CONFIGS[i][0]} | ${median(times[i]).toFixed(0)} | ${i === 0 ? "1.00" : `${median(ratios).toFixed(2)}× (${spread})`} |`);
	}
}
