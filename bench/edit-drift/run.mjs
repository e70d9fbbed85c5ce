// Edits under drift (docs/host.md "Edits under drift"): the model read version L of a file and wants the change
// its commit made, but the file changed before the edit arrived. The cases come from real histories
// (cases.json.gz, rebuilt by extract.mjs; sources and licences inside it and in the README of this folder); each
// case is played in every scenario kind below, and every tool gets a call derived only from L and the intended
// change, exactly as a model that read L would write it:
//   - toolkit Edit (HostSession.read of L, then HostSession.edit with L's tag and L's line numbers);
//   - toolkit apply_patch (the Codex patch of the change with 3 context lines, applyPatch; a chunk whose lines are
//     not unique in L after the previous chunk gets an `@@` line from L, or else more context, as `patchSection` says),
//     twice: without a session (as a model with Pi's read would send it) and after a toolkit Read of L in the same
//     session, so a chunk whose context drifted is located through the copy that Read showed (docs/patch.md "Drift");
//   - Pi's edit tool (1.6.0, createEditTool of node_modules/pi-1x; each oldText grown with context lines until it
//     is unique in L, as its prompt asks);
//   - Codex's apply_patch (the `codex` binary of @openai/codex, run as apply_patch with the same patch; installed on
//     demand into bench/results/codex like bench/patch.mjs, or PCT_BENCH_CODEX; skipped with a note if unavailable).
// Every outcome is correct (the file is byte-exact the truth), refused (an error and the file untouched) or wrong
// (anything else; in the conflict kinds there is no truth, so anything but a refusal is wrong);
// cost = refused + 100 × wrong. For Edit's refusals a second call is built from the refusal's text alone (the rows
// it shows and the tag it names) and its outcome counted too.
// Usage: npm run bench -- edit-drift [--quick] [--cases I,J,...] [--jobs N] [--json FILE]   (--quick: the first 15
// cases of each source; --cases: only these cases, by their index in cases.json.gz, as the `apart:` and `retry` lines
// name them; --jobs: worker processes, default one per core up to 2; --json: every tally and each wrong scenario)
import { fork, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, loadavg } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { tempDir } from "../../scripts/tmp.mjs";
import { codexApplyPatch } from "../fixtures/patch-data.mjs";
import { applyHunks, joinLines, mergeHunks, splitLines } from "./lines.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const require = createRequire(import.meta.url);
const quick = process.argv.includes("--quick");
const ji = process.argv.indexOf("--json");
const oi = process.argv.indexOf("--cases");
const only = oi >= 0 ? new Set(process.argv[oi + 1].split(",").map(Number)) : null;
const jsonOut = ji >= 0 ? process.argv[ji + 1] : null;

