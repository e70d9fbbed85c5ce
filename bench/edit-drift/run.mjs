// Edits under drift (docs/host.md "Edits under drift"): the model read version L of a file and wants the change
// its commit made, but the file changed before the edit arrived. The cases come from real histories
// (cases.json.gz, rebuilt by extract.mjs; sources and licences inside it and in the README of this folder); each
// case is played in every scenario kind below, and every tool gets a call derived only from L and the intended
// change, exactly as a model that read L would write it:
//   - toolkit Edit (HostSession.read of L, then HostSession.edit with L's tag and L's line numbers);
//   - toolkit apply_patch (the Codex patch of the change with 3 context lines, applyPatch);
//   - Pi's edit tool (1.6.0, createEditTool of node_modules/pi-1x; each oldText grown with context lines until it
//     is unique in L, as its prompt asks);
//   - Codex's apply_patch (the `codex` binary of @openai/codex, run as apply_patch with the same patch; installed on
//     demand into bench/results/codex like bench/patch.mjs, or PCT_BENCH_CODEX; skipped with a note if unavailable).
// Every outcome is correct (the file is byte-exact the truth), refused (an error and the file untouched) or wrong
// (anything else; in the conflict kinds there is no truth, so anything but a refusal is wrong);
// cost = refused + 100 × wrong. For Edit's refusals a second call is built from the refusal's text alone (the rows
// it shows and the tag it names) and its outcome counted too.
// Usage: npm run bench -- edit-drift [--quick] [--json FILE]   (--quick: the first 15 cases of each source)
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { tempDir } from "../../scripts/tmp.mjs";
import { codexApplyPatch } from "../fixtures/patch-data.mjs";
import { applyHunks, joinLines, mergeHunks, splitLines } from "./lines.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
const require = createRequire(import.meta.url);
const native = require(join(ROOT, "index.js"));
const { createEditTool } = await import("pi-1x");
const quick = process.argv.includes("--quick");
const ji = process.argv.indexOf("--json");
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

/** The Codex patch of the change: hunks with 3 context lines, those whose context would overlap joined. */
function patchOf(rel, Ls, edit) {
	const groups = [];
	for (const h of edit) {
		const g = groups.at(-1);
		if (g && h[0] - (g.at(-1)[0] + g.at(-1)[1]) <= 6) g.push(h);
		else groups.push([h]);
	}
	let p = `*** Begin Patch\n*** Update File: ${rel}\n`;
	for (const g of groups) {
		const lo = Math.max(0, g[0][0] - 3), hi = Math.min(Ls.length, g.at(-1)[0] + g.at(-1)[1] + 3);
		p += "@@\n";
		let at = lo;
		for (const [s, d, add] of g) {
			for (; at < s; at++) p += ` ${Ls[at]}\n`;
			for (; at < s + d; at++) p += `-${Ls[at]}\n`;
			for (const l of add) p += `+${l}\n`;
		}
		for (; at < hi; at++) p += ` ${Ls[at]}\n`;
	}
	return p + "*** End Patch\n";
}

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

// ---------------------------------------------------------------------------------------------------------------

/** Codex's apply_patch from bench/fixtures/patch-data.mjs; without it (no install possible) its column is left out. */
function codexBinary() {
	try {
		return codexApplyPatch();
	} catch (e) {
		return { note: `Codex's apply_patch could not be installed (${e.message}); its column is left out` };
	}
}

const codex = codexBinary();
console.log(codex.link ? `baseline: ${codex.version} apply_patch` : codex.note);
const piVersion = JSON.parse(readFileSync(join(ROOT, "node_modules/pi-1x/package.json"), "utf8")).version;
console.log(`baseline: Pi's edit tool ${piVersion}; ${cases.length} cases from ${data.sources.map((s) => s.repo).join(", ")}`);

const TOOLS = ["toolkit Edit", "toolkit apply_patch", `Pi edit ${piVersion}`, ...(codex.link ? ["Codex apply_patch"] : [])];
const tally = new Map(); // kind -> tool -> {correct, refused, wrong}
const bump = (kind, tool, outcome) => {
	const k = tally.get(kind) ?? tally.set(kind, new Map()).get(kind);
	const t = k.get(tool) ?? k.set(tool, { correct: 0, refused: 0, wrong: 0 }).get(tool);
	t[outcome]++;
};
const retry = { correct: 0, refused: 0, wrong: 0, unlocatable: 0 };
const retryConflict = { correct: 0, refused: 0, wrong: 0, unlocatable: 0 };
const refusalCodes = new Map();

