/**
 * The text of a host tool's permission card (docs/render.md "Permission cards"): exactly what will happen if the
 * person allows the call — the command of a Bash, the diff of an Edit, of a Write over an existing file (the new
 * file's lines otherwise), the path, and whether it is outside the workspace and why. Plain text (no colours): the
 * card is Pi's `ctx.ui.select` title, which RPC clients receive as a string. The decision itself (ask, allow, deny)
 * is the Rust permission table's (src/host/permission.rs); this only words the question.
 */
import type { HostPathInfo } from "../../../index.js";
import { splitLines } from "./diff.ts";
import { editView, writeView } from "./tools.ts";
import { shownLine } from "./safe.ts";

/** Lines of a diff or command a card shows before "… N more lines". */
export const CARD_LINES = 30;

const EXTERNAL: Record<string, string> = {
	"dotdot-escape": "a ../ path that leaves the workspace",
	"symlink-escape": "a symlink that points outside the workspace",
	"absolute-outside": "an absolute path outside the workspace",
};

/** Where the call acts: the path, and whether (and why) it is outside the workspace. */
export function whereText(info: HostPathInfo | null | undefined): string {
	if (!info) return "in the workspace";
	// A path is one line on the card, whatever it holds (docs/permissions.md "What reaches the terminal").
	info = { ...info, canonical: shownLine(info.canonical), path: shownLine(info.path) };
	if (info.root === "external") {
		const why = EXTERNAL[info.external ?? ""];
		return `${info.canonical} (outside the workspace: ${info.external ?? "external"}${why ? `, ${why}` : ""})`;
	}
	if (info.root === "scratch") return `${info.path} (this session's scratch directory)`;
	return info.path;
}

function capped(lines: string[], n = CARD_LINES): string[] {
	if (lines.length <= n) return lines;
	return [...lines.slice(0, n), `… ${lines.length - n} more lines (expand the call's row with ctrl+o to see them all)`];
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * The card for `tool` called with `params` (`info`: the resolved target, null when the call names none; `cwd`: the
 * workspace, where the file of an Edit or Write is read for the diff).
 */
export function cardText(tool: string, params: Record<string, unknown>, info: HostPathInfo | null | undefined, cwd: string): string {
	const where = whereText(info);
	const path = info ? (info.root === "external" ? info.canonical : info.path) : undefined;
	switch (tool) {
		case "Bash": {
			const cmd = str(params.command) ?? "";
			const mode = params.runInBackground === true ? " as a background task" : "";
			const lines = [`Allow Bash to run this command${mode}?`, ...capped(splitLines(cmd).map((l, i) => (i === 0 ? `$ ${l}` : `  ${l}`)))];
			lines.push(`in ${info ? where : `the workspace (${cwd})`}`);
			return lines.join("\n");
		}
		case "Write": {
			const v = writeView({ ...params, path: path ?? params.path ?? params.file_path }, cwd);
			const what = v.created ? `create ${where}` : `overwrite ${where}`;
			return [`Allow Write to ${what}? (+${v.added} -${v.removed})`, ...capped(v.text ? splitLines(v.text) : ["(no line changes)"])].join("\n");
		}
		case "Edit": {
			const v = editView({ ...params, path: path ?? params.path ?? params.file_path }, cwd);
			const body = v.text ? splitLines(v.text) : [];
			return [`Allow Edit to change ${where}? (+${v.added} -${v.removed})`, ...capped(body), ...v.notes.map((n) => `(${n})`)].join("\n");
		}
		case "TaskStop":
			return `Allow TaskStop to stop background task ${shownLine(str(params.backgroundTaskId) ?? "?")} and its processes?`;
		default: {
			const verb = tool === "Read" ? "read" : tool === "Glob" || tool === "Grep" ? "search" : "use";
			const pattern = str(params.pattern) ?? str(params.query);
			return `Allow ${tool} to ${verb} ${where}?${pattern ? `\npattern: ${shownLine(pattern)}` : ""}`;
		}
	}
}
