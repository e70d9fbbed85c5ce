/**
 * `renderCall` / `renderResult` of every toolkit tool (docs/render.md), for both supported Pi versions. Each tool
 * definition spreads `renderersFor(name)` into itself; the execute paths are untouched. The rows behave like Pi's
 * own tools: Bash and exec_command show `$ command`, the tail of their output (live while running when the tool
 * streams updates) and an elapsed timer; Edit, Write and apply_patch show a coloured diff (collapsed: the file and
 * its +/- counts; expanded: the hunks); Read, Grep and Glob show the path, range and counts, never the `[path#TAG]`
 * rows the model reads; code cells show their program and their nested calls; every error is drawn as an error: a
 * sentence for the person, the stable code, and the model-facing message muted below.
 */
import type { Theme, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { highlightCode, renderDiff } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";
import { editOpsDiff, lineDiff, patchFiles, readForPreview, splitLines, type DiffView } from "./diff.ts";
import {
	COLLAPSED_LIST_LINES,
	errorView,
	failure,
	head,
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
			if (ctx.isError && !handlesErrors) body = errorView(theme, resultText(r), o.expanded);
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

/** Pi's coloured diff, or the plain lines when the theme is not Pi's interactive one (print mode, tests). */
function coloured(diff: string, theme: Theme): string {
	try {
		return renderDiff(diff);
	} catch {
		return diff
			.split("\n")
			.map((l) => theme.fg(l.startsWith("+") ? "toolDiffAdded" : l.startsWith("-") ? "toolDiffRemoved" : "toolDiffContext", l))
			.join("\n");
	}
}

/** A diff body: the hunks expanded; collapsed, the first lines and "... (N more lines)". */
function diffBody(theme: Theme, diff: string, expanded: boolean): string {
	if (!diff) return "";
	return head(theme, coloured(diff, theme).split("\n"), expanded, COLLAPSED_LIST_LINES);
}

// ---- shells ---------------------------------------------------------------------------------------------------

/** The sections of a host Bash text (`exit_code: N`, `[stdout]`, `[stderr]`, truncation and recovery notes). */
export function bashSections(raw: string): { exit?: string; stdout: string; stderr: string; notes: string[] } {
	const out = { exit: undefined as string | undefined, stdout: "", stderr: "", notes: [] as string[] };
	let cur: "stdout" | "stderr" | undefined;
	const acc: Record<"stdout" | "stderr", string[]> = { stdout: [], stderr: [] };
	for (const line of raw.split("\n")) {
		if (/^(exit_code|signal): /.test(line) && out.exit === undefined && cur === undefined) {
			out.exit = line;
			continue;
		}
		if (line === "[stdout]" || line === "[stderr]") {
			cur = line === "[stdout]" ? "stdout" : "stderr";
			continue;
		}
		if (/^\[(stdout|stderr) truncated: /.test(line) || /^(stdout|stderr) (recovery|full output)/i.test(line)) {
			out.notes.push(line.replace(/^\[|\]$/g, ""));
			continue;
		}
		if (cur) acc[cur].push(line);
	}
	out.stdout = acc.stdout.join("\n").replace(/\n+$/, "");
	out.stderr = acc.stderr.join("\n").replace(/\n+$/, "");
	return out;
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
				const f = failure(raw);
				const s = bashSections(raw);
				const exit = s.exit?.match(/^exit_code: (\d+)/)?.[1];
				const sentence = f.code === "TOOL_FAILED" && exit ? `Exited with code ${exit}.` : f.code === "TOOL_FAILED" && s.exit?.startsWith("signal") ? `Killed by ${s.exit.slice(8)}.` : f.sentence;
				const headLine = theme.fg("error", f.code ? `${sentence} [${f.code}]` : sentence);
				const body = streams(theme, s.stdout, s.stderr, o.expanded);
				if (!s.stdout && !s.stderr && !s.exit) return `${headLine}\n${theme.fg("muted", o.expanded ? f.message : f.message.split("\n", 1)[0])}`;
				return [headLine, body, ...s.notes.map((n) => theme.fg("warning", `[${n}]`))].filter(Boolean).join("\n");
			}
			if (typeof d.backgroundTaskId === "string") return theme.fg("muted", `Started background task ${d.backgroundTaskId}`);
			if (o.isPartial) return streams(theme, str(d.stdout) ?? raw, str(d.stderr) ?? "", o.expanded);
			const body = streams(theme, str(d.stdout) ?? "", str(d.stderr) ?? "", o.expanded);
			const notes: string[] = [];
			for (const s of ["stdout", "stderr"] as const) {
				if (d[`${s}Truncated`] === true) notes.push(`${s}: last ${Math.round(((d[s] as string)?.length ?? 0) / 1024)} KiB of ${Math.round((num(d[`${s}Bytes`]) ?? 0) / 1024)} KiB shown`);
				const rec = d[`${s}Recovery`] as { path?: string } | undefined;
				if (rec?.path) notes.push(`full ${s}: ${rec.path}`);
			}
			return [body || theme.fg("muted", "(no output)"), ...(notes.length ? [theme.fg("warning", `[${notes.join(". ")}]`)] : [])].join("\n");
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

/**
 * The preview of a call that changes a file, taken once, when the call is drawn before it runs (the file on disk is
 * then the one the call will change). A row drawn again later (expanding, a resumed session) keeps it; a row first
 * drawn after the call ran has none and shows what the arguments alone say.
 */
function preview(ctx: RenderContext, make: () => DiffView & { notes?: string[] }): (DiffView & { notes?: string[] }) | undefined {
	const st = ctx.state as { preview?: DiffView & { notes?: string[] }; previewKey?: string };
	const key = JSON.stringify(ctx.args ?? {});
	if (st.preview && st.previewKey === key) return st.preview;
	if (!ctx.argsComplete) return undefined;
	if (ctx.executionStarted && st.previewKey !== undefined) return st.preview;
	st.previewKey = key;
	st.preview = make();
	return st.preview;
}

/** Write's view: a diff against the existing file, or the new file's lines. */
export function writeView(args: Args, cwd: string, readFile = true): DiffView & { created: boolean } {
	const path = str(pathOf(args));
	const content = str(args.content) ?? "";
	const before = readFile && path ? readForPreview(path, cwd) : undefined;
	if (before !== undefined) return { ...lineDiff(before, content), created: false };
	const lines = splitLines(content);
	const width = String(Math.max(lines.length, 1)).length;
	return { text: lines.map((l, i) => `+${String(i + 1).padStart(width)} ${l}`).join("\n"), added: lines.length, removed: 0, created: true };
}

/** Edit's view: its operations against the file's lines as they are now. */
export function editView(args: Args, cwd: string, readFile = true): DiffView & { notes: string[] } {
	const path = str(pathOf(args));
	const before = readFile && path ? readForPreview(path, cwd) : undefined;
	return editOpsDiff(str(args.ops) ?? "", before === undefined ? undefined : splitLines(before));
}

const write = make({
	call(args, theme, ctx) {
		const v = preview(ctx, () => writeView(args, ctx.cwd, !ctx.executionStarted));
		const headLine = `${title(theme, "Write")} ${pathText(theme, pathOf(args))}${v && !ctx.isError ? ` ${counts(theme, v)}` : ""}`;
		if (!v || !ctx.expanded) return headLine;
		return `${headLine}\n\n${diffBody(theme, v.text, true)}`;
	},
	result(r, _o, theme) {
		const d = (r.details ?? {}) as { created?: boolean; lines?: number; stripped?: string[] };
		const what = d.created ? `created, ${plural(d.lines ?? 0, "line")}` : `written, ${plural(d.lines ?? 0, "line")}`;
		const stripped = d.stripped?.length ? theme.fg("warning", ` (removed from the content: ${d.stripped.join(", ")})`) : "";
		return theme.fg("muted", what) + stripped;
	},
});

const edit = make({
	call(args, theme, ctx) {
		const v = preview(ctx, () => editView(args, ctx.cwd, !ctx.executionStarted));
		const landed = ctx.state.landed as { added: number; removed: number } | undefined;
		const c = landed ?? v;
		const headLine = `${title(theme, "Edit")} ${pathText(theme, pathOf(args))}${c && !ctx.isError ? ` ${counts(theme, c)}` : ""}`;
		if (!v || !ctx.expanded) return headLine;
		const notes = (v.notes ?? []).map((n) => theme.fg("warning", n));
		return [headLine, "", diffBody(theme, v.text, true), ...notes].filter((p, i) => i !== 1 || v.text).join("\n");
	},
	result(r, _o, theme, ctx) {
		const d = (r.details ?? {}) as { added?: number; removed?: number; warnings?: string[]; movedFrom?: string; deleted?: boolean; path?: string };
		if (typeof d.added === "number" && typeof d.removed === "number" && !ctx.state.landed) {
			ctx.state.landed = { added: d.added, removed: d.removed };
			ctx.invalidate();
		}
		const parts: string[] = [];
		if (d.deleted) parts.push(theme.fg("muted", "file deleted"));
		if (d.movedFrom) parts.push(theme.fg("muted", `moved from ${d.movedFrom} to ${d.path}`));
		for (const w of d.warnings ?? []) parts.push(theme.fg("warning", w));
		return parts.join("\n") || undefined;
	},
});

const letter = { add: "A", update: "M", delete: "D" } as const;

const applyPatch = make({
	call(args, theme, ctx) {
		const files = patchFiles(str(args.patch) ?? "");
		const added = files.reduce((s, f) => s + f.added, 0);
		const removed = files.reduce((s, f) => s + f.removed, 0);
		// A refused or failed call changed nothing: its header promises no counts (docs/render.md).
		const headLine = `${title(theme, "apply_patch")}${files.length ? ` ${theme.fg("muted", plural(files.length, "file"))}${ctx.isError ? "" : ` ${counts(theme, { added, removed })}`}` : ""}`;
		const lines: string[] = [headLine];
		for (const f of files) {
			const name = f.moveTo ? `${f.path} → ${f.moveTo}` : f.path;
			lines.push(`  ${theme.fg("warning", letter[f.op])} ${theme.fg("accent", name)}${ctx.isError ? "" : ` ${counts(theme, f)}`}`);
			if (ctx.expanded && f.text) lines.push(coloured(f.text, theme).split("\n").map((l) => `    ${l}`).join("\n"));
		}
		return lines.join("\n");
	},
	result(_r, _o, theme) {
		return theme.fg("muted", "applied");
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