const classify = (file, live, truth, failed) => {
	const now = readFileSync(file, "utf8");
	if (truth !== null && now === truth) return "correct";
	return failed && now === live ? "refused" : "wrong";
};

const tmp = tempDir("pct-edit-drift-");
const base = join(tmp, "ws");
mkdirSync(join(tmp, "agent"), { recursive: true });
mkdirSync(base, { recursive: true });
const t0 = performance.now();
let n = 0;
for (const [ci, c] of cases.entries()) {
	const s = new native.HostSession(base, join(tmp, "agent"), `c${ci}`);
	const Ls = splitLines(c.L);
	const name = basename(c.path);
	const ops = editOps(Ls.length, c.edit);
	for (const [si, sc] of scenarios(c).entries()) {
		n++;
		const dir = join(base, `s${ci}-${si}`);
		// toolkit Edit: Read shows L, then the live file lands, then the edit arrives.
		{
			const rel = `s${ci}-${si}/edit/${name}`, file = join(base, rel);
			mkdirSync(dirname(file), { recursive: true });
			writeFileSync(file, c.L);
			const r = await s.read({ path: rel, limit: 100000 });
			if (!r.ok) throw new Error(`read: ${r.message}`);
			writeFileSync(file, sc.live);
			const e = await s.edit({ path: rel, tag: r.tag, ops }, { turn: `t${ci}-${si}` });
			const o = classify(file, sc.live, sc.truth, !e.ok);
			bump(sc.kind, TOOLS[0], o);
			if (o === "refused") {
				refusalCodes.set(e.code, (refusalCodes.get(e.code) ?? 0) + 1);
				const next = retryFrom(e.message, Ls, c.edit);
				const into = sc.truth === null ? retryConflict : retry;
				if (!next) into.unlocatable++;
				else {
					const e2 = await s.edit({ path: rel, tag: next.tag, ops: next.ops }, { turn: `t${ci}-${si}` });
					into[classify(file, sc.live, sc.truth, !e2.ok)]++;
				}
			}
		}
		const rel = `s${ci}-${si}/${name}`;
		const patch = patchOf(rel, Ls, c.edit);
		// toolkit apply_patch
		{
			const file = join(base, rel);
			writeFileSync(file, sc.live);
			const r = await native.applyPatch(base, patch);
			bump(sc.kind, TOOLS[1], classify(file, sc.live, sc.truth, !r.ok));
		}
		// Pi's edit
		{
			const file = join(dir, "pi", name);
			mkdirSync(dirname(file), { recursive: true });
			writeFileSync(file, sc.live);
			let failed = false;
			try {
				await createEditTool(base).execute(`c${ci}`, { path: file, edits: piEdits(c.L, Ls, c.edit) }, undefined, undefined, undefined);
			} catch {
				failed = true;
			}
			bump(sc.kind, TOOLS[2], classify(file, sc.live, sc.truth, failed));
		}
		// Codex's apply_patch
		if (codex.link) {
			const cdir = join(dir, "codex");
			const file = join(cdir, rel);
			mkdirSync(dirname(file), { recursive: true });
			writeFileSync(file, sc.live);
			const r = spawnSync(codex.link, [], { cwd: cdir, input: patch, encoding: "utf8" });
			bump(sc.kind, TOOLS[3], classify(file, sc.live, sc.truth, r.status !== 0));
		}
		rmSync(dir, { recursive: true, force: true });
	}
}
const secs = (performance.now() - t0) / 1000;

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
rows.push({ kind: "all", n, ...Object.fromEntries(TOOLS.map((t) => [t, cell(totals.get(t))])) });
console.log(`\n${n} scenarios in ${secs.toFixed(0)} s; each cell: correct / refused / wrong (cost = refused + 100 × wrong)`);
console.table(rows);
console.log(`toolkit Edit refusals by code: ${[...refusalCodes].map(([k, v]) => `${k} ${v}`).join(", ") || "none"}`);
const fmtR = (r) => `${r.correct} correct, ${r.refused} refused again, ${r.wrong} wrong, ${r.unlocatable} with the change's lines not in the refusal`;
console.log(`toolkit Edit, a second call built from each refusal's text: ${fmtR(retry)}; in the conflict kinds: ${fmtR(retryConflict)}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ tools: TOOLS, kinds: Object.fromEntries([...tally].map(([k, v]) => [k, Object.fromEntries(v)])), retry, retryConflict, refusalCodes: Object.fromEntries(refusalCodes) }, null, 1));