const data = JSON.parse(gunzipSync(readFileSync(join(HERE, "cases.json.gz"))).toString("utf8"));
let cases = data.cases;
if (quick) {
	const per = new Map();
	cases = cases.filter((c) => (per.set(c.src, (per.get(c.src) ?? 0) + 1).get(c.src) <= 15));
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios: {kind, live, truth (null = the only right answer is a refusal)}.

const commentOf = (path) => (/\.(py|rb|sh)$/.test(path) ? "#" : "//");
const block = (path, tag) => Array.from({ length: 5 }, (_, k) => `${commentOf(path)} ${tag} line ${k + 1} added meanwhile`);
const crlf = (t) => t.replace(/\n/g, "\r\n");

/** Indices of L's lines the change keeps that lie within `r` lines of a hunk. */
function neighbours(n, edit, r) {
	const removed = new Set();
	for (const [s, d] of edit) for (let k = s; k < s + d; k++) removed.add(k);
	const out = new Set();
	for (const [s, d] of edit) for (let k = Math.max(0, s - r); k < Math.min(n, s + d + r); k++) if (!removed.has(k)) out.add(k);
	return [...out].sort((a, b) => a - b);
}

function scenarios(c) {
	const L = c.L, Ls = splitLines(L), v1 = applyHunks(L, c.edit), v1s = splitLines(v1);
	const out = [];
	const add = (kind, live, truth) => out.push({ kind, live, truth });
	add("control", L, v1);
	add("real stale read", applyHunks(L, c.drift), applyHunks(L, mergeHunks(c.edit, c.drift)));
	const B = block(c.path, "drift");
	add("shift: 5 lines at the top", joinLines([...B, ...Ls]), joinLines([...B, ...v1s]));
	// The middle: the position nearest the file's middle that splits no edited window (its neighbours included).
	const free = (p) => c.edit.every(([s, d]) => p <= s - 1 || p >= s + d + 1);
	let p = -1;
	for (let k = 0; k < Ls.length; k++) {
		const cand = [Math.floor(Ls.length / 2) - k, Math.floor(Ls.length / 2) + k];
		p = cand.find((q) => q >= 1 && q <= Ls.length - 1 && free(q)) ?? -1;
		if (p >= 0) break;
	}
	if (p >= 0) add("shift: 5 lines in the middle", applyHunks(L, [[p, 0, B]]), applyHunks(L, mergeHunks(c.edit, [[p, 0, B]])));
	add("shift: 5 lines at the end", joinLines([...Ls, ...B]), joinLines([...v1s, ...B]));
	// The first edited window with Codex's 3 context lines, copied above everything.
	const [s0, d0] = c.edit[0];
	const copy = Ls.slice(Math.max(0, s0 - 3), Math.min(Ls.length, s0 + d0 + 3));
	add("duplicated window", joinLines([...copy, ...Ls]), joinLines([...copy, ...v1s]));
	// A line the change replaces was changed meanwhile (the first non-blank removed line of a hunk).
	const r = c.edit.flatMap(([s, d]) => Array.from({ length: d }, (_, k) => s + k)).find((k) => Ls[k].trim().length >= 3);
	if (r !== undefined) {
		const line = Ls[r], mid = Math.floor(line.length / 2);
		const conflict = (kind, changed) => add(kind, joinLines(Ls.map((l, k) => (k === r ? changed : l))), null);
		conflict("conflict: mid-line", line.slice(0, mid) + "DRIFT" + line.slice(mid));
		conflict("conflict: prefix", "DRIFT" + line);
		conflict("conflict: suffix", line + " DRIFT");
	}
	add("CRLF line endings", crlf(L), crlf(v1));
	// Kept lines around the change reformatted: trailing spaces added, indentation switched (tabs <-> spaces).
	const near = neighbours(Ls.length, c.edit, 3);
	const ws = (fn, kind) => {
		const m = [...Ls];
		let changed = 0;
		for (const k of near) {
			const t = fn(m[k]);
			if (t !== m[k]) (m[k] = t), changed++;
		}
		if (changed) add(kind, joinLines(m), applyHunks(joinLines(m), c.edit));
	};
	ws((l) => (l.trim() ? l + "  " : l), "trailing spaces");
	ws((l) => {
		const w = /^[ \t]*/.exec(l)[0];
		if (!l.trim() || !w) return l;
		const nw = w.includes("\t") ? w.replace(/\t/g, "    ") : w.replace(/ {4}/g, "\t").replace(/ {2}/g, "\t");
		return nw + l.slice(w.length);
	}, "indentation");
	return out;
}
const KINDS = [
	"control",
	"real stale read",
	"shift: 5 lines at the top",
	"shift: 5 lines in the middle",
	"shift: 5 lines at the end",
	"duplicated window",
	"conflict: mid-line",
	"conflict: prefix",
	"conflict: suffix",
	"CRLF line endings",
	"trailing spaces",
	"indentation",
];

// ---------------------------------------------------------------------------------------------------------------
// The calls, derived from L and the intended change only.

/** Toolkit Edit ops in L's line numbers. */
function editOps(len, edit) {
	const rows = (add) => add.map((l) => `\n+${l}`).join("");
	return edit
		.map(([s, d, add]) => {
			if (d > 0 && add.length) return `PUT ${s + 1}.=${s + d}:${rows(add)}`;
			if (d > 0) return `CUT ${s + 1}.=${s + d}`;
			if (s === 0) return `PUT <1:${rows(add)}`;
			if (s === len) return `PUT >$:${rows(add)}`;
			return `PUT >${s}:${rows(add)}`;
		})
		.join("\n");
}

const count = (hay, needle) => {
	let n = 0;
	for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + 1)) n++;
	return n;
};
const text = (ls) => ls.map((l) => l + "\n").join("");

