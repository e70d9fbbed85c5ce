// Rebuilds bench/edit-drift/cases.json.gz, the stale-read fixtures of the edit-drift benchmark, from the git
// histories of public projects (docs/host.md "Edits under drift"). Not run by the benchmark: the fixtures are
// committed, so `npm run bench -- edit-drift` needs no network and no clone. Usage:
//   node bench/edit-drift/extract.mjs <git dir of spf13/cobra> <git dir of pallets/click> ...   (see SOURCES)
// For each file changed by two consecutive commits A and B (B the next commit touching it): L = the file before A
// (the version the model read), A's change is the edit the model wants, B's change is the drift that landed
// meanwhile. The live file is L with B's change merged in (`git merge-file`, clean merges only) and the truth is the
// file after B (L + both changes), checked to be the clean merge of the two changes. Only L and the two changes
// (as line hunks against L) are stored.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { applyHunks, mergeHunks } from "./lines.mjs";

/** The projects: permissive licences, four languages. `key` is matched against the git dir path. */
const SOURCES = [
	{ key: "spf13+cobra", repo: "spf13/cobra", license: "Apache-2.0", exts: [".go"] },
	{ key: "pallets+click", repo: "pallets/click", license: "BSD-3-Clause", exts: [".py"] },
	{ key: "serde-rs+json", repo: "serde-rs/json", license: "MIT OR Apache-2.0", exts: [".rs"] },
	{ key: "expressjs+express", repo: "expressjs/express", license: "MIT", exts: [".js"] },
];
const PER_SOURCE = 110;
const PER_FILE = 4;
const MAX_BYTES = 40_000;
const MAX_LINES = 1200;
const MAX_HUNKS = 3;
const MAX_CHANGED = 40;

const git = (dir, args, input) => execFileSync("git", ["--git-dir", dir, ...args], { encoding: "utf8", maxBuffer: 256 << 20, input });
const show = (dir, rev, path) => {
	const r = spawnSync("git", ["--git-dir", dir, "show", `${rev}:${path}`], { encoding: "utf8", maxBuffer: 64 << 20 });
	return r.status === 0 ? r.stdout : null;
};

/** Line hunks [start, deleted, added lines] turning `a` into `b` (git's histogram diff, no context). */
function hunks(tmp, a, b) {
	writeFileSync(join(tmp, "a"), a);
	writeFileSync(join(tmp, "b"), b);
	const r = spawnSync("git", ["diff", "--no-index", "--no-color", "-U0", "--histogram", join(tmp, "a"), join(tmp, "b")], { encoding: "utf8", maxBuffer: 64 << 20 });
	const out = [];
	let cur = null;
	for (const line of r.stdout.split("\n")) {
		const m = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@/.exec(line);
		if (m) {
			const start = Number(m[1]), del = m[2] === undefined ? 1 : Number(m[2]);
			cur = [del === 0 ? start : start - 1, del, []];
			out.push(cur);
		} else if (cur && line.startsWith("+")) cur[2].push(line.slice(1));
		else if (line.startsWith("\\")) return null;
	}
	return out;
}

function merge(tmp, current, base, other) {
	writeFileSync(join(tmp, "c"), current);
	writeFileSync(join(tmp, "o"), base);
	writeFileSync(join(tmp, "t"), other);
	const r = spawnSync("git", ["merge-file", "-p", join(tmp, "c"), join(tmp, "o"), join(tmp, "t")], { encoding: "utf8", maxBuffer: 64 << 20 });
	return r.status === 0 ? r.stdout : null;
}

const small = (h) => h && h.length >= 1 && h.length <= MAX_HUNKS && h.reduce((n, [, d, a]) => n + d + a.length, 0) <= MAX_CHANGED;
const okText = (t) => t !== null && t.length <= MAX_BYTES && t.endsWith("\n") && !t.includes("\r") && t.split("\n").length - 1 <= MAX_LINES && t.split("\n").length > 20;

const tmp = mkdtempSync(join(tmpdir(), "pct-drift-extract-"));
const out = { sources: [], cases: [] };
try {
	for (const dir of process.argv.slice(2)) {
		const src = SOURCES.find((s) => dir.includes(s.key));
		if (!src) throw new Error(`unknown source ${dir}`);
		const head = git(dir, ["rev-parse", "HEAD"]).trim();
		const log = git(dir, ["log", "--reverse", "--no-merges", "--first-parent", "--diff-filter=M", "--format=@%H", "--name-only", "HEAD", "--", ...src.exts.map((e) => `*${e}`)]);
		const byFile = new Map();
		let commit = null;
		for (const line of log.split("\n")) {
			if (line.startsWith("@")) commit = line.slice(1);
			else if (line && src.exts.some((e) => line.endsWith(e))) (byFile.get(line) ?? byFile.set(line, []).get(line)).push(commit);
		}
		// Every consecutive pair of commits of a file, spread evenly over the history.
		const pairs = [];
		for (const [path, cs] of byFile) for (let k = 0; k + 1 < cs.length; k++) pairs.push([path, cs[k], cs[k + 1]]);
		const stride = Math.max(1, Math.floor(pairs.length / (PER_SOURCE * 5)));
		const perFile = new Map();
		let kept = 0;
		for (let k = 0; k < pairs.length && kept < PER_SOURCE; k += stride) {
			const [path, a, b] = pairs[k];
			if ((perFile.get(path) ?? 0) >= PER_FILE) continue;
			const L = show(dir, `${a}^`, path), v1 = show(dir, a, path), v2 = show(dir, b, path);
			if (!okText(L) || !okText(v1) || !okText(v2) || L === v1 || v1 === v2) continue;
			const edit = hunks(tmp, L, v1), d = hunks(tmp, v1, v2);
			if (!small(edit) || !small(d)) continue;
			const live = merge(tmp, L, v1, v2);
			if (live === null || live === L || live === v2) continue;
			if (merge(tmp, live, L, v1) !== v2) continue;
			const drift = hunks(tmp, L, live);
			if (!drift || applyHunks(L, drift) !== live) continue;
			const both = mergeHunks(edit, drift);
			if (!both || applyHunks(L, both) !== v2) continue;
			out.cases.push({ src: src.repo, path, a, b, L, edit, drift });
			perFile.set(path, (perFile.get(path) ?? 0) + 1);
			kept++;
		}
		out.sources.push({ repo: src.repo, license: src.license, url: `https://github.com/${src.repo}`, head, cases: kept });
		console.log(`${src.repo}: ${kept} cases from ${pairs.length} pairs`);
	}
} finally {
	rmSync(tmp, { recursive: true, force: true });
}
const file = join(dirname(fileURLToPath(import.meta.url)), "cases.json.gz");
writeFileSync(file, gzipSync(JSON.stringify(out), { level: 9 }));
console.log(`${out.cases.length} cases -> ${basename(file)}`);
