// apply_patch as the user waits for it: the real Pi tool call (Pi's `tool_execution_start` -> `tool_execution_end`,
// timed inside Pi by bench/fixtures/tool-timing.ts) with review recording on (a saved Pi session, docs/review.md; the run checks one change per file was recorded), against
// Codex's own apply_patch binary on an identical tree (the whole process, spawn included: the baseline). Scenario: N
// small files, one one-line Update chunk each (bench/fixtures/patch-data.mjs), at 1,000 and 16,000 files. Rounds are
// interleaved (Pi, Codex, Pi, Codex, ...) on fresh trees after `sync`, and the ratio Pi/Codex is taken round by round;
// the table gives min / median / max of each, and the load average at the start and the end of each size.
// Build the release addon first (`npm run build`). Usage: node bench/patch-pi.mjs [--quick] [--runs N] [--pi 1.6.0]
// [--base DIR] (--quick: 1,000 files only, 3 rounds; --base: also time another checkout of the toolkit, with its own
// release build, in the same rounds, e.g. a `git worktree` of main, for a before/after ratio).
// PCT_BENCH_CODEX=/path/to/codex uses that binary (see bench/patch.mjs). --disk-load: a second process keeps the disk
// busy for the whole run (4 MiB written, fsync'd and deleted, over and over, in a temp folder on the same file
// system), so both sides meet the same contention.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { FAUX, NODE22, PI_VERSIONS, ROOT, sandbox, writeToolConfig } from "../__test__/helpers/pi.mjs";
import { checkTree, codexApplyPatch, manyFiles, runCodex, writeTree } from "./fixtures/patch-data.mjs";

const TIMING = join(ROOT, "bench/fixtures/tool-timing.ts");
const quick = process.argv.includes("--quick");
const arg = (name) => {
	const i = process.argv.indexOf(name);
	return i > 0 ? process.argv[i + 1] : undefined;
};
const SCALES = arg("--files") ? [Number(arg("--files")) / 1000] : quick ? [1] : [1, 16];
const runsFor = (scale) => Number(arg("--runs") ?? (quick ? 3 : scale === 1 ? 7 : 3));
const stats = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const med = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
	return { min: s[0], med, max: s.at(-1) };
};
const fmt = ({ min, med, max }, digits = 0) => `${med.toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`;
const load = () => loadavg().map((x) => x.toFixed(2)).join(" ");

const BASE = arg("--base") && resolve(arg("--base"));

/** `--disk-load`: the writer process (see the header), stopped when this one exits. */
function startDiskLoad() {
	const file = join(sandbox("pct-bench-disk-load-").base, "load.bin");
	const code = `const fs = require("node:fs"); const b = Buffer.alloc(4 << 20, 7); for (;;) { const fd = fs.openSync(${JSON.stringify(file)}, "w"); fs.writeSync(fd, b); fs.fsyncSync(fd); fs.closeSync(fd); fs.unlinkSync(${JSON.stringify(file)}); }`;
	const child = spawn(process.execPath, ["-e", code], { stdio: "ignore" });
	child.unref();
	process.on("exit", () => child.kill("SIGKILL"));
	return child;
}
const diskLoad = process.argv.includes("--disk-load") ? startDiskLoad() : null;

