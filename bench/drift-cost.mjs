// The cost of carrying an edit over drift (docs/host.md "Edits under drift", docs/patch.md "Drift"), engine only:
// the addon's HostSession.edit and applyPatch called from Node, no Pi. For each file size (128 KiB, 512 KiB, 2 MiB —
// the largest shown copy the snapshot store keeps) and two line shapes (code-like lines of about 60 bytes; short
// lines of 4 to 8 bytes, many of them repeated, the worst case for a line alignment), in the same run and interleaved:
//  - Edit plain: Read, then one PUT of a line in the middle with the tag the Read returned (the file did not change);
//  - Edit drift: Read, a line added at the top and one changed near the end, then the same PUT with the stale tag
//    (carried over through the diff and the alignment check);
//  - apply_patch plain: a Read in the session, then a one-line patch with 3 context lines whose context matches;
//  - apply_patch drift: a Read, the same drift plus the patch's outermost context line changed, then the same patch
//    (located in the copy the Read showed and carried over).
// Every call's result is checked (the right line changed; the drift path must carry over, not refuse). Reported: the
// median of each, the ratio drift / plain per size, and the growth of the drift path per 4× of file size (linear
// would be about 4×; a cost quadratic in the line count would be about 16×). A size whose drift call takes over 5 s in
// the warm-up is timed that once (its `runs` column says 1).
// Build the release addon first (`npm run build`). Usage: node bench/drift-cost.mjs [--runs N] [--shape code|short]
// [--addon FILE]   (--addon: another build of the addon, e.g. one written with `node scripts/build.mjs --out-dir`)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { tempDir } from "../scripts/tmp.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const arg = (name) => {
	const k = process.argv.indexOf(name);
	return k >= 0 ? process.argv[k + 1] : undefined;
};
const native = require(arg("--addon") ? resolve(arg("--addon")) : join(ROOT, "index.js"));
const runs = Number(arg("--runs") ?? 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** A drift call slower than this (ms) in the warm-up is timed once, not `runs` times. */
const SLOW_MS = 5000;

const KIB = 1024;
const SIZES = [128 * KIB, 512 * KIB, 2 * 1024 * KIB - 4 * KIB];
const SHAPES = {
	code: (k) => `\tline ${k}: the quick brown fox jumps over ${k % 97} lazy dogs();`,
	short: (k) => ["}", "", "\t}", "x = 1", "return"][k % 5] + (k % 7 === 0 ? ` ${k}` : ""),
};

/** A file of about `bytes` in lines of `shape`, as lines. */
function lines(shape, bytes) {
	const out = [];
	let size = 0;
	for (let k = 0; size < bytes; k++) {
		const l = SHAPES[shape](k);
		out.push(l);
		size += l.length + 1;
	}
	// A distinct line in the middle: the one both tools change, with its neighbours distinct too (so the patch's
	// context is unique in the file and the edit's place is certain).
	const t = Math.floor(out.length / 2);
	for (let d = -4; d <= 4; d++) out[t + d] = `mid ${d}: ${out[t + d]}`;
	return { ls: out, t };
}
const text = (ls) => ls.join("\n") + "\n";

const dir = tempDir("pct-drift-cost-");
const ws = join(dir, "ws"), agent = join(dir, "agent");
mkdirSync(ws);
mkdirSync(agent);
const s = new native.HostSession(ws, agent, "drift-cost");
const review = { agentDir: agent, sessionId: "drift-cost" };

/** One timed call of `kind` on `f` ({ls, t}); checks the result. */
async function once(kind, f) {
	const { ls, t } = f;
	const rel = "f.txt", file = join(ws, rel);
	const drifted = (extra) => {
		const m = [...ls];
		m[m.length - 3] = `${m[m.length - 3]} // changed meanwhile`;
		if (extra) m[t - 3] = `${m[t - 3]} // context changed meanwhile`;
		return ["// added meanwhile", ...m];
	};
	const want = (base, at) => text(base.map((l, k) => (k === at ? "CHANGED" : l)));
	writeFileSync(file, text(ls));
	const rd = await s.read({ path: rel, offset: t - 5, limit: 11 });
	if (!rd.ok) throw new Error(`read: ${rd.message}`);
	let expected, call;
	if (kind.startsWith("edit")) {
		const drift = kind === "edit drift";
		const live = drift ? drifted(false) : ls;
		if (drift) writeFileSync(file, text(live));
		expected = want(live, drift ? t + 1 : t);
		call = () => s.edit({ path: rel, tag: rd.tag, ops: `PUT ${t + 1}.=${t + 1}:\n+CHANGED` }, { turn: `${kind}${Math.random()}` });
	} else {
		const drift = kind === "patch drift";
		const live = drift ? drifted(true) : ls;
		if (drift) writeFileSync(file, text(live));
		expected = want(live, drift ? t + 1 : t);
		const body = [...ls.slice(t - 3, t).map((l) => ` ${l}`), `-${ls[t]}`, "+CHANGED", ...ls.slice(t + 1, t + 4).map((l) => ` ${l}`)];
		const patch = `*** Begin Patch\n*** Update File: ${rel}\n@@\n${body.join("\n")}\n*** End Patch\n`;
		call = () => native.applyPatch(ws, patch, undefined, review);
	}
	const t0 = performance.now();
	const r = await call();
	const ms = performance.now() - t0;
	if (!r.ok) throw new Error(`${kind}: refused: ${r.message ?? r.text}`);
	if (readFileSync(file, "utf8") !== expected) throw new Error(`${kind}: wrong result`);
	if (kind === "patch drift" && !/carried over/.test(r.text ?? "")) throw new Error("patch drift: not carried over through the shown copy");
	return ms;
}

const KINDS = ["edit plain", "edit drift", "patch plain", "patch drift"];
const rows = [];
const drifts = new Map();
for (const shape of arg("--shape") ? [arg("--shape")] : Object.keys(SHAPES)) {
	for (const bytes of SIZES) {
		const f = lines(shape, bytes);
		const times = new Map(KINDS.map((k) => [k, []]));
		// Warm-up, one of each; a drift call over SLOW_MS is not repeated (its one time is the figure), so a cost that
		// grows too fast still ends the run.
		const first = new Map();
		for (const k of KINDS) first.set(k, await once(k, f));
		const slow = first.get("edit drift") > SLOW_MS || first.get("patch drift") > SLOW_MS;
		for (let r = 0; r < (slow ? 0 : runs); r++) for (const k of KINDS) times.get(k).push(await once(k, f));
		if (slow) for (const k of KINDS) times.get(k).push(first.get(k));
		const m = Object.fromEntries(KINDS.map((k) => [k, median(times.get(k))]));
		drifts.set(`${shape} ${bytes}`, m);
		const prev = drifts.get(`${shape} ${SIZES[SIZES.indexOf(bytes) - 1]}`);
		const growth = (k) => (prev ? `${(m[k] / prev[k]).toFixed(1)}×` : "-");
		rows.push({
			shape,
			size: `${(bytes / KIB).toFixed(0)} KiB`,
			lines: f.ls.length,
			runs: slow ? 1 : runs,
			"Edit plain ms": m["edit plain"].toFixed(2),
			"Edit drift ms": m["edit drift"].toFixed(2),
			"Edit drift/plain": (m["edit drift"] / m["edit plain"]).toFixed(2),
			"Edit drift growth": growth("edit drift"),
			"patch plain ms": m["patch plain"].toFixed(2),
			"patch drift ms": m["patch drift"].toFixed(2),
			"patch drift/plain": (m["patch drift"] / m["patch plain"]).toFixed(2),
			"patch drift growth": growth("patch drift"),
		});
		console.log(JSON.stringify(rows.at(-1))); // as each size is done: a slow size still leaves the ones before
	}
}
console.log(`drift cost, median of ${runs} (growth: the drift path's median over the previous size, a 4× larger file)`);
console.table(rows);