/** Pi edit's {oldText, newText} pairs: each hunk's lines, grown with context until unique in L; touching ones merged. */
function piEdits(L, Ls, edit) {
	const grow = (lo, hi) => {
		let side = 0;
		while ((hi <= lo || count(L, text(Ls.slice(lo, hi))) !== 1) && (lo > 0 || hi < Ls.length)) {
			if ((side++ % 2 === 0 && hi < Ls.length) || lo === 0) hi++;
			else lo--;
		}
		return [lo, hi];
	};
	let groups = edit.map((h) => {
		const [s, d] = h;
		const [lo, hi] = d > 0 ? grow(s, s + d) : s > 0 ? grow(s - 1, s) : grow(s, s + 1);
		return { lo, hi, hunks: [h] };
	});
	for (let merged = true; merged; ) {
		merged = false;
		for (let k = 1; k < groups.length; k++) {
			const a = groups[k - 1], b = groups[k];
			if (b.lo <= a.hi) {
				const [lo, hi] = grow(Math.min(a.lo, b.lo), Math.max(a.hi, b.hi));
				groups.splice(k - 1, 2, { lo, hi, hunks: [...a.hunks, ...b.hunks] });
				merged = true;
				break;
			}
		}
	}
	return groups.map(({ lo, hi, hunks }) => {
		const local = hunks.map(([s, d, add]) => [s - lo, d, add]);
		return { oldText: text(Ls.slice(lo, hi)), newText: applyHunks(text(Ls.slice(lo, hi)), local) };
	});
}

/** Where `needle` (lines) occurs exactly in `hay` (lines) at or after `from`: the first two start positions. */
function occurrences(hay, needle, from) {
	const out = [];
	for (let p = from; p + needle.length <= hay.length && out.length < 2; p++) if (needle.every((l, k) => hay[p + k] === l)) out.push(p);
	return out;
}

/** The Codex patch section (`*** Update File` and its hunks) of the change: hunks with 3 context lines, those whose
 * context would overlap joined. A chunk whose old side is not unique in L at or after the previous chunk is made
 * unique from L alone, as the instructions a model follows ask: first with an `@@ <line>` anchor, Codex's "use the @@
 * operator to indicate the class or function to which the snippet belongs" (the nearest line above the chunk, not
 * blank and not only punctuation, that the tools find first at or after the previous chunk and after which the old
 * side occurs once; one indented no deeper than the chunk's lines is preferred, as an enclosing line would be);
 * when no anchor can (the repeat lies after the change), with more context lines, one at a time below then above
 * and never into a neighbouring chunk, as the toolkit's tool description ("the old lines must match exactly once")
 * and its ambiguous-context error ask. Both tools get the same patch. */