/** One Pi run in json mode: the faux model calls apply_patch once with `patchFile`'s text; returns Pi's tool ms. */
async function runPi(version, box, patchFile, extension = ROOT) {
	const script = join(box.base, "script.mjs");
	writeFileSync(script, `import { readFileSync } from "node:fs";\nexport default [{ tools: [{ name: "apply_patch", args: { patch: readFileSync(${JSON.stringify(patchFile)}, "utf8") } }] }, { text: "done" }];\n`);
	const times = join(box.base, "times.jsonl");
	rmSync(times, { force: true });
	const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script, PCT_BENCH_TIMES: times };
	delete env.NODE_OPTIONS;
	const args = [version.cli, "--session-dir", join(box.base, "sessions"), "-ne", "-e", FAUX, "-e", TIMING, "-e", extension, "--provider", "faux", "--model", "faux-1", "--mode", "json", "go"];
	const child = spawn(NODE22, args, { cwd: box.cwd, env, stdio: ["ignore", "ignore", "pipe"] });
	let stderr = "";
	child.stderr.setEncoding("utf8");
	child.stderr.on("data", (d) => (stderr += d));
	const [code] = await once(child, "close");
	if (code !== 0 || !existsSync(times)) throw new Error(`pi ${version.name} exited ${code}: ${stderr.slice(-2000)}`);
	const rec = JSON.parse(readFileSync(times, "utf8").trim().split("\n")[0]);
	if (rec.tool !== "apply_patch" || rec.isError) throw new Error(`apply_patch failed inside Pi: ${JSON.stringify(rec)}`);
	return rec.ms;
}

/** The review store of the run holds one change per file: recording was on. */
function reviewedChanges(box) {
	const root = join(box.agentDir, "pi-codex-toolkit", "review");
	const r = spawnSync("sh", ["-c", `cat "${root}"/*/index.jsonl 2>/dev/null | wc -l`], { encoding: "utf8" });
	return Number(r.stdout.trim());
}

const codex = codexApplyPatch();
const versions = PI_VERSIONS.filter((v) => !arg("--pi") || v.name === arg("--pi"));
console.log(`baseline: ${codex.version} apply_patch, whole process (spawn included)${diskLoad ? "; disk load on (a writer fsyncs 4 MiB over and over)" : ""}`);
const rows = [];
for (const version of versions) {
	for (const scale of SCALES) {
		const s = manyFiles(scale);
		const runs = runsFor(scale);
		const pi = [], cx = [], ratio = [], base = [], gain = [];
		const loadBefore = load();
		// One tree per applier; `extension` null = Codex.
		const appliers = [["pi", ROOT], ["codex", null], ...(BASE ? [["base", BASE]] : [])];
		for (let i = -1; i < runs; i++) {
			// Round -1 warms the page cache, Pi's module caches and the binary; it is not counted.
			const got = {};
			for (const [name, extension] of appliers) {
				const box = sandbox("pct-bench-patch-pi-");
				writeToolConfig(box, { applyPatch: { enabled: true } });
				writeTree(box.cwd, s.tree);
				const patchFile = join(box.base, "patch.txt");
				writeFileSync(patchFile, s.ours);
				spawnSync("sync");
				got[name] = extension ? await runPi(version, box, patchFile, extension) : runCodex(box.cwd, patchFile, codex.link).ms;
				checkTree(box.cwd, s.expected, name);
				const reviewed = extension ? reviewedChanges(box) : scale * 1000;
				rmSync(box.base, { recursive: true, force: true });
				if (reviewed !== scale * 1000) throw new Error(`${name}: review recorded ${reviewed} changes, expected ${scale * 1000}`);
			}
			if (i < 0) continue;
			pi.push(got.pi);
			cx.push(got.codex);
			ratio.push(got.pi / got.codex);
			if (BASE) base.push(got.base), gain.push(got.pi / got.base);
		}
		const row = { pi: version.name, files: s.size, rounds: runs, "Pi tool call ms": fmt(stats(pi)), "Codex process ms": fmt(stats(cx)), "ratio Pi/Codex": fmt(stats(ratio), 2) };
		if (BASE) Object.assign(row, { "base tool call ms": fmt(stats(base)), "ratio Pi/base": fmt(stats(gain), 2) });
		rows.push({ ...row, load: `${loadBefore} → ${load()}` });
		console.log(`Pi ${version.name}, ${s.size}: done`);
	}
}
console.log(`\napply_patch inside Pi (tool_execution_start → end, review on) vs Codex apply_patch (whole process); median (min–max) over interleaved rounds; load = 1/5/15-min load average before → after${BASE ? `; base = ${BASE}` : ""}`);
console.table(rows);
