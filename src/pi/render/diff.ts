/**
 * Diffs for the screen only (docs/render.md "Diffs"): what an Edit, a Write over an existing file or an apply_patch
 * will change, in the text form Pi's own `renderDiff` colours (`+12 text`, `-12 text`, ` 12 text`, `     ...`).
 * Nothing here decides what lands: the Rust engine applies the call; these views are drawn from the call's
 * arguments (and, for Edit and Write, the file as it is on disk when the call is drawn), so the person sees what
 * the call asks for before approving it.
 */
import { readFileSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";

/** A drawn diff: Pi's diff text and its counts. */
export interface DiffView {
	/** Lines in Pi's `renderDiff` form; "" when there is nothing to show. */
	text: string;
	added: number;
	removed: number;
}

/** Files larger than this are not read for a preview (the view then names the ranges only). */
export const PREVIEW_FILE_CAP = 2 * 1024 * 1024;
/** Above this many lines on either side, Write's view gives counts only (the diff would not fit a screen anyway). */
export const DIFF_LINE_CAP = 20_000;
/** Unchanged lines kept around each change. */
export const CONTEXT_LINES = 3;

/** The text of `path` (relative to `cwd`), or undefined when it is missing, not a regular file or too large. */
export function readForPreview(path: string, cwd: string): string | undefined {
	try {
		const abs = isAbsolute(path) ? path : resolve(cwd, path);
		const st = statSync(abs);
		if (!st.isFile() || st.size > PREVIEW_FILE_CAP) return undefined;
		return readFileSync(abs, "utf8");
	} catch {
		return undefined;
	}
}

/** Lines of a text, without the empty piece after a final newline. */
export function splitLines(text: string): string[] {
	const lines = text.replace(/\r\n/g, "\n").split("\n");
	if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
	return lines;
}

type Edit = { kind: " " | "-" | "+"; line: string; oldNo: number; newNo: number };

/** Myers' O(ND) shortest edit script between two line arrays (common prefix and suffix trimmed first). */
function editScript(a: string[], b: string[]): Edit[] {
	let pre = 0;
	while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
	let suf = 0;
	while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
	const A = a.slice(pre, a.length - suf);
	const B = b.slice(pre, b.length - suf);
	const n = A.length;
	const m = B.length;
	const max = n + m;
	const v = new Int32Array(2 * max + 2);
	const trace: Int32Array[] = [];
	outer: for (let d = 0; d <= max; d++) {
		trace.push(v.slice());
		for (let k = -d; k <= d; k += 2) {
			let x = k === -d || (k !== d && v[max + k - 1] < v[max + k + 1]) ? v[max + k + 1] : v[max + k - 1] + 1;
			let y = x - k;
			while (x < n && y < m && A[x] === B[y]) {
				x++;
				y++;
			}
			v[max + k] = x;
			if (x >= n && y >= m) break outer;
		}
	}
	// Walk the trace back from (n, m).
	const mid: Edit[] = [];
	let x = n;
	let y = m;
	for (let d = trace.length - 1; d > 0; d--) {
		const vd = trace[d];
		const k = x - y;
		const prevK = k === -d || (k !== d && vd[max + k - 1] < vd[max + k + 1]) ? k + 1 : k - 1;
		const px = vd[max + prevK];
		const py = px - prevK;
		while (x > px && y > py) mid.push({ kind: " ", line: A[--x], oldNo: 0, newNo: 0 }), y--;
		if (x === px) mid.push({ kind: "+", line: B[--y], oldNo: 0, newNo: 0 });
		else mid.push({ kind: "-", line: A[--x], oldNo: 0, newNo: 0 });
	}
	while (x > 0 && y > 0) mid.push({ kind: " ", line: A[--x], oldNo: 0, newNo: 0 }), y--;
	mid.reverse();
	const all: Edit[] = [];
	for (let i = 0; i < pre; i++) all.push({ kind: " ", line: a[i], oldNo: 0, newNo: 0 });
	all.push(...mid);
	for (let i = a.length - suf; i < a.length; i++) all.push({ kind: " ", line: a[i], oldNo: 0, newNo: 0 });
	let o = 1;
	let nn = 1;
	for (const e of all) {
		e.oldNo = o;
		e.newNo = nn;
		if (e.kind !== "+") o++;
		if (e.kind !== "-") nn++;
	}
	return all;
}

/** The line diff of two texts with `context` unchanged lines around each change, in Pi's diff form. */
export function lineDiff(before: string, after: string, context = CONTEXT_LINES): DiffView {
	const a = splitLines(before);
	const b = splitLines(after);
	if (a.length > DIFF_LINE_CAP || b.length > DIFF_LINE_CAP) return { text: "", added: b.length, removed: a.length };
	const script = editScript(a, b);
	const width = String(Math.max(a.length, b.length, 1)).length;
	const keep = new Uint8Array(script.length);
	script.forEach((e, i) => {
		if (e.kind === " ") return;
		for (let j = Math.max(0, i - context); j <= Math.min(script.length - 1, i + context); j++) keep[j] = 1;
	});
	const out: string[] = [];
	let added = 0;
	let removed = 0;
	let gap = false;
	script.forEach((e, i) => {
		if (e.kind === "+") added++;
		if (e.kind === "-") removed++;
		if (!keep[i]) {
			gap = true;
			return;
		}
		if (gap && out.length > 0) out.push(` ${"".padStart(width)} ...`);
		gap = false;
		const no = e.kind === "+" ? e.newNo : e.oldNo;
		out.push(`${e.kind}${String(no).padStart(width)} ${e.line}`);
	});
	return { text: out.join("\n"), added, removed };
}

/** One parsed Edit operation header (docs/host.md "The operation language"), for display. */
interface EditOp {
	verb: "PUT" | "CUT" | "REM" | "MV";
	/** PUT/CUT: replaced range N..M; insert before (`<`) or after (`>`) N; `$` = end of file. */
	where?: { kind: "range"; from: number; to: number } | { kind: "before" | "after"; at: number | "$" };
	register?: string;
	dest?: string;
	rows: string[];
	header: string;
}

/** Parses the ops text as far as it reads; lines it cannot place are kept as headers so nothing is hidden. */
function parseOps(ops: string): EditOp[] {
	const out: EditOp[] = [];
	for (const raw of ops.replace(/\r\n/g, "\n").split("\n")) {
		const cur = out[out.length - 1];
		if (raw.startsWith("+") && cur && cur.verb === "PUT" && cur.register === undefined) {
			cur.rows.push(raw.slice(1));
			continue;
		}
		const line = raw.trim();
		if (line === "") continue;
		let m = /^(PUT|CUT)\s+(\d+)\.=(\d+):?\s*(@\S*)?$/.exec(line);
		if (m) {
			out.push({ verb: m[1] as "PUT" | "CUT", where: { kind: "range", from: Number(m[2]), to: Number(m[3]) }, register: m[4], rows: [], header: line });
			continue;
		}
		m = /^PUT\s+([<>])(\d+|\$):?\s*(@\S*)?$/.exec(line);
		if (m) {
			const at = m[2] === "$" ? "$" : Number(m[2]);
			out.push({ verb: "PUT", where: { kind: m[1] === "<" ? "before" : "after", at }, register: m[3], rows: [], header: line });
			continue;
		}
		if (line === "REM") {
			out.push({ verb: "REM", rows: [], header: line });
			continue;
		}
		m = /^MV\s+(.+)$/.exec(line);
		if (m) {
			out.push({ verb: "MV", dest: m[1], rows: [], header: line });
			continue;
		}
		out.push({ verb: "PUT", rows: [], header: line });
	}
	return out;
}

/**
 * What an Edit's operations do, as a diff against the file's lines (`lines`: the file as it is now, undefined when it
 * cannot be read): replaced and cut lines in red with their numbers, new rows in green; a register paste, REM and
 * MV as a note line. Line numbers are those the model named (they refer to its tagged version).
 */
export function editOpsDiff(ops: string, lines: string[] | undefined): DiffView & { notes: string[] } {
	const out: string[] = [];
	const notes: string[] = [];
	let added = 0;
	let removed = 0;
	const width = String(Math.max(lines?.length ?? 0, 1) + 1).length;
	const num = (n: number) => String(n).padStart(width);
	for (const op of parseOps(ops)) {
		if (op.verb === "REM") {
			notes.push("deletes the file");
			removed += lines?.length ?? 0;
			continue;
		}
		if (op.verb === "MV") {
			notes.push(`moves the file to ${op.dest}`);
			continue;
		}
		if (!op.where) {
			notes.push(`unreadable operation: ${op.header}`);
			continue;
		}
		if (out.length > 0) out.push(` ${"".padStart(width)} ...`);
		let at: number;
		if (op.where.kind === "range") {
			for (let n = op.where.from; n <= op.where.to; n++) {
				const old = lines?.[n - 1];
				const missing = lines === undefined ? "(not shown: the file is not read after the call ran)" : "(not in the file as it is now)";
				out.push(`-${num(n)} ${old ?? missing}`);
				removed++;
			}
			at = op.where.from;
		} else {
			const end = lines?.length ?? 0;
			const anchor = op.where.at === "$" ? end : op.where.at;
			at = op.where.kind === "before" ? anchor : anchor + 1;
			const ctx = lines?.[anchor - 1];
			if (ctx !== undefined && op.where.kind === "after") out.push(` ${num(anchor)} ${ctx}`);
		}
		if (op.verb === "CUT") {
			if (op.register) notes.push(`keeps lines ${op.header.replace(/^CUT\s+/, "").replace(/\s*@.*$/, "")} in register ${op.register}`);
			continue;
		}
		if (op.register !== undefined) {
			out.push(`+${num(at)} (lines from register ${op.register === "@" ? "@ (this call's CUT)" : op.register})`);
			added++;
		} else {
			op.rows.forEach((r, i) => out.push(`+${num(at + i)} ${r}`));
			added += op.rows.length;
		}
		if (op.where.kind === "before") {
			const ctx = lines?.[(op.where.at === "$" ? lines.length : op.where.at) - 1];
			if (ctx !== undefined) out.push(` ${num(op.where.at === "$" ? lines!.length : op.where.at)} ${ctx}`);
		}
	}
	return { text: out.join("\n"), added, removed, notes };
}

/** One file of an apply_patch. */
export interface PatchFile {
	op: "add" | "update" | "delete";
	path: string;
	moveTo?: string;
	added: number;
	removed: number;
	/** The file's hunks in Pi's diff form (no line numbers: a patch locates by context). */
	text: string;
}

/** The files of a patch (docs/patch.md "Grammar") with their +/- counts and hunks, for display. */
export function patchFiles(patch: string): PatchFile[] {
	const files: PatchFile[] = [];
	let cur: PatchFile | undefined;
	const body: string[][] = [];
	for (const line of patch.replace(/\r\n/g, "\n").split("\n")) {
		const h = /^\*\*\* (Add|Update|Delete) File: (.+)$/.exec(line);
		if (h) {
			cur = { op: h[1].toLowerCase() as PatchFile["op"], path: h[2].trim(), added: 0, removed: 0, text: "" };
			files.push(cur);
			body.push([]);
			continue;
		}
		if (!cur) continue;
		const mv = /^\*\*\* Move to: (.+)$/.exec(line);
		if (mv) {
			cur.moveTo = mv[1].trim();
			continue;
		}
		if (line.startsWith("*** ")) continue;
		const rows = body[body.length - 1];
		if (line.startsWith("@@")) {
			if (rows.length > 0) rows.push("     ...");
			const where = line.slice(2).trim();
			if (where) rows.push(`  ${where}`);
		} else if (line.startsWith("+")) {
			cur.added++;
			rows.push(`+ ${line.slice(1)}`);
		} else if (line.startsWith("-")) {
			cur.removed++;
			rows.push(`- ${line.slice(1)}`);
		} else if (line.startsWith(" ") || line === "") {
			if (cur.op === "update" && line !== "") rows.push(`  ${line.slice(1)}`);
		}
	}
	files.forEach((f, i) => (f.text = body[i].join("\n")));
	return files;
}