function patchSection(rel, Ls, edit) {
	const groups = [];
	for (const h of edit) {
		const g = groups.at(-1);
		if (g && h[0] - (g.at(-1)[0] + g.at(-1)[1]) <= 6) g.push(h);
		else groups.push([h]);
	}
	let p = `*** Update File: ${rel}\n`;
	let cursor = 0;
	for (const [gi, g] of groups.entries()) {
		let lo = Math.max(0, g[0][0] - 3), hi = Math.min(Ls.length, g.at(-1)[0] + g.at(-1)[1] + 3);
		const unique = (from, a, b) => occurrences(Ls, Ls.slice(a, b), from).length === 1;
		let anchor = null;
		if (hi > lo && !unique(cursor, lo, hi)) {
			// An enclosing line (indented no deeper than the chunk) first, then any line.
			const indent = (l) => /^[ \t]*/.exec(l)[0].length;
			const depth = Math.min(...Ls.slice(lo, hi).filter((l) => l.trim()).map(indent));
			for (const enclosing of [true, false])
				for (let a = lo - 1; a >= cursor && anchor === null; a--)
					if (/[\p{L}\p{N}_]/u.test(Ls[a]) && (!enclosing || indent(Ls[a]) <= depth) && Ls.indexOf(Ls[a], cursor) === a && unique(a + 1, lo, hi))
						anchor = a;
			if (anchor === null) {
				// More context: below first, then above, staying clear of the previous and the next chunk.
				const floor = cursor, ceil = gi + 1 < groups.length ? Math.max(0, groups[gi + 1][0][0] - 3) : Ls.length;
				for (let side = 0; !unique(cursor, lo, hi) && (lo > floor || hi < ceil); side++) {
					if ((side % 2 === 0 && hi < ceil) || lo === floor) hi++;
					else lo--;
				}
			}
		}
		p += anchor === null ? "@@\n" : `@@ ${Ls[anchor]}\n`;
		let at = lo;
		for (const [s, d, add] of g) {
			for (; at < s; at++) p += ` ${Ls[at]}\n`;
			for (; at < s + d; at++) p += `-${Ls[at]}\n`;
			for (const l of add) p += `+${l}\n`;
		}
		for (; at < hi; at++) p += ` ${Ls[at]}\n`;
		cursor = hi;
	}
	return p;
}
const wrapPatch = (sections) => `*** Begin Patch\n${sections.join("")}*** End Patch\n`;

