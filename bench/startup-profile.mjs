// Where Pi's start-up time goes, by function: CPU profiles (`node --cpu-prof`) of `pi -p` with the faux model (start,
// one scripted answer, exit), one sandbox reused after a warm-up run (jiti's transform cache and Node's compile cache
// are warm, as in bench/startup.mjs), and for every frame its inclusive time on the main thread, the median over the
// runs (docs/startup.md "Where the time goes").
// Usage: node bench/startup-profile.mjs [--runs 9] [--pi 1.6.0] [--config on|off|none] [--entry DIR]
//          [--match REGEX] [--under REGEX] [--top 60]
// `--config`: every feature on (ALL_ON), every feature off, or Pi alone (no toolkit); `--entry`: the checkout Pi loads
// (default this one); `--match`: print only frames whose "function file:line" matches; `--under`: count only samples
// with a frame matching it on the stack (what a function spends its time in). Frames are named `function file:line`
// with this checkout's glue shown as GLUE/… and node_modules as nm/…. The sampled time includes the moments the
// thread waited for a core, so on a loaded machine read the proportions, not the milliseconds; quote the load.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { FAUX, NODE22, PI_VERSIONS, ROOT, sandbox, writeConfig } from "../__test__/helpers/pi.mjs";
import { ALL_ON } from "./helpers/configs.mjs";

const arg = (name, dflt) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : dflt;
};
const RUNS = Number(arg("--runs", 9));
const version = PI_VERSIONS.find((v) => v.name === arg("--pi", "1.6.0"));
if (!version) throw new Error(`--pi: one of ${PI_VERSIONS.map((v) => v.name).join(", ")}`);
const CONFIG = arg("--config", "on");
const ENTRY = resolve(arg("--entry", ROOT));
const MATCH = process.argv.includes("--match") ? new RegExp(arg("--match")) : null;
const UNDER = process.argv.includes("--under") ? new RegExp(arg("--under")) : null;
const TOP = Number(arg("--top", 60));

const box = sandbox("pct-startup-profile-");
if (CONFIG === "on") writeConfig(box, ALL_ON);
else if (CONFIG === "off") writeConfig(box, {});
else if (CONFIG !== "none") throw new Error("--config: on, off or none");
const script = join(box.base, "script.mjs");
writeFileSync(script, `export default [{ text: "done" }];`);

/** Readable frame names: the checkout's files and node_modules shortened. */
const short = (url) => url.replace(/^file:\/\//, "").replace(/^.*\/node_modules\//, "nm/").replace(`${ENTRY}/dist/pi-codex-toolkit/`, "GLUE/").replace(`${ENTRY}/`, "");

/** One profiled run: inclusive main-thread ms per frame name. */
function profileOnce() {
	const dir = mkdtempSync(join(box.tmp, "prof-"));
	const args = ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", "100", version.cli, "--no-session", "-ne", "-e", FAUX];
	if (CONFIG !== "none") args.push("-e", ENTRY);
	args.push("--provider", "faux", "--model", "faux-1", "-p", "go");
	const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script };
	delete env.NODE_OPTIONS;
	const r = spawnSync(NODE22, args, { cwd: box.cwd, env, stdio: "ignore" });
	if (r.status !== 0) throw new Error(`pi ${version.name} exited ${r.status}`);
	// The main thread's profile is the one with the most samples (workers write their own).
	let prof = null;
	for (const f of readdirSync(dir).filter((x) => x.endsWith(".cpuprofile"))) {
		const p = JSON.parse(readFileSync(join(dir, f), "utf8"));
		if (!prof || p.samples.length > prof.samples.length) prof = p;
	}
	rmSync(dir, { recursive: true, force: true });
	const byId = new Map(prof.nodes.map((n) => [n.id, n]));
	const parent = new Map();
	for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
	const name = (n) => `${n.callFrame.functionName || "(anonymous)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
	const ms = new Map([["(all, not idle)", 0]]);
	for (let i = 0; i < prof.samples.length; i++) {
		const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000;
		if (byId.get(prof.samples[i]).callFrame.functionName === "(idle)") continue;
		const stack = [];
		for (let id = prof.samples[i]; id !== undefined; id = parent.get(id)) stack.push(name(byId.get(id)));
		if (UNDER && !stack.some((s) => UNDER.test(s))) continue;
		ms.set("(all, not idle)", ms.get("(all, not idle)") + dt);
		for (const s of new Set(stack)) ms.set(s, (ms.get(s) ?? 0) + dt);
	}
	return ms;
}

profileOnce(); // warm-up: jiti's and Node's compile caches, the page cache
const runs = Array.from({ length: RUNS }, profileOnce);
const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const names = new Set(runs.flatMap((m) => [...m.keys()]));
const rows = [...names]
	.filter((n) => !MATCH || MATCH.test(n) || n === "(all, not idle)")
	.map((n) => [n, median(runs.map((m) => m.get(n) ?? 0))])
	.sort((a, b) => b[1] - a[1])
	.slice(0, TOP);
console.log(`\nPi ${version.name}, ${CONFIG === "none" ? "Pi alone" : `every feature ${CONFIG}, ${ENTRY}`}: main-thread ms per frame (inclusive, median of ${RUNS} profiles)${UNDER ? `, under /${UNDER.source}/` : ""}\n`);
for (const [n, v] of rows) console.log(`${v.toFixed(1).padStart(8)}  ${n}`);
