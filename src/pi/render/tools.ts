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
	timer,
	title,
	type RenderContext,
} from "./format.ts";
import { joinParts, rowView, type Part, type RowsPart } from "./rows.ts";
import { shownDeep } from "./safe.ts";

type Args = Record<string, unknown>;
type Result = { content: { type: string; text?: string }[]; details?: unknown };
type Opts = { expanded: boolean; isPartial: boolean };

/** The three renderer fields a tool definition takes. */
export type Renderers = Pick<ToolDefinition, "renderCall" | "renderResult">;

/** What a renderer draws: one text pi-tui wraps, or parts (src/pi/render/rows.ts). */
type Body = string | Part[];

interface Spec {
	call(args: Args, theme: Theme, ctx: RenderContext): Body;
	/** The body under the call; undefined = nothing to add (Pi then shows the call line only). */
	result?(result: Result, opts: Opts, theme: Theme, ctx: RenderContext): Body | undefined;
}

/** Wraps a spec into Pi's renderer signatures; any error result is drawn by `errorView` unless the spec handles it. */
function make(spec: Spec, handlesErrors = false): Renderers {
	return {
		renderCall: (args: unknown, theme: Theme, context: unknown): Component => {
			const ctx = context as RenderContext;
			// The model's arguments and the result are drawn only after every control in them is made visible
			// (docs/permissions.md "What reaches the terminal").
			return rowView(ctx, joinParts([spec.call(shownDeep((args ?? {}) as Args), theme, ctx)]));
		},
		renderResult: (result: unknown, options: unknown, theme: Theme, context: unknown): Component => {
			const ctx = context as RenderContext;
			const r = shownDeep(result as Result);
			const o = options as Opts;
			const done = !o.isPartial;
			// A partial result (live output) takes the timer over from the call line.
			if (!done) ctx.state.hasPartial = true;
			const t = ctx.state.showTimer ? timer(ctx, done) : undefined;
			let body: Body | undefined;
			if (ctx.isError && !handlesErrors) body = errorView(theme, r, o.expanded, ctx.toolCallId);
			else body = spec.result?.(r, o, theme, ctx);
			// The timer is a part of its own: its change every second leaves the body's lines as they were.
			const parts = joinParts([body, t ? theme.fg("muted", t) : undefined]);
			return rowView(ctx, parts.length ? ["", ...parts] : []);
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

/** Rows drawn with Pi's renderDiff (word marks); longer diffs are coloured by row only. */
const RICH_DIFF_ROWS = 40;
/** Lines of a new file highlighted by its language (highlighting costs about 2 ms a line); longer views are drawn
 * in the output colour. */
const HIGHLIGHT_LINES = 20;

/** Pi's coloured diff of rows already cut to the screen, or the plain rows when the theme is not Pi's interactive
 * one (print mode, tests). Pi's renderDiff marks the changed words of a one-line change (a word diff per pair): worth
 * it on the rows a collapsed view shows, too slow on hundreds of them, which get the same colours without the marks. */
function colourDiff(cut: string[], theme: Theme): string[] {
	const plain = () => cut.map((l) => theme.fg(l.startsWith("+") ? "toolDiffAdded" : l.startsWith("-") ? "toolDiffRemoved" : "toolDiffContext", l));
	if (cut.length > RICH_DIFF_ROWS) return plain();
	try {
		const out = renderDiff(cut.join("\n")).split("\n");
		return out.length === cut.length ? out : plain();
	} catch {
		return plain();
	}
}

/** Diff rows as a block of the row body: cut to the width it is drawn at, then coloured. */
function diffRows(theme: Theme, rows: string[], key: string, indent = 0): RowsPart {
	return {
		key: `diff\0${indent}\0${key}`,
		rows,
		keep: "head",
		indent,
		style: (cut) => colourDiff(cut, theme),
		notDrawn: (n) => theme.fg("muted", `... (${n} more diff lines not drawn: too many wide characters to draw at once; /pct review show has the whole change)`),
	};
}

/** A diff body: the rows expanded (at most DIFF_ROWS_DRAWN); collapsed, the first ones and "... (N more lines)". */
function diffBody(theme: Theme, diff: string, expanded: boolean, indent = 0): Part[] {
	if (!diff) return [];
	const rows = diff.split("\n");
	const shown = rows.slice(0, expanded ? DIFF_ROWS_DRAWN : COLLAPSED_LIST_LINES);
	const parts: Part[] = [diffRows(theme, shown, `${shown.length}\0${diff}`, indent)];
	if (shown.length < rows.length) parts.push(" ".repeat(indent) + moreLines(theme, rows.length - shown.length, "more"));
	return parts;
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
function streams(theme: Theme, stdout: string, stderr: string, expanded: boolean): Part[] {
	// Each stream's own final newline is dropped, so stderr follows stdout without a blank row.
	const both = [stdout, stderr]
		.map((s) => s.replace(/\n$/, ""))
		.filter(Boolean)
		.join("\n");
	// One tail over both streams (stdout, then stderr), so a collapsed row ends with the command's last words.
	return both ? tail(theme, both, expanded) : [];
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
				return [headLine, ...(body.length ? body : [theme.fg("muted", "(no output)")]), ...streamNotes(theme, f.details)];
			}
			if (typeof d.backgroundTaskId === "string") return theme.fg("muted", `Started background task ${d.backgroundTaskId}`);
			if (o.isPartial) return streams(theme, str(d.stdout) ?? raw, str(d.stderr) ?? "", o.expanded);
			const body = streams(theme, str(d.stdout) ?? "", str(d.stderr) ?? "", o.expanded);
			return [...(body.length ? body : [theme.fg("muted", "(no output)")]), ...streamNotes(theme, d)];
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
		if (o.isPartial) return orNone(streams(theme, str(d.stdout) ?? resultText(r), str(d.stderr) ?? "", o.expanded), theme.fg("muted", "(no output yet)"));
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
		return orNone([...body, ...(line ? [line] : [])], theme.fg("muted", "(no output)"));
	},
});

/** `parts`, or `none` when there are none. */
const orNone = (parts: Part[], none: string): Part[] => (parts.length ? parts : [none]);

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

function shellResult(r: Result, o: Opts, theme: Theme): Part[] {
	const d = (r.details ?? {}) as Record<string, unknown>;
	if (o.isPartial) return orNone(streams(theme, str(d.stdout) ?? resultText(r), str(d.stderr) ?? "", o.expanded), theme.fg("muted", "(no new output yet)"));
	const body = streams(theme, str(d.stdout) ?? "", str(d.stderr) ?? "", o.expanded);
	const status = str(d.status);
	const code = num(d.exit_code) ?? num(d.exitCode);
	const line = status === "running" ? theme.fg("warning", "still running") : code !== undefined && code !== 0 ? theme.fg("error", `Exited with code ${code}.`) : "";
	return orNone([...body, ...(line ? [line] : [])], theme.fg("muted", "(no new output)"));
}

// ---- host reads ---------------------------------------------------------------------------------------------

/** `N:text` / `N-text` rows without the `[path#TAG]` headers, as one row each (`N text`), and how to colour them
 * once cut (the number muted, a context row dim). */
function readRows(theme: Theme, raw: string): { rows: string[]; style(cut: string[], from: number): string[] } {
	const rows: string[] = [];
	const kinds: string[] = [];
	for (const line of raw.split("\n")) {
		if (/^\[[^\]]*#[^\]]*\]$/.test(line)) continue;
		const m = /^(\d+)([:-])(.*)$/.exec(line);
		rows.push(m ? `${m[1].padStart(4)} ${m[3]}` : line);
		kinds.push(m ? m[2] : "");
	}
	while (rows.length && rows[rows.length - 1] === "" && kinds[rows.length - 1] === "") {
		rows.pop();
		kinds.pop();
	}
	const style = (cut: string[], from: number) =>
		cut.map((r, i) => {
			const k = kinds[from + i];
			if (!k) return theme.fg("muted", r);
			const sp = r.indexOf(" ", r.search(/\d/));
			return sp < 0 ? theme.fg("muted", r) : `${theme.fg("muted", r.slice(0, sp))} ${theme.fg(k === ":" ? "toolOutput" : "dim", r.slice(sp + 1))}`;
		});
	return { rows, style };
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
		if (!o.expanded) return summary;
		const raw = resultText(r);
		const v = readRows(theme, raw);
		return [summary, ...head(theme, raw, v.rows, true, v.style)];
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
		return files.length ? [summary, ...head(theme, files.join("\n"), files, o.expanded, (cut) => cut.map((f) => theme.fg("toolOutput", f)))] : summary;
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
			const counted = d.counts ?? [];
			const lines = counted.map((c) => `${c.path} ${c.count}`);
			const style = (cut: string[], from: number) => cut.map((l, i) => (l === lines[from + i] ? `${theme.fg("accent", counted[from + i].path)} ${theme.fg("muted", String(counted[from + i].count))}` : theme.fg("accent", l)));
			const summary = theme.fg("muted", `${plural(total, "match", "matches")} in ${plural(lines.length, "file")}${more}`);
			return lines.length ? [summary, ...head(theme, lines.join("\n"), lines, o.expanded, style)] : summary;
		}
		if (d.mode === "filesWithMatches") {
			const summary = theme.fg("muted", `${plural(files.length, "file")} with matches${more}`);
			return files.length ? [summary, ...head(theme, files.join("\n"), files, o.expanded, (cut) => cut.map((f) => theme.fg("accent", f)))] : summary;
		}
		const matches = d.matches ?? [];
		const summary = theme.fg("muted", `${plural(matches.length, "match", "matches")} in ${plural(files.length, "file")}${more}`);
		const lines = matches.map((m) => `${m.path}:${m.line} ${m.text}`);
		const style = (cut: string[], from: number) =>
			cut.map((l, i) => {
				const m = matches[from + i];
				const at = `${m.path}:${m.line} `;
				return l.startsWith(at) ? `${theme.fg("accent", m.path)}${theme.fg("muted", `:${m.line}`)} ${theme.fg("toolOutput", l.slice(at.length))}` : theme.fg("accent", l);
			});
		return lines.length ? [summary, ...head(theme, lines.join("\n"), lines, o.expanded, style)] : summary;
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
function viewBody(theme: Theme, v: DiffView, expanded: boolean): Part[] {
	return [...diffBody(theme, v.text, expanded), ...(expanded || !v.text ? viewNotes(theme, v) : [])];
}

/** A new file's first lines, as Pi's write shows them: highlighted by the file's language, without row numbers. */
function newFileBody(theme: Theme, v: DiffView, path: string | undefined, expanded: boolean): Part[] {
	const rows = v.text ? v.text.split("\n").map((r) => r.replace(/^\+\s*\d+ /, "")) : [];
	if (!rows.length) return [];
	const shown = rows.slice(0, expanded ? DIFF_ROWS_DRAWN : COLLAPSED_LIST_LINES);
	const lang = path ? getLanguageFromPath(path) : undefined;
	const style = (cut: string[]) => {
		try {
			if (lang && cut.length <= HIGHLIGHT_LINES) {
				const out = highlightCode(cut.join("\n"), lang);
				if (out.length === cut.length) return out;
			}
		} catch {
			// drawn plain below
		}
		return cut.map((l) => theme.fg("toolOutput", l));
	};
	const part: RowsPart = {
		key: `new\0${lang ?? ""}\0${shown.length}\0${v.text}`,
		rows: shown,
		keep: "head",
		style,
		notDrawn: (n) => theme.fg("muted", `... (${n} more lines not drawn: too many wide characters to draw at once)`),
	};
	const total = v.added;
	const more = total - shown.length;
	const tailNote = more > 0 && !expanded ? [`${theme.fg("muted", `... (${more} more lines, ${total} total,`)} ${expandHint(theme)}${theme.fg("muted", ")")}`] : [];
	return [part, ...tailNote, ...(expanded ? viewNotes(theme, v) : [])];
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
function changeCall(name: "Write" | "Edit", args: Args, theme: Theme, ctx: RenderContext, make: () => Promise<View>): Body {
	const v = preview(ctx, argsKey(args), make);
	const landed = ctx.state.landed as DiffView | undefined;
	const c = landed ?? v;
	// A refused or failed call changed nothing: its header promises no counts (docs/render.md).
	const headLine = `${title(theme, name)} ${pathText(theme, pathOf(args))}${c && !ctx.isError ? ` ${viewCounts(theme, c)}` : ""}`;
	// Once the call returned, its result shows what changed.
	if (!v || !ctx.isPartial || landed) return headLine;
	const body = v.created ? newFileBody(theme, v, str(pathOf(args)), ctx.expanded) : viewBody(theme, v, ctx.expanded);
	const notes = (v.notes ?? []).map((n) => theme.fg("warning", n));
	const parts = [...body, ...notes];
	return parts.length ? [headLine, "", ...parts] : headLine;
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
		let body: Part[];
		if (!v) body = [theme.fg("muted", `${d.created ? "created" : "written"}, ${plural(d.lines ?? 0, "line")}`)];
		else if (d.created) body = orNone(newFileBody(theme, v, str(pathOf(ctx.args)), o.expanded), theme.fg("muted", "created, empty"));
		else body = orNone(viewBody(theme, v, o.expanded), theme.fg("muted", `written, no line changes (${plural(d.lines ?? 0, "line")})`));
		return stripped ? [...body, stripped] : body;
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
		const parts: Part[] = [];
		if (d.deleted) parts.push(theme.fg("muted", `file deleted (${plural(d.removed ?? 0, "line")})`));
		if (d.movedFrom) parts.push(theme.fg("muted", `moved from ${d.movedFrom} to ${d.path}`));
		if (v && !d.deleted) parts.push(...viewBody(theme, v, o.expanded));
		for (const w of d.warnings ?? []) parts.push(theme.fg("warning", w));
		return parts.length ? parts : undefined;
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
		const lines: Part[] = [headLine];
		for (const f of files) {
			const name = f.moveTo ? `${f.path} → ${f.moveTo}` : f.path;
			lines.push(`  ${theme.fg("warning", letter[f.op])} ${theme.fg("accent", name)}${ctx.isError ? "" : ` ${counts(theme, f)}`}`);
			if (ctx.expanded && f.text) lines.push(...diffBody(theme, f.text, true, 4));
		}
		return lines;
	},
	result(r, o, theme) {
		const ops = ((r.details ?? {}) as { operations?: { operation: keyof typeof letter; path: string; from?: string | null; diff?: ScreenDiff | null }[] }).operations;
		if (!Array.isArray(ops) || ops.length === 0) return theme.fg("muted", "applied");
		let budget = o.expanded ? Infinity : PATCH_COLLAPSED_ROWS;
		let hidden = 0;
		const lines: Part[] = [];
		for (const op of ops) {
			const name = op.from ? `${op.from} → ${op.path}` : op.path;
			const v = op.diff ?? undefined;
			lines.push(`${theme.fg("warning", letter[op.operation] ?? "?")} ${theme.fg("accent", name)}${v ? ` ${viewCounts(theme, v)}` : op.operation === "delete" ? theme.fg("muted", " deleted") : ""}`);
			if (!v) continue;
			const rows = v.text ? v.text.split("\n") : [];
			const shown = rows.slice(0, Math.max(0, Math.min(budget, DIFF_ROWS_DRAWN)));
			budget -= shown.length;
			hidden += rows.length - shown.length;
			if (shown.length) lines.push(diffRows(theme, shown, `${shown.length}\0${v.text}`, 2));
			if (o.expanded || !v.text) lines.push(...viewNotes(theme, v).map((l) => `  ${l}`));
		}
		if (hidden > 0) lines.push(moreLines(theme, hidden, "more"));
		return lines;
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

/** A cell's program: its first lines (all, up to ROWS_DRAWN, expanded), highlighted when they are few. */
function program(theme: Theme, code: string, expanded: boolean): Part[] {
	const style = (cut: string[]) => {
		try {
			if (cut.length <= HIGHLIGHT_LINES) {
				const out = highlightCode(cut.join("\n"), "javascript");
				if (out.length === cut.length) return out;
			}
		} catch {
			// drawn plain below
		}
		return cut.map((l) => theme.fg("toolOutput", l));
	};
	return head(theme, code, code.split("\n"), expanded, style, COLLAPSED_LIST_LINES);
}

function cellResult(r: Result, o: Opts, theme: Theme, ctx: RenderContext): Part[] | undefined {
	const nested = noteProgress(ctx, r);
	const parts: Part[] = [];
	if (nested.length) parts.push(nestedLines(theme, nested));
	if (!o.isPartial) {
		const out = resultText(r);
		if (out) parts.push(...tail(theme, out, o.expanded, COLLAPSED_LIST_LINES));
	}
	return parts.length ? parts : undefined;
}

const exec = make({
	call(args, theme, ctx) {
		ctx.state.showTimer = true;
		const code = str(args.code);
		const uses = Array.isArray(args.uses) ? theme.fg("muted", ` uses ${args.uses.length ? args.uses.join(", ") : "none"}`) : "";
		const headLine = `${title(theme, "exec")}${uses}` + running(theme, ctx);
		return code ? [headLine, ...program(theme, code, ctx.expanded)] : headLine;
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
