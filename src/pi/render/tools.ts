/**
 * `renderCall` / `renderResult` of every toolkit tool (docs/render.md), for both supported Pi versions. Each tool
 * definition spreads `renderersFor(name)` into itself; the execute paths are untouched. The rows behave like Pi's
 * own tools: Bash and exec_command show `$ command`, the tail of their output (live while running when the tool
 * streams updates) and an elapsed timer; Edit, Write and apply_patch show what they change — a preview under the
 * call until it returns, then the engine's landed diff in the result (collapsed: its first rows; expanded: all it
 * kept), a new file's first lines as Pi's write shows them; Read, Grep and Glob show the path, range and counts, never the `[path#TAG]`
 * rows the model reads; code cells show their program and their nested calls; every error is drawn as an error: a
 * sentence for the person, the stable code, and the model-facing message muted below.
 */
import type { Theme, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { getLanguageFromPath, highlightCode, renderDiff } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";
import { editOpsDiff, patchFiles, readForPreview, splitLines, writePreview, type DiffView, type ScreenDiff } from "./diff.ts";
import {
	COLLAPSED_LIST_LINES,
	errorView,
	expandHint,
	failureOf,
	head,
	moreLines,
	pathOf,
	pathText,
	resultText,
	tail,
	text,
	timer,
	title,
	type RenderContext,
} from "./format.ts";
import { shownDeep } from "./safe.ts";

type Args = Record<string, unknown>;
type Result = { content: { type: string; text?: string }[]; details?: unknown };
type Opts = { expanded: boolean; isPartial: boolean };

/** The three renderer fields a tool definition takes. */
export type Renderers = Pick<ToolDefinition, "renderCall" | "renderResult">;

interface Spec {
	call(args: Args, theme: Theme, ctx: RenderContext): string;
	/** The body under the call; undefined = nothing to add (Pi then shows the call line only). */
	result?(result: Result, opts: Opts, theme: Theme, ctx: RenderContext): string | undefined;
}

/** Wraps a spec into Pi's renderer signatures; any error result is drawn by `errorView` unless the spec handles it. */
function make(spec: Spec, handlesErrors = false): Renderers {
	return {
		renderCall: (args: unknown, theme: Theme, context: unknown): Component => {
			const ctx = context as RenderContext;
			// The model's arguments and the result are drawn only after every control in them is made visible
			// (docs/permissions.md "What reaches the terminal").
			return text(ctx, spec.call(shownDeep((args ?? {}) as Args), theme, ctx));
		},
		renderResult: (result: unknown, options: unknown, theme: Theme, context: unknown): Component => {
			const ctx = context as RenderContext;
			const r = shownDeep(result as Result);
			const o = options as Opts;
			const done = !o.isPartial;
			// A partial result (live output) takes the timer over from the call line.
			if (!done) ctx.state.hasPartial = true;
			const t = ctx.state.showTimer ? timer(ctx, done) : undefined;
			let body: string | undefined;
			if (ctx.isError && !handlesErrors) body = errorView(theme, r, o.expanded, ctx.toolCallId);
			else body = spec.result?.(r, o, theme, ctx);
			const parts = [body, t ? theme.fg("muted", t) : undefined].filter((p): p is string => !!p);
			return text(ctx, parts.length ? `\n${parts.join("\n\n")}` : "");
		},
	};
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const counts = (theme: Theme, d: { added: number; removed: number }) =>
	`${theme.fg("toolDiffAdded", `+${d.added}`)} ${theme.fg("toolDiffRemoved", `-${d.removed}`)}`;

/** Rows of a diff a row draws at most (the engine keeps as many; an apply_patch envelope is cut here). */
const DIFF_ROWS_DRAWN = 500;

/** Columns a diff row may take: the terminal's width less the row's indent, so no row wraps (pi-tui wraps a long
 * line slowly: 1,000 rows of 400 characters took seconds to draw at 120 columns). */
function rowWidth(indent: number): number {
	const cols = process.stdout.columns || 120;
	return Math.max(20, cols - indent - 2);
}

/** Rows cut to `width` characters (tabs as Pi draws them, three spaces), ending with `…` when cut. */
export function cutRows(rows: string[], width: number): string[] {
	return rows.map((r) => {
		const t = r.includes("\t") ? r.replace(/\t/g, "   ") : r;
		if (t.length <= width) return t;
		let end = width - 1;
		const c = t.charCodeAt(end - 1);
		if (c >= 0xd800 && c <= 0xdbff) end--;
		return `${t.slice(0, end)}…`;
	});
}

/** Pi's coloured diff of `rows` (cut to the screen), or the plain rows when the theme is not Pi's interactive one
 * (print mode, tests). Only the rows given are coloured: callers pass the ones they show. */
function coloured(rows: string[], theme: Theme, indent = 0): string[] {
	const cut = cutRows(rows, rowWidth(indent));
	const plain = () => cut.map((l) => theme.fg(l.startsWith("+") ? "toolDiffAdded" : l.startsWith("-") ? "toolDiffRemoved" : "toolDiffContext", l));
	// Pi's renderDiff marks the changed words of a one-line change (a word diff per pair): worth it on the rows a
	// collapsed view shows, too slow on hundreds of them, which get the same colours without the marks.
	if (cut.length > RICH_DIFF_ROWS) return plain();
	try {
		return renderDiff(cut.join("\n")).split("\n");
	} catch {
		return plain();
	}
}

/** Rows drawn with Pi's renderDiff (word marks); longer diffs are coloured by row only. */
const RICH_DIFF_ROWS = 40;
/** Lines of a new file highlighted by its language (highlighting costs about 2 ms a line); longer views are drawn
 * in the output colour. */
const HIGHLIGHT_LINES = 20;

/** A diff body: the rows expanded (at most DIFF_ROWS_DRAWN); collapsed, the first ones and "... (N more lines)". */
function diffBody(theme: Theme, diff: string, expanded: boolean): string {
	if (!diff) return "";
	const rows = diff.split("\n");
	const shown = rows.slice(0, expanded ? DIFF_ROWS_DRAWN : COLLAPSED_LIST_LINES);
	const out = coloured(shown, theme).join("\n");
	return shown.length < rows.length ? `${out}\n${moreLines(theme, rows.length - shown.length, "more")}` : out;
}

// ---- shells ---------------------------------------------------------------------------------------------------

/** Bash's notes on its streams: how much of a truncated stream is shown, and the file with the full output. */
function streamNotes(theme: Theme, d: Record<string, unknown>): string[] {
	const notes: string[] = [];
	for (const s of ["stdout", "stderr"] as const) {
		if (d[`${s}Truncated`] === true) notes.push(`${s}: last ${Math.round(((d[s] as string)?.length ?? 0) / 1024)} KiB of ${Math.round((num(d[`${s}Bytes`]) ?? 0) / 1024)} KiB shown`);
		const rec = d[`${s}Recovery`] as { path?: string } | undefined;
		if (rec?.path) notes.push(`full ${s}: ${rec.path}`);
	}
	return notes.length ? [theme.fg("warning", `[${notes.join(". ")}]`)] : [];
}

/** Output of a command: stdout then stderr, as a tail when collapsed. */
function streams(theme: Theme, stdout: string, stderr: string, expanded: boolean): string {
	// Each stream's own final newline is dropped, so stderr follows stdout without a blank row.
	const both = [stdout, stderr]
		.map((s) => s.replace(/\n$/, ""))
		.filter(Boolean)
		.join("\n");
	// One tail over both streams (stdout, then stderr), so a collapsed row ends with the command's last words.
	return both ? tail(theme, both, expanded) : "";
}

function shellCall(theme: Theme, cmd: unknown, extra: string[]): string {
	const c = cmd === undefined ? theme.fg("toolOutput", "...") : typeof cmd === "string" ? cmd : theme.fg("error", "[invalid arg]");
	const tail = extra.filter(Boolean).map((e) => theme.fg("muted", ` (${e})`)).join("");
	return theme.fg("toolTitle", theme.bold(`$ ${c}`)) + tail;
}

/** The elapsed line under the call while a command runs (no result yet) — Pi redraws the row every second. */
function running(theme: Theme, ctx: RenderContext): string {
	if (!ctx.executionStarted || !ctx.isPartial || ctx.state.hasPartial) return "";
	const t = timer(ctx, false);
	return t ? `\n${theme.fg("muted", t)}` : "";
}

const bash = make(
	{
		call(args, theme, ctx) {
			ctx.state.showTimer = true;
			const extra = [args.runInBackground === true ? "background" : "", num(args.timeout) ? `timeout ${args.timeout}s` : ""];
			return shellCall(theme, args.command, extra) + running(theme, ctx);
		},
		result(r, o, theme, ctx) {
			const raw = resultText(r);
			const d = (r.details ?? {}) as Record<string, unknown>;
			if (ctx.isError) {
				// The failure's fields (src/pi/failure.ts), never its text: the exit code or signal as a sentence, then the
				// streams' tail. A failure without streams (a refusal before the command ran) is the error view.
				const f = failureOf(r, ctx.toolCallId);
				if (!f || (str(f.details.stdout) === undefined && str(f.details.stderr) === undefined)) return errorView(theme, r, o.expanded, ctx.toolCallId);
				const exit = num(f.details.exitCode);
				const signal = str(f.details.signal);
				const sentence = f.code === "TOOL_FAILED" && exit !== undefined ? `Exited with code ${exit}.` : f.code === "TOOL_FAILED" && signal ? `Killed by ${signal}.` : f.sentence;
				const headLine = theme.fg("error", `${sentence} [${f.code}]`);
				const body = streams(theme, str(f.details.stdout) ?? "", str(f.details.stderr) ?? "", o.expanded);
				return [headLine, body || theme.fg("muted", "(no output)"), ...streamNotes(theme, f.details)].join("\n");
			}
			if (typeof d.backgroundTaskId === "string") return theme.fg("muted", `Started background task ${d.backgroundTaskId}`);
			if (o.isPartial) return streams(theme, str(d.stdout) ?? raw, str(d.stderr) ?? "", o.expanded);
			const body = streams(theme, str(d.stdout) ?? "", str(d.stderr) ?? "", o.expanded);
			return [body || theme.fg("muted", "(no output)"), ...streamNotes(theme, d)].join("\n");
		},
	},
	true,
);

const execCommand = make({
	call(args, theme, ctx) {
		ctx.state.showTimer = true;
		const wd = str(args.workdir) ?? str(args.cwd);
		return shellCall(theme, args.cmd ?? args.command, [wd ? `in ${wd}` : ""]) + running(theme, ctx);
	},
	result(r, o, theme) {
		const d = (r.details ?? {}) as Record<string, unknown>;
		if (o.isPartial) return streams(theme, str(d.stdout) ?? resultText(r), str(d.stderr) ?? "", o.expanded) || theme.fg("muted", "(no output yet)");
		const body = streams(theme, str(d.stdout) ?? (d.status ? "" : resultText(r)), str(d.stderr) ?? "", o.expanded);
		const status = str(d.status);
		const id = str(d.session_id) ?? str(d.sessionId);
		const code = num(d.exit_code) ?? num(d.exitCode);
		const line =
			status === "running"
				? theme.fg("warning", `still running as ${id ?? "a session"} (continue with write_stdin)`)
				: status === "completed" && code !== undefined && code !== 0
					? theme.fg("error", `Exited with code ${code}.`)
					: status === "terminated"
						? theme.fg("warning", `Terminated${str(d.signal) ? ` by ${d.signal}` : ""}.`)
						: "";
		return [body, line].filter(Boolean).join("\n") || theme.fg("muted", "(no output)");
	},
});

const writeStdin = make({
	call(args, theme, ctx) {
		ctx.state.showTimer = true;
		const id = str(args.session_id) ?? str(args.sessionId) ?? String(args.session_id ?? args.sessionId ?? "...");
		const chars = str(args.chars) ?? str(args.input) ?? "";
		const what = args.terminate === true ? "terminate" : args.closeStdin === true ? "close stdin" : chars ? `send ${JSON.stringify(chars.length > 60 ? `${chars.slice(0, 57)}...` : chars)}` : "poll";
		return `${title(theme, "write_stdin")} ${theme.fg("accent", id)} ${theme.fg("muted", what)}` + running(theme, ctx);
	},
	result: (r, o, theme) => shellResult(r, o, theme),
});

function shellResult(r: Result, o: Opts, theme: Theme): string {
	const d = (r.details ?? {}) as Record<string, unknown>;
	if (o.isPartial) return streams(theme, str(d.stdout) ?? resultText(r), str(d.stderr) ?? "", o.expanded) || theme.fg("muted", "(no new output yet)");
	const body = streams(theme, str(d.stdout) ?? "", str(d.stderr) ?? "", o.expanded);
	const status = str(d.status);
	const code = num(d.exit_code) ?? num(d.exitCode);
	const line = status === "running" ? theme.fg("warning", "still running") : code !== undefined && code !== 0 ? theme.fg("error", `Exited with code ${code}.`) : "";
	return [body, line].filter(Boolean).join("\n") || theme.fg("muted", "(no new output)");
}

// ---- host reads ---------------------------------------------------------------------------------------------

/** `N:text` / `N-text` rows without the `[path#TAG]` headers, the number muted. */
function rows(theme: Theme, raw: string): string[] {
	const out: string[] = [];
	for (const line of raw.split("\n")) {
		if (/^\[[^\]]*#[^\]]*\]$/.test(line)) continue;
		const m = /^(\d+)([:-])(.*)$/.exec(line);
		out.push(m ? `${theme.fg("muted", m[1].padStart(4))} ${theme.fg(m[2] === ":" ? "toolOutput" : "dim", m[3].replace(/\t/g, "   "))}` : theme.fg("muted", line));
	}
	while (out.length && out[out.length - 1] === theme.fg("muted", "")) out.pop();
	return out;
}

const read = make({
	call(args, theme) {
		const off = num(args.offset);
		const lim = num(args.limit);
		const range = off !== undefined || lim !== undefined ? theme.fg("warning", `:${off ?? 1}${lim !== undefined ? `-${(off ?? 1) + lim - 1}` : ""}`) : "";
		return `${title(theme, "Read")} ${pathText(theme, pathOf(args))}${range}`;
	},
	result(r, o, theme) {
		const d = (r.details ?? {}) as Record<string, unknown>;
		const n = num(d.lineCount) ?? 0;
		const start = num(d.offset) ?? 1;
		const total = num(d.totalLines);
		const summary = theme.fg("muted", n === 0 ? "no lines" : `lines ${start}-${start + n - 1}${total !== undefined ? ` of ${total}` : ""}${d.truncated ? " (more below: call again with an offset)" : ""}`);
		return o.expanded ? `${summary}\n${rows(theme, resultText(r)).join("\n")}` : summary;
	},
});

const glob = make({
	call(args, theme) {
		const pattern = args.pattern ?? args.query;
		return `${title(theme, "Glob")} ${typeof pattern === "string" ? theme.fg("accent", pattern) : theme.fg("toolOutput", "...")}${theme.fg("muted", ` in ${str(args.path) ?? "."}`)}`;
	},
	result(r, o, theme) {
		const d = (r.details ?? {}) as { files?: string[]; truncated?: boolean };
		const files = d.files ?? [];
		const summary = theme.fg("muted", `${plural(files.length, "file")}${d.truncated ? " (limit reached)" : ""}`);
		return files.length ? `${summary}\n${head(theme, files.map((f) => theme.fg("toolOutput", f)), o.expanded)}` : summary;
	},
});

const grep = make({
	call(args, theme) {
		const pattern = args.pattern ?? args.query;
		const flags = [str(args.glob) ? `glob ${args.glob}` : "", args.ignoreCase === true ? "ignore case" : "", args.literal === true ? "literal" : ""].filter(Boolean);
		return (
			`${title(theme, "Grep")} ${typeof pattern === "string" ? theme.fg("accent", `/${pattern}/`) : theme.fg("toolOutput", "...")}` +
			theme.fg("muted", ` in ${str(args.path) ?? "."}${flags.length ? ` (${flags.join(", ")})` : ""}`)
		);
	},
	result(r, o, theme) {
		const d = (r.details ?? {}) as { mode?: string; matches?: { path: string; line: number; text: string }[]; files?: string[]; counts?: { path: string; count: number }[]; truncated?: boolean };
		const files = d.files ?? [];
		const more = d.truncated ? " (limit reached)" : "";
		if (d.mode === "count") {
			const total = (d.counts ?? []).reduce((s, c) => s + c.count, 0);
			const lines = (d.counts ?? []).map((c) => `${theme.fg("accent", c.path)} ${theme.fg("muted", String(c.count))}`);
			return `${theme.fg("muted", `${plural(total, "match", "matches")} in ${plural(lines.length, "file")}${more}`)}${lines.length ? `\n${head(theme, lines, o.expanded)}` : ""}`;
		}
		if (d.mode === "filesWithMatches") {
			return `${theme.fg("muted", `${plural(files.length, "file")} with matches${more}`)}${files.length ? `\n${head(theme, files.map((f) => theme.fg("accent", f)), o.expanded)}` : ""}`;
		}
		const matches = d.matches ?? [];
		const summary = theme.fg("muted", `${plural(matches.length, "match", "matches")} in ${plural(files.length, "file")}${more}`);
		const lines = matches.map((m) => `${theme.fg("accent", m.path)}${theme.fg("muted", `:${m.line}`)} ${theme.fg("toolOutput", m.text.replace(/\t/g, "   "))}`);
		return lines.length ? `${summary}\n${head(theme, lines, o.expanded)}` : summary;
	},
});

// ---- host writes and apply_patch --------------------------------------------------------------------------

type View = DiffView & { notes?: string[]; created?: boolean };
type PreviewState = { preview?: View; previewKey?: string; previewPending?: boolean };

/**
 * The preview of a call that changes a file, asked for once, when the call is first drawn with its arguments complete
 * and before it runs (the file on disk is then the one the call will change). It is made off Pi's main thread (the
 * engine's bounded diff, an async file read) and the row is redrawn when it is ready, as Pi's own edit does. A row
 * first drawn after the call ran (a resumed session) asks for none: its result carries the change.
 */
function preview(ctx: RenderContext, key: string, make: () => Promise<View>): View | undefined {
	const st = ctx.state as PreviewState;
	if (st.previewKey === key) return st.preview;
	if (!ctx.argsComplete || (ctx.executionStarted && st.previewKey === undefined)) return undefined;
	st.previewKey = key;
	st.preview = undefined;
	st.previewPending = true;
	make().then(
		(v) => {
			if (st.previewKey !== key) return;
			st.preview = v;
			st.previewPending = false;
			ctx.invalidate();
		},
		() => {
			st.previewPending = false;
		},
	);
	return undefined;
}

/** A cheap identity of a call's arguments (the content is not serialised on every redraw). */
function argsKey(args: Args): string {
	const content = str(args.content);
	return `${str(pathOf(args)) ?? ""}\0${content === undefined ? "" : `${content.length}:${content.slice(0, 64)}:${content.slice(-64)}`}\0${str(args.ops) ?? ""}`;
}

/** The note under a view that has no rows or dropped some: the engine's summary, or the rows not kept. */
function viewNotes(theme: Theme, v: DiffView): string[] {
	const out: string[] = [];
	if (v.summary) out.push(theme.fg("warning", v.summary));
	if (v.omittedRows) out.push(theme.fg("muted", `... (${v.omittedRows} more diff lines not kept; /pct review show has the whole change)`));
	return out;
}

/** `+a -r` (`≤+a ≤-r` when the engine's diff could only bound them). */
function viewCounts(theme: Theme, v: DiffView): string {
	const c = counts(theme, v);
	return v.exact === false ? `${theme.fg("muted", "≤")}${c}` : c;
}

/** A diff view as a row body: its rows (the first ones collapsed), then its notes. */
function viewBody(theme: Theme, v: DiffView, expanded: boolean): string {
	return [diffBody(theme, v.text, expanded), ...(expanded || !v.text ? viewNotes(theme, v) : [])].filter(Boolean).join("\n");
}

/** A new file's first lines, as Pi's write shows them: highlighted by the file's language, without row numbers. */
function newFileBody(theme: Theme, v: DiffView, path: string | undefined, expanded: boolean): string {
	const rows = v.text ? v.text.split("\n").map((r) => r.replace(/^\+\s*\d+ /, "")) : [];
	if (!rows.length) return "";
	const shown = cutRows(rows.slice(0, expanded ? DIFF_ROWS_DRAWN : COLLAPSED_LIST_LINES), rowWidth(0));
	let lines: string[];
	const lang = path ? getLanguageFromPath(path) : undefined;
	try {
		lines = lang && shown.length <= HIGHLIGHT_LINES ? highlightCode(shown.join("\n"), lang) : shown.map((l) => theme.fg("toolOutput", l));
	} catch {
		lines = shown.map((l) => theme.fg("toolOutput", l));
	}
	const total = v.added;
	const more = total - shown.length;
	const tailNote = more > 0 && !expanded ? [`${theme.fg("muted", `... (${more} more lines, ${total} total,`)} ${expandHint(theme)}${theme.fg("muted", ")")}`] : [];
	return [...lines, ...tailNote, ...(expanded ? viewNotes(theme, v) : [])].join("\n");
}

/** Write's preview: the engine's diff against the file on disk, or the new file's lines. */
export function writeView(args: Args, cwd: string): Promise<View> {
	return writePreview(str(pathOf(args)) ?? "", cwd, str(args.content) ?? "");
}

/** Edit's preview: its operations against the file's lines as they are now (read without blocking). */
export async function editView(args: Args, cwd: string): Promise<View & { notes: string[] }> {
	const path = str(pathOf(args));
	const before = path ? await readForPreview(path, cwd) : undefined;
	return editOpsDiff(str(args.ops) ?? "", before === undefined ? undefined : splitLines(before));
}

/** The engine's view of a landed change, from a result's details. */
function landedView(d: unknown): DiffView | undefined {
	const v = (d as { diff?: ScreenDiff | null } | undefined)?.diff;
	return v && typeof v.text === "string" ? v : undefined;
}

/** The header of a Write or Edit row and, while the call has not returned, its preview under it. */
function changeCall(name: "Write" | "Edit", args: Args, theme: Theme, ctx: RenderContext, make: () => Promise<View>): string {
	const v = preview(ctx, argsKey(args), make);
	const landed = ctx.state.landed as DiffView | undefined;
	const c = landed ?? v;
	// A refused or failed call changed nothing: its header promises no counts (docs/render.md).
	const headLine = `${title(theme, name)} ${pathText(theme, pathOf(args))}${c && !ctx.isError ? ` ${viewCounts(theme, c)}` : ""}`;
	// Once the call returned, its result shows what changed.
	if (!v || !ctx.isPartial || landed) return headLine;
	const body = v.created ? newFileBody(theme, v, str(pathOf(args)), ctx.expanded) : viewBody(theme, v, ctx.expanded);
	const notes = (v.notes ?? []).map((n) => theme.fg("warning", n));
	const parts = [body, ...notes].filter(Boolean);
	return parts.length ? `${headLine}\n\n${parts.join("\n")}` : headLine;
}

/** Keeps a landed view for the call line's counts, redrawing the row the first time. The redraw waits for the
 * current one to finish: Pi builds a row's call and result in one pass, and a redraw from inside it would add the
 * result twice. */
function noteLanded(ctx: RenderContext, v: DiffView | undefined): void {
	if (v && !ctx.state.landed) {
		ctx.state.landed = v;
		queueMicrotask(() => ctx.invalidate());
	}
}

const write = make({
	call(args, theme, ctx) {
		return changeCall("Write", args, theme, ctx, () => writeView(args, ctx.cwd));
	},
	result(r, o, theme, ctx) {
		const d = (r.details ?? {}) as { created?: boolean; lines?: number; stripped?: string[] };
		const v = landedView(d);
		noteLanded(ctx, v);
		const stripped = d.stripped?.length ? theme.fg("warning", `(removed from the content: ${d.stripped.join(", ")})`) : "";
		let body: string;
		if (!v) body = theme.fg("muted", `${d.created ? "created" : "written"}, ${plural(d.lines ?? 0, "line")}`);
		else if (d.created) body = newFileBody(theme, v, str(pathOf(ctx.args)), o.expanded) || theme.fg("muted", "created, empty");
		else body = viewBody(theme, v, o.expanded) || theme.fg("muted", `written, no line changes (${plural(d.lines ?? 0, "line")})`);
		return [body, stripped].filter(Boolean).join("\n");
	},
});

const edit = make({
	call(args, theme, ctx) {
		return changeCall("Edit", args, theme, ctx, () => editView(args, ctx.cwd));
	},
	result(r, o, theme, ctx) {
		const d = (r.details ?? {}) as { added?: number; removed?: number; warnings?: string[]; movedFrom?: string; deleted?: boolean; path?: string };
		const v = landedView(d) ?? (typeof d.added === "number" && typeof d.removed === "number" ? { text: "", added: d.added, removed: d.removed } : undefined);
		noteLanded(ctx, v);
		const parts: string[] = [];
		if (d.deleted) parts.push(theme.fg("muted", `file deleted (${plural(d.removed ?? 0, "line")})`));
		if (d.movedFrom) parts.push(theme.fg("muted", `moved from ${d.movedFrom} to ${d.path}`));
		if (v && !d.deleted) parts.push(viewBody(theme, v, o.expanded));
		for (const w of d.warnings ?? []) parts.push(theme.fg("warning", w));
		return parts.filter(Boolean).join("\n") || undefined;
	},
});

const letter = { add: "A", update: "M", delete: "D", move: "R" } as const;

/** Rows a collapsed apply_patch result shows, across its files (each file's own line always shows). */
const PATCH_COLLAPSED_ROWS = 12;

const applyPatch = make({
	call(args, theme, ctx) {
		const files = patchFiles(str(args.patch) ?? "");
		const added = files.reduce((s, f) => s + f.added, 0);
		const removed = files.reduce((s, f) => s + f.removed, 0);
		// A refused or failed call changed nothing: its header promises no counts (docs/render.md).
		const headLine = `${title(theme, "apply_patch")}${files.length ? ` ${theme.fg("muted", plural(files.length, "file"))}${ctx.isError ? "" : ` ${counts(theme, { added, removed })}`}` : ""}`;
		// Once the call returned, its result lists the files with what changed in each.
		if (!ctx.isPartial && !ctx.isError) return headLine;
		const lines: string[] = [headLine];
		for (const f of files) {
			const name = f.moveTo ? `${f.path} → ${f.moveTo}` : f.path;
			lines.push(`  ${theme.fg("warning", letter[f.op])} ${theme.fg("accent", name)}${ctx.isError ? "" : ` ${counts(theme, f)}`}`);
			if (ctx.expanded && f.text) lines.push(diffBody(theme, f.text, true).split("\n").map((l) => `    ${l}`).join("\n"));
		}
		return lines.join("\n");
	},
	result(r, o, theme) {
		const ops = ((r.details ?? {}) as { operations?: { operation: keyof typeof letter; path: string; from?: string | null; diff?: ScreenDiff | null }[] }).operations;
		if (!Array.isArray(ops) || ops.length === 0) return theme.fg("muted", "applied");
		let budget = o.expanded ? Infinity : PATCH_COLLAPSED_ROWS;
		let hidden = 0;
		const lines: string[] = [];
		for (const op of ops) {
			const name = op.from ? `${op.from} → ${op.path}` : op.path;
			const v = op.diff ?? undefined;
			lines.push(`${theme.fg("warning", letter[op.operation] ?? "?")} ${theme.fg("accent", name)}${v ? ` ${viewCounts(theme, v)}` : op.operation === "delete" ? theme.fg("muted", " deleted") : ""}`);
			if (!v) continue;
			const rows = v.text ? v.text.split("\n") : [];
			const shown = rows.slice(0, Math.max(0, Math.min(budget, DIFF_ROWS_DRAWN)));
			budget -= shown.length;
			hidden += rows.length - shown.length;
			lines.push(...coloured(shown, theme, 2).map((l) => `  ${l}`));
			if (o.expanded || !v.text) lines.push(...viewNotes(theme, v).map((l) => `  ${l}`));
		}
		if (hidden > 0) lines.push(moreLines(theme, hidden, "more"));
		return lines.join("\n");
	},
});

// ---- code cells ----------------------------------------------------------------------------------------------

interface Nested {
	tool: string;
	cellId: string;
	sessionId?: string;
	state: "running" | "waiting for approval" | "ok" | "failed";
	code?: string;
}

/** Progress records (src/pi/tools/code.ts passes them as partial results) folded into the row's list of nested calls. */
function noteProgress(ctx: RenderContext, r: Result): Nested[] {
	const st = ctx.state as { nested?: Nested[]; seen?: WeakSet<object> };
	st.nested ??= [];
	st.seen ??= new WeakSet();
	const rec = (r.details as { progress?: { event: string; tool: string; cellId: string; sessionId?: string; ok?: boolean; code?: string } } | undefined)?.progress;
	if (rec && !st.seen.has(rec)) {
		st.seen.add(rec);
		const open = [...st.nested].reverse().find((n) => n.tool === rec.tool && (n.state === "running" || n.state === "waiting for approval"));
		if (rec.event === "start" || !open) st.nested.push({ tool: rec.tool, cellId: rec.cellId, sessionId: rec.sessionId, state: "running" });
		const cur = rec.event === "start" ? st.nested[st.nested.length - 1] : (open ?? st.nested[st.nested.length - 1]);
		if (rec.event === "waiting-approval") cur.state = "waiting for approval";
		if (rec.event === "end") {
			cur.state = rec.ok ? "ok" : "failed";
			cur.code = rec.code;
		}
	}
	return st.nested;
}

function nestedLines(theme: Theme, nested: Nested[]): string {
	return nested
		.map((n) => {
			const colour = n.state === "failed" ? "error" : n.state === "ok" ? "success" : "warning";
			return `  ${theme.fg("muted", "↳")} ${theme.fg("toolTitle", n.tool)}${n.sessionId ? theme.fg("muted", ` ${n.sessionId}`) : ""} ${theme.fg(colour, n.state + (n.code ? ` (${n.code})` : ""))}`;
		})
		.join("\n");
}

function program(theme: Theme, code: string, expanded: boolean): string {
	let lines: string[];
	try {
		lines = highlightCode(code.replace(/\t/g, "   "), "javascript");
	} catch {
		lines = code.split("\n").map((l) => theme.fg("toolOutput", l));
	}
	return head(theme, lines, expanded, COLLAPSED_LIST_LINES);
}

function cellResult(r: Result, o: Opts, theme: Theme, ctx: RenderContext): string | undefined {
	const nested = noteProgress(ctx, r);
	const parts: string[] = [];
	if (nested.length) parts.push(nestedLines(theme, nested));
	if (!o.isPartial) {
		const out = resultText(r);
		if (out) parts.push(tail(theme, out, o.expanded, COLLAPSED_LIST_LINES));
	}
	return parts.join("\n") || undefined;
}

const exec = make({
	call(args, theme, ctx) {
		ctx.state.showTimer = true;
		const code = str(args.code);
		const uses = Array.isArray(args.uses) ? theme.fg("muted", ` uses ${args.uses.length ? args.uses.join(", ") : "none"}`) : "";
		const headLine = `${title(theme, "exec")}${uses}` + running(theme, ctx);
		return code ? `${headLine}\n${program(theme, code, ctx.expanded)}` : headLine;
	},
	result: cellResult,
});

const wait = make({
	call(args, theme, ctx) {
		ctx.state.showTimer = true;
		const id = args.cell_id ?? args.cellId;
		return `${title(theme, "wait")} ${theme.fg("accent", typeof id === "string" ? id : String(id ?? "..."))}${args.terminate === true ? theme.fg("warning", " terminate") : ""}` + running(theme, ctx);
	},
	result: cellResult,
});

// ---- the rest: a title line, the argument that matters, the result's tail ----------------------------------

function simple(name: string, arg?: (a: Args) => string | undefined): Renderers {
	return make({
		call(args, theme) {
			const a = arg?.(args);
			return `${title(theme, name)}${a ? ` ${theme.fg("accent", a)}` : ""}`;
		},
		result(r, o, theme) {
			return tail(theme, resultText(r), o.expanded, PREVIEW_TAIL);
		},
	});
}
const PREVIEW_TAIL = 5;

const TABLE: Record<string, Renderers> = {
	Bash: bash,
	exec_command: execCommand,
	write_stdin: writeStdin,
	Read: read,
	Glob: glob,
	Grep: grep,
	Write: write,
	Edit: edit,
	apply_patch: applyPatch,
	exec,
	wait,
	TaskList: simple("TaskList"),
	TaskWait: simple("TaskWait", (a) => str(a.backgroundTaskId)),
	TaskStop: simple("TaskStop", (a) => str(a.backgroundTaskId)),
	find_tools: simple("find_tools", (a) => str(a.query)),
};

/** The renderers of a toolkit tool; any other name gets the generic row (title, main argument, tail, error view). */
export function renderersFor(name: string): Renderers {
	return TABLE[name] ?? simple(name, (a) => str(a.query) ?? str(a.prompt) ?? str(a.app));
}
