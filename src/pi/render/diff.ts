/**
 * Diffs for the screen only (docs/render.md "Diffs"): what an Edit, a Write or an apply_patch will change or has
 * changed, in the text form Pi's own `renderDiff` colours (`+12 text`, `-12 text`, ` 12 text`, `     ...`).
 * Nothing here decides what lands: the Rust engine applies the call. Line diffs are never computed here: they come
 * from the engine (src/diffview), off Node's main thread and bounded by a deadline, with the tool result (its
 * `details.diff`) or, before a call runs, from `native.writePreview`. An Edit's preview is drawn from its operations
 * (no diff needed), on a file read without blocking the main thread.
 */
import { readFile, stat } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import type { ScreenDiff } from "../../../index.js";
import { native } from "../native.ts";

/** A drawn diff: Pi's diff text and its counts; the engine's extra fields when it made the view. */
export interface DiffView {
	/** Lines in Pi's `renderDiff` form; "" when there is nothing to show. */
	text: string;
	added: number;
	removed: number;
	/** False when the engine's diff hit its deadline or a side was too large: no rows, counts are upper bounds. */
	exact?: boolean;
	/** Rows of the diff not kept in `text`. */
	omittedRows?: number;
	/** Why there are no rows (deadline, size, binary). */
	summary?: string | null;
}

export type { ScreenDiff };

/** Files larger than this are not read for a preview (the view then names the ranges only). */
export const PREVIEW_FILE_CAP = 2 * 1024 * 1024;
/** Unchanged lines kept around each change. */
export const CONTEXT_LINES = 3;

/** The absolute form of `path` (relative to `cwd`). */
export function absolute(path: string, cwd: string): string {
	return isAbsolute(path) ? path : resolve(cwd, path);
}

/** The text of `path` (relative to `cwd`), or undefined when it is missing, not a regular file or too large; read
 * without blocking Pi's main thread. */
export async function readForPreview(path: string, cwd: string): Promise<string | undefined> {
	try {
		const abs = absolute(path, cwd);
		const st = await stat(abs);
		if (!st.isFile() || st.size > PREVIEW_FILE_CAP) return undefined;
		return await readFile(abs, "utf8");
	} catch {
		return undefined;
	}
}

/** A Write's view before it runs: the engine diffs the file on disk against `content` (or lists the new lines). */
export async function writePreview(path: string, cwd: string, content: string): Promise<DiffView & { created: boolean }> {
	const p = await native.writePreview(absolute(path, cwd), content);
	return { ...p.diff, created: p.created };
}

/** Lines of a text, without the empty piece after a final newline. */
export function splitLines(text: string): string[] {
	const lines = text.replace(/\r\n/g, "\n").split("\n");
	if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
	return lines;
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
