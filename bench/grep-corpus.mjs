// The tree bench/grep.mjs --corpus searches (docs/host.md "Benchmark"): about 17,000 files of published npm packages
// (core-js, date-fns, lodash, rxjs, three, typescript, webpack and their dependencies), pinned by
// bench/grep-corpus/package-lock.json, so every run and every machine searches the same bytes. It is not this
// repository nor its node_modules, which Grep was tuned on.
//
// Installed with `npm ci --ignore-scripts` into a folder outside the repository (default <tmpdir>/pct-grep-corpus):
// outside, because ripgrep, which Pi's grep runs, honours the .gitignore of a git repository it sits in, and the
// repository's ignores the folders such a tree would live in. Installed once: a later run finds the tree in place
// (the lock's digest is stamped beside it) and needs no network.
//
// Usage: node bench/grep-corpus.mjs [--dir DIR]   (installs if needed, then prints the folder and its file count)
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = join(dirname(fileURLToPath(import.meta.url)), "grep-corpus");
const STAMP = ".pct-corpus-lock-sha256";
export const DEFAULT_CORPUS = join(tmpdir(), "pct-grep-corpus");

/** Installs the corpus into `dir` unless the same lock is installed there already; returns the folder. */
export function ensureCorpus(dir = DEFAULT_CORPUS) {
	dir = resolve(dir);
	const lock = readFileSync(join(HERE, "package-lock.json"));
	const digest = createHash("sha256").update(lock).digest("hex");
	const stamp = join(dir, STAMP);
	if (existsSync(stamp) && readFileSync(stamp, "utf8") === digest && existsSync(join(dir, "node_modules"))) return dir;
	mkdirSync(dir, { recursive: true });
	rmSync(join(dir, "node_modules"), { recursive: true, force: true });
	rmSync(stamp, { force: true });
	for (const f of ["package.json", "package-lock.json"]) copyFileSync(join(HERE, f), join(dir, f));
	console.error(`grep-corpus: installing the pinned packages into ${dir} (npm ci; needs the registry once)`);
	const npm = process.platform === "win32" ? "npm.cmd" : "npm";
	const r = spawnSync(npm, ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
	if (r.error || r.status !== 0) throw new Error(`grep-corpus: npm ci failed in ${dir} (${r.error?.message ?? `exit ${r.status}`})`);
	writeFileSync(stamp, digest);
	return dir;
}

/** Regular files under `dir` (what a search may open). */
export function countFiles(dir) {
	let n = 0;
	for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n++;
	return n;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const at = process.argv.indexOf("--dir");
	const dir = ensureCorpus(at >= 0 ? process.argv[at + 1] : DEFAULT_CORPUS);
	console.log(`${dir} (${countFiles(dir)} files)`);
}
