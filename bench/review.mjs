// Review listing benchmark (docs/review.md): `/pct review` over 1,000 recorded changes — goal < 50 ms.
//  Setup: 1,000 files in a git repository, changed by 10 apply_patch calls of 100 Updates each, recorded in one
//  session's review store (the real path: applyPatch with a review target).
//  Timed, in interleaved rounds (ours, baseline 1, baseline 2, ours, ...), each in-process or as a whole process:
//   - ours: `reviewList` (load the index, one row per change, 1,000 typed objects to JS) — what `/pct review` calls;
//   - baseline "git diff --stat": the same 1,000 changes listed by git (whole process, as a user would run it);
//   - baseline "plain JSON": reading the same index.jsonl and JSON.parse of every line in JS (no rows, no objects
//     from Rust) — the floor of any listing that reads these records.
//  Ratios ours/baseline are taken round by round; medians are printed.
// Build the release addon first (`npm run build`): node bench/review.mjs [--runs N] [--quick]
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { tempDir } from "../scripts/tmp.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(ROOT, "index.js"));
const i = process.argv.indexOf("--runs");
const runs = i >= 0 ? Number(process.argv[i + 1]) : process.argv.includes("--quick") ? 5 : 21;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `median ${median(xs).toFixed(2)} ms (min ${Math.min(...xs).toFixed(2)}, max ${Math.max(...xs).toFixed(2)})`;

const N = 1000;
const dir = tempDir("pct-review-bench-");
const ws = join(dir, "ws");
const agentDir = join(dir, "agent");
mkdirSync(ws);
mkdirSync(agentDir);
for (let k = 0; k < N; k++) {
	mkdirSync(join(ws, `d${k % 20}`), { recursive: true });
	const body = Array.from({ length: 40 }, (_, l) => `file ${k} line ${l}`).join("\n") + "\n";
	writeFileSync(join(ws, `d${k % 20}`, `f${k}.txt`), body);
}
const git = (...args) => execFileSync("git", args, { cwd: ws, encoding: "utf8", maxBuffer: 64 << 20 });
git("init", "-q");
git("-c", "user.email=b@b", "-c", "user.name=b", "add", "-A");
git("-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "base");

const target = { agentDir, sessionId: "bench-session", messageId: "m1" };
for (let p = 0; p < 10; p++) {
	const parts = ["*** Begin Patch"];
	for (let k = p * 100; k < (p + 1) * 100; k++) {
		parts.push(`*** Update File: d${k % 20}/f${k}.txt`, "@@", ` file ${k} line 19`, `-file ${k} line 20`, `+file ${k} line 20 changed`, ` file ${k} line 21`);
	}
	parts.push("*** End Patch");
	const r = await native.applyPatch(ws, parts.join("\n"), undefined, target);
	if (!r.ok) throw new Error(r.text);
}
const index = join(agentDir, "pi-codex-toolkit", "review", target.sessionId, "index.jsonl");

const ours = async () => {
	const t = performance.now();
	const r = await native.reviewList(agentDir, target.sessionId);
	const ms = performance.now() - t;
	if (!r.ok || r.changes.length !== N || !r.changes[N - 1].row.startsWith(`#${N} M `)) throw new Error(JSON.stringify(r).slice(0, 300));
	return ms;
};
const gitStat = () => {
	const t = performance.now();
	const out = git("diff", "--stat=200");
	const ms = performance.now() - t;
	if (!out.includes(`${N} files changed, ${N} insertions(+), ${N} deletions(-)`)) throw new Error(out.slice(-300));
	return ms;
};
const plainJson = () => {
	const t = performance.now();
	const records = readFileSync(index, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	const ms = performance.now() - t;
	if (records.length !== N) throw new Error(`${records.length} records`);
	return ms;
};
await ours();
gitStat();
plainJson();
const a = [], g = [], j = [], rg = [], rj = [];
for (let k = 0; k < runs; k++) {
	const x = await ours();
	const y = gitStat();
	const z = plainJson();
	a.push(x);
	g.push(y);
	j.push(z);
	rg.push(x / y);
	rj.push(x / z);
}
console.log(`/pct review listing of ${N} changes (10 apply_patch calls x 100 files), ${runs} interleaved rounds`);
console.log(`  ours (reviewList):         ${fmt(a)}   goal < 50 ms: ${median(a) < 50 ? "met" : "NOT met"}`);
console.log(`  git diff --stat (process): ${fmt(g)}`);
console.log(`  plain JSON.parse of index: ${fmt(j)}`);
console.log(`  ratio ours/git diff --stat: median ${median(rg).toFixed(3)}`);
console.log(`  ratio ours/plain JSON:      median ${median(rj).toFixed(3)}`);