/** The second call a model builds from Edit's refusal: the rows it shows, its tag, and the change it still wants. */
function retryFrom(message, Ls, edit) {
	const tags = [...message.matchAll(/\[[^\]\n]*#([0-9A-F]{4})\]/g)];
	if (!tags.length) return null;
	const rows = new Map();
	for (const m of message.slice(tags.at(-1).index).matchAll(/^(\d+):(.*)$/gm)) rows.set(Number(m[1]), m[2]);
	const shifted = [];
	for (const [s, d, add] of edit) {
		// The lines the model knows around its change: one neighbour each side and the lines it replaces.
		const lo = Math.max(0, s - 1), hi = Math.min(Ls.length, s + d + 1);
		const ev = Ls.slice(lo, hi);
		const hits = [...rows.keys()].filter((n) => ev.every((l, k) => rows.get(n + k) === l));
		if (hits.length !== 1) return null;
		shifted.push([hits[0] - 1 + (s - lo), d, add]);
	}
	return { tag: tags.at(-1)[1], ops: editOps(Infinity, shifted) };
}

/** Codex's apply_patch from bench/fixtures/patch-data.mjs; without it (no install possible) its column is left out. */
function codexBinary() {
	try {
		return codexApplyPatch();
	} catch (e) {
		return { note: `Codex's apply_patch could not be installed (${e.message}); its column is left out` };
	}
}

// The run: the cases are dealt round-robin to worker processes (one per core, at most `--jobs N`), each plays its
// cases in one temp folder of its own with one HostSession per case, and the parent adds up their tallies. Codex's
// binary applies one patch per process, in file order, stopping at the first file that fails (naming it); so each
// case's scenarios go to it as one multi-file patch, and after a failure the files after the failed one go again.

const TOOL_KEYS = ["edit", "patch", "patchShown", "pi", "codex"];
const outcome = (now, live, truth, failed) => (truth !== null && now === truth ? "correct" : failed && now === live ? "refused" : "wrong");

/** Plays cases `ci ≡ worker (mod jobs)`; returns every scenario's outcomes and the retry counts. */
async function play(worker, jobs, codexLink) {
	const native = require(join(ROOT, "index.js"));
	const { createEditTool } = await import("pi-1x");
	const tmp = tempDir("pct-edit-drift-");
	const base = join(tmp, "ws");
	mkdirSync(join(tmp, "agent"), { recursive: true });
	mkdirSync(base, { recursive: true });
	const pi = createEditTool(base);
	const records = []; // [ci, kind, edit, patch, pi, codex, retry outcome or "unlocatable" or null, refusal code]
	for (let ci = worker; ci < cases.length; ci += jobs) {
		if (only && !only.has(ci)) continue;
		const c = cases[ci];
		const s = new native.HostSession(base, join(tmp, "agent"), `c${ci}`);
		const Ls = splitLines(c.L);
		const name = basename(c.path);
		const ops = editOps(Ls.length, c.edit);
		const caseDir = join(base, `c${ci}`);
		const all = scenarios(c);
		const files = (tool) => all.map((_, si) => join(caseDir, tool, `s${si}`, name));
		for (const tool of TOOL_KEYS) for (const f of files(tool)) mkdirSync(dirname(f), { recursive: true });
		const rec = all.map((sc) => ({ ci, kind: sc.kind, edit: null, patch: null, patchShown: null, pi: null, codex: null, retry: null, code: null }));
		for (const [si, sc] of all.entries()) {
			const r = rec[si];
			// toolkit Edit: Read shows L, then the live file lands, then the edit arrives.
			{
				const rel = `c${ci}/edit/s${si}/${name}`, file = join(base, rel);
				writeFileSync(file, c.L);
				const rd = await s.read({ path: rel, limit: 100000 });
				if (!rd.ok) throw new Error(`read: ${rd.message}`);
				writeFileSync(file, sc.live);
				const e = await s.edit({ path: rel, tag: rd.tag, ops }, { turn: `t${ci}-${si}` });
				r.edit = outcome(readFileSync(file, "utf8"), sc.live, sc.truth, !e.ok);
				if (r.edit === "refused") {
					r.code = e.code;
					const next = retryFrom(e.message, Ls, c.edit);
					if (!next) r.retry = "unlocatable";
					else {
						const e2 = await s.edit({ path: rel, tag: next.tag, ops: next.ops }, { turn: `t${ci}-${si}` });
						r.retry = outcome(readFileSync(file, "utf8"), sc.live, sc.truth, !e2.ok);
					}
				}
			}
			// toolkit apply_patch
			{
				const rel = `c${ci}/patch/s${si}/${name}`, file = join(base, rel);
				writeFileSync(file, sc.live);
				const res = await native.applyPatch(base, wrapPatch([patchSection(rel, Ls, c.edit)]));
				r.patch = outcome(readFileSync(file, "utf8"), sc.live, sc.truth, !res.ok);
			}
			// toolkit apply_patch after a toolkit Read of L in the session (its review target names the session)
			{
				const rel = `c${ci}/patchShown/s${si}/${name}`, file = join(base, rel);
				writeFileSync(file, c.L);
				const rd = await s.read({ path: rel, limit: 100000 });
				if (!rd.ok) throw new Error(`read: ${rd.message}`);
				writeFileSync(file, sc.live);
				const res = await native.applyPatch(base, wrapPatch([patchSection(rel, Ls, c.edit)]), undefined, { agentDir: join(tmp, "agent"), sessionId: `c${ci}` });
				r.patchShown = outcome(readFileSync(file, "utf8"), sc.live, sc.truth, !res.ok);
			}
			// Pi's edit
			{
				const file = files("pi")[si];
				writeFileSync(file, sc.live);
				let failed = false;
				try {
					await pi.execute(`c${ci}`, { path: file, edits: piEdits(c.L, Ls, c.edit) }, undefined, undefined, undefined);
				} catch {
					failed = true;
				}
				r.pi = outcome(readFileSync(file, "utf8"), sc.live, sc.truth, failed);
			}
		}
		// Codex's apply_patch: all the case's scenarios in one patch; after a failure, the files after it again.
		if (codexLink) {
			const cdir = join(caseDir, "codex");
			const abs = files("codex");
			all.forEach((sc, si) => writeFileSync(abs[si], sc.live));
			for (let from = 0; from < all.length; ) {
				const sections = all.slice(from).map((_, k) => patchSection(`s${from + k}/${name}`, Ls, c.edit));
				const p = spawnSync(codexLink, [], { cwd: cdir, input: wrapPatch(sections), encoding: "utf8" });
				// The failed file: the one its error names; a failure naming none is retried one file at a time.
				let failedAt = all.length;
				if (p.status !== 0) {
					const named = abs.findIndex((f, si) => si >= from && p.stderr.includes(`${f}:`));
					failedAt = named >= 0 ? named : sections.length === 1 ? from : -1;
				}
				if (failedAt < 0) {
					for (let si = from; si < all.length; si++) {
						const one = spawnSync(codexLink, [], { cwd: cdir, input: wrapPatch([patchSection(`s${si}/${name}`, Ls, c.edit)]), encoding: "utf8" });
						rec[si].codex = outcome(readFileSync(abs[si], "utf8"), all[si].live, all[si].truth, one.status !== 0);
					}
					break;
				}
				for (let si = from; si < Math.min(failedAt + 1, all.length); si++)
					rec[si].codex = outcome(readFileSync(abs[si], "utf8"), all[si].live, all[si].truth, si === failedAt);
				from = failedAt + 1;
			}
		}
		rmSync(caseDir, { recursive: true, force: true });
		records.push(...rec);
	}
	return records;
}

const jobsAt = process.argv.indexOf("--jobs");
const workerAt = process.argv.indexOf("--worker");
if (workerAt >= 0) {
	// A worker: `--worker I/N LINK`; its records go to the parent as one message.
	const [i, jobs] = process.argv[workerAt + 1].split("/").map(Number);
	const link = process.argv[workerAt + 2];
	const records = await play(i, jobs, link === "-" ? null : link);
	process.send(records, () => process.exit(0));
} else {
	const codex = codexBinary();
	console.log(codex.link ? `baseline: ${codex.version} apply_patch` : codex.note);
	const piVersion = JSON.parse(readFileSync(join(ROOT, "node_modules/pi-1x/package.json"), "utf8")).version;
	console.log(`baseline: Pi's edit tool ${piVersion}; ${cases.length} cases from ${data.sources.map((s) => s.repo).join(", ")}`);
	const jobs = Math.max(1, jobsAt >= 0 ? Number(process.argv[jobsAt + 1]) : Math.min(2, availableParallelism()));
	const t0 = performance.now();
	const parts = await Promise.all(
		Array.from({ length: jobs }, (_, i) => {
			const args = ["--worker", `${i}/${jobs}`, codex.link ?? "-", ...(quick ? ["--quick"] : []), ...(only ? ["--cases", [...only].join(",")] : [])];
			const child = fork(fileURLToPath(import.meta.url), args, { stdio: "inherit" });
			let got = null;
			child.on("message", (m) => (got = m));
			return once(child, "exit").then(([status]) => {
				if (status !== 0 || !got) throw new Error(`worker ${i} failed (status ${status})`);
				return got;
			});
		}),
	);
	const records = parts.flat().sort((a, b) => a.ci - b.ci);
	const secs = (performance.now() - t0) / 1000;

	const TOOLS = ["toolkit Edit", "toolkit apply_patch", "toolkit apply_patch after Read", `Pi edit ${piVersion}`, ...(codex.link ? ["Codex apply_patch"] : [])];
	const tally = new Map(); // kind -> tool -> {correct, refused, wrong}
	const retry = { correct: 0, refused: 0, wrong: 0, unlocatable: 0 };
	const retryConflict = { correct: 0, refused: 0, wrong: 0, unlocatable: 0 };
	const refusalCodes = new Map();
	const wrongs = [];
	for (const r of records) {
		const k = tally.get(r.kind) ?? tally.set(r.kind, new Map()).get(r.kind);
		TOOLS.forEach((tool, ti) => {
			const o = r[TOOL_KEYS[ti]];
			const t = k.get(tool) ?? k.set(tool, { correct: 0, refused: 0, wrong: 0 }).get(tool);
			t[o]++;
			if (o === "wrong") wrongs.push({ tool, kind: r.kind, case: r.ci, src: cases[r.ci].src, path: cases[r.ci].path, a: cases[r.ci].a, b: cases[r.ci].b });
		});
		if (r.code) refusalCodes.set(r.code, (refusalCodes.get(r.code) ?? 0) + 1);
		if (r.retry) (r.kind.startsWith("conflict") ? retryConflict : retry)[r.retry]++;
	}

	const cell = (t) => (t ? `${t.correct} / ${t.refused} / ${t.wrong} (${t.refused + 100 * t.wrong})` : "-");
	const rows = [];
	const totals = new Map(TOOLS.map((t) => [t, { correct: 0, refused: 0, wrong: 0 }]));
	for (const kind of KINDS) {
		const k = tally.get(kind);
		if (!k) continue;
		const row = { kind, n: Object.values(k.get(TOOLS[0])).reduce((a, b) => a + b, 0) };
		for (const tool of TOOLS) {
			row[tool] = cell(k.get(tool));
			for (const f of ["correct", "refused", "wrong"]) totals.get(tool)[f] += k.get(tool)?.[f] ?? 0;
		}
		rows.push(row);
	}
	rows.push({ kind: "all", n: records.length, ...Object.fromEntries(TOOLS.map((t) => [t, cell(totals.get(t))])) });
	console.log(`\n${records.length} scenarios in ${secs.toFixed(0)} s (${jobs} worker${jobs === 1 ? "" : "s"}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}); each cell: correct / refused / wrong (cost = refused + 100 × wrong)`);
	console.table(rows);
	console.log(`toolkit Edit refusals by code: ${[...refusalCodes].map(([k, v]) => `${k} ${v}`).join(", ") || "none"}`);
	const fmtR = (r) => `${r.correct} correct, ${r.refused} refused again, ${r.wrong} wrong, ${r.unlocatable} with the change's lines not in the refusal`;
	console.log(`toolkit Edit, a second call built from each refusal's text: ${fmtR(retry)}; in the conflict kinds: ${fmtR(retryConflict)}`);
	for (const w of wrongs.filter((w) => w.tool.startsWith("toolkit"))) console.log(`wrong: ${w.tool}, ${w.kind}: case ${w.case} (${w.src} ${w.path} ${w.a}..${w.b})`);
	for (const r of records.filter((r) => r.retry === "wrong" || r.retry === "correct"))
		console.log(`retry ${r.retry}: ${r.kind}: case ${r.ci} (${cases[r.ci].src} ${cases[r.ci].path})`);
	// Where the two toolkit tools disagree: apply_patch after a Read refuses what Edit places, or the other way round.
	const apart = records.filter((r) => (r.patchShown === "refused") !== (r.edit === "refused"));
	for (const r of apart)
		console.log(`apart: ${r.kind}: case ${r.ci} (${cases[r.ci].src} ${cases[r.ci].path}): Edit ${r.edit}, apply_patch after Read ${r.patchShown}`);
	if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ tools: TOOLS, seconds: secs, jobs, load: loadavg(), kinds: Object.fromEntries([...tally].map(([k, v]) => [k, Object.fromEntries(v)])), retry, retryConflict, refusalCodes: Object.fromEntries(refusalCodes), wrongs, apart: apart.map((r) => ({ kind: r.kind, case: r.ci, edit: r.edit, patchShown: r.patchShown })) }, null, 1));
}
