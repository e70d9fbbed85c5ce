// apply_patch executor benchmark, side by side on identical trees in the same run with
//  - Codex's own apply_patch (the Rust binary of the npm package `@openai/codex`, run as `apply_patch` with the
//    patch on stdin; installed on demand into bench/results/codex, which is gitignored), ratio = ours / Codex;
//  - `git apply` of the equivalent unified diff, ratio = ours / git apply.
// Scenarios: (a) one 100,000-line file with 1,000 chunks; (b) 1,000 small files, one chunk each; each at 1x, 4x
// and 16x size to show linear growth, plus peak memory (max RSS of the applying process). The three appliers run
// in turn (ours, Codex, git) on fresh trees, after `sync`, so the machine's drift hits all of them alike.
// Build the release addon first (`npm run build`). Usage: node bench/patch.mjs [--quick]   (--quick = 1x only)
// PCT_BENCH_CODEX=/path/to/codex uses that binary instead of installing the package.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "../scripts/tmp.mjs";
import { checkTree, codexApplyPatch, manyFiles, runCodex, writeTree } from "./fixtures/patch-data.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const SCALES = quick ? [1] : [1, 4, 16];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A tree (rel -> text), our patch, the equivalent unified diff, and the expected result (rel -> text). */
function bigFile(scale) {
	const n = 100_000 * scale, chunks = 1_000 * scale, stride = n / chunks;
	const lines = Array.from({ length: n }, (_, i) => `line ${i}: the quick brown fox jumps over ${i % 97} lazy dogs`);
	const after = [...lines];
	let ours = "*** Begin Patch\n*** Update File: big.txt\n";
	let diff = "--- a/big.txt\n+++ b/big.txt\n";
	for (let k = 0; k < chunks; k++) {
		const t = k * stride + stride / 2;
		after[t] = `${lines[t]} (changed)`;
		const body = [
			...lines.slice(t - 3, t).map((l) => ` ${l}`),
			`-${lines[t]}`,
			`+${after[t]}`,
			...lines.slice(t + 1, t + 4).map((l) => ` ${l}`),
		].join("\n");
		ours += `@@\n${body}\n`;
		diff += `@@ -${t - 2},7 +${t - 2},7 @@\n${body}\n`;
	}
	ours += "*** End Patch\n";
	return { label: "(a) one file", size: `${n} lines, ${chunks} chunks`, tree: { "big.txt": lines.join("\n") + "\n" }, ours, diff, expected: { "big.txt": after.join("\n") + "\n" } };
}

const CHILD = `
const [cwd, patchFile] = process.argv.slice(1);
const { createRequire } = await import("node:module");
const { readFileSync } = await import("node:fs");
const native = createRequire(${JSON.stringify(ROOT + "/")})("./index.js");
const t0 = performance.now();
const r = cwd ? await native.applyPatch(cwd, readFileSync(patchFile, "utf8")) : { ok: true };
const ms = performance.now() - t0;
if (!r.ok) { console.error(r.text.slice(0, 2000)); process.exit(1); }
process.stdout.write(JSON.stringify({ ms, maxRssKb: process.resourceUsage().maxRSS }));`;

/** Our executor in a fresh Node process: apply time (patch read + apply) and the process's peak RSS. */
function runOurs(cwd, patchFile) {
	const t0 = performance.now();
	const r = spawnSync(process.execPath, ["--input-type=module", "-e", CHILD, cwd ?? "", patchFile ?? ""], { encoding: "utf8", maxBuffer: 1 << 20 });
	const wholeMs = performance.now() - t0;
	if (r.status !== 0) throw new Error(`ours failed: ${r.stderr}`);
	return { ...JSON.parse(r.stdout), wholeMs };
}

/**
 * `git apply` of the unified diff: wall time of the process and its peak RSS (/usr/bin/time %M). git's hunk
 * application grows quadratically with the hunks of one file, so a run is stopped after GIT_CAP_MS and reported
 * as a lower bound (">"), keeping the whole benchmark near two minutes.
 */
const GIT_CAP_MS = 45_000;
function runGit(cwd, diffFile) {
	const t0 = performance.now();
	const args = ["-f", "%M", "timeout", "-s", "KILL", String(GIT_CAP_MS / 1000), "git", "apply", "--whitespace=nowarn", diffFile];
	const r = spawnSync("/usr/bin/time", args, { cwd, encoding: "utf8" });
	const ms = performance.now() - t0;
	const maxRssKb = Number(r.stderr.trim().split("\n").pop());
	if (r.status === 137 || /signal 9/.test(r.stderr)) return { ms: GIT_CAP_MS, maxRssKb, capped: true };
	if (r.status !== 0) throw new Error(`git apply failed: ${r.stderr}`);
	return { ms, maxRssKb };
}

const codex = codexApplyPatch();
console.log(`baseline: ${codex.version} apply_patch (${codex.link})`);
const base = tempDir("pct-bench-patch-");
const addon = join(ROOT, "pi-codex-toolkit.linux-x64-gnu.node");
console.log(`addon: ${addon} (${(statSync(addon).size / 1e6).toFixed(1)} MB, built ${statSync(addon).mtime.toISOString()}; use a release build)`);
const nodeBaseline = runOurs(null, null).maxRssKb;
console.log(`node + addon baseline peak RSS: ${(nodeBaseline / 1024).toFixed(0)} MB`);

const rows = [];
let run = 0;
const sync = () => spawnSync("sync");
for (const make of [bigFile, manyFiles]) {
	for (const scale of SCALES) {
		const s = make(scale);
		const rounds = scale === 1 ? 5 : 3;
		const ours = [], cx = [], git = [];
		for (let i = 0; i < rounds; i++) {
			const dir = join(base, `r${++run}`);
			const [a, c, b] = [join(dir, "ours"), join(dir, "codex"), join(dir, "git")];
			writeTree(a, s.tree);
			writeTree(c, s.tree);
			writeTree(b, s.tree);
			writeFileSync(join(dir, "patch.txt"), s.ours);
			writeFileSync(join(dir, "patch.diff"), s.diff);
			sync();
			ours.push(runOurs(a, join(dir, "patch.txt")));
			sync();
			cx.push(runCodex(c, join(dir, "patch.txt"), codex.link));
			sync();
			git.push(runGit(b, join(dir, "patch.diff")));
			checkTree(a, s.expected, "ours");
			checkTree(c, s.expected, "codex");
			if (!git.at(-1).capped) checkTree(b, s.expected, "git apply");
			rmSync(dir, { recursive: true, force: true });
		}
		const ow = median(ours.map((x) => x.wholeMs));
		const o = median(ours.map((x) => x.ms)), k = median(cx.map((x) => x.ms)), g = median(git.map((x) => x.ms));
		const capped = git.some((x) => x.capped);
		const om = Math.max(...ours.map((x) => x.maxRssKb)), km = Math.max(...cx.map((x) => x.maxRssKb)), gm = Math.max(...git.map((x) => x.maxRssKb));
		rows.push({
			scenario: s.label,
			scale: `${scale}x`,
			size: s.size,
			"ours ms": o.toFixed(1),
			"codex ms": k.toFixed(1),
			"ratio ours/codex": (o / k).toFixed(2),
			"ours whole process ms": ow.toFixed(1),
			"ratio whole/codex": (ow / k).toFixed(2),
			"git apply ms": capped ? `> ${g.toFixed(0)} (stopped)` : g.toFixed(1),
			"ratio ours/git": capped ? `< ${(o / g).toFixed(3)}` : (o / g).toFixed(o / g < 0.1 ? 3 : 2),
			"ours peak MB (above node)": `${(om / 1024).toFixed(0)} (+${((om - nodeBaseline) / 1024).toFixed(0)})`,
			"codex peak MB": (km / 1024).toFixed(0),
			"git peak MB": capped ? "n/a" : (gm / 1024).toFixed(0),
		});
		console.log(`${s.label} ${scale}x done`);
	}
}
rmSync(base, { recursive: true, force: true });
console.log(`\napply_patch vs Codex ${codex.version} apply_patch and git apply (1x: median of 5 runs, 4x/16x: median of 3; ours = patch read + applyPatch in a fresh Node process (whole process: Node start-up and addon load too), Codex and git = whole process; git stopped after ${GIT_CAP_MS / 1000} s)`);
console.table(rows);
console.log("Note: ours rewrites each updated file in place behind an undo journal (docs/patch.md); Codex rewrites in place\n" +
	"without one (a crash can leave a half-written file); git apply unlinks and writes the file again.");
mkdirSync(join(ROOT, "bench/results"), { recursive: true });
writeFileSync(join(ROOT, "bench/results/patch.json"), JSON.stringify({ date: new Date().toISOString(), codex: codex.version, nodeBaselineKb: nodeBaseline, rows }, null, 2));
