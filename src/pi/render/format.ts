/**
 * Pieces every toolkit renderer shares (docs/render.md): the error view (a sentence for the person, then the stable
 * code), the tail of long output, the elapsed timer of a running call, and path display. They follow the behaviour
 * of Pi's own tool rows: title in `toolTitle` bold, paths in `accent`, output in `toolOutput`, errors in `error`,
 * notes in `muted`/`warning`, and "Elapsed 4.2s" / "Took 4.2s" timing lines.
 */
import { homedir } from "node:os";
import type { Theme, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { keyHint } from "@earendil-works/pi-coding-agent";
import type { CodeFailure, HostFailure, HostPermissionDecision, ShellFailure } from "../../../index.js";
import type { Part, RowsPart } from "./rows.ts";
import { shownLine } from "./safe.ts";
import { thrownFailure, type FailureDetails, type ToolErrorCode } from "../failure.ts";

/** Lines of output a collapsed row shows (Pi's bash shows 5). */
export const PREVIEW_LINES = 5;
/** Lines of a diff or listing a collapsed row shows before "... (N more lines)". */
export const COLLAPSED_LIST_LINES = 10;

/** The per-row state our renderers keep in Pi's `context.state`. */
export interface RowState {
	startedAt?: number;
	endedAt?: number;
	interval?: ReturnType<typeof setInterval>;
	[key: string]: unknown;
}

/** Pi's render context (its type is not exported by name). */
type PiRenderContext = Parameters<NonNullable<ToolDefinition["renderCall"]>>[2];

/** A row's context as both Pi versions pass it (0.87 has no `durationMs`/`outputPad`). */
export type RenderContext = Omit<PiRenderContext, "state" | "args" | "durationMs" | "outputPad"> & {
	state: RowState;
	args: Record<string, unknown>;
	durationMs?: number;
	outputPad?: number;
};

/** `~/x` for paths under the home directory, as Pi shows them. */
export function shortPath(p: string): string {
	const home = homedir();
	return home && (p === home || p.startsWith(home + "/")) ? `~${p.slice(home.length)}` : p;
}

/** The title of a row: `Name` bold in the tool-title colour. */
export function title(theme: Theme, name: string): string {
	return theme.fg("toolTitle", theme.bold(name));
}

/** A path argument: accent, `...` while the argument is still streaming, `[invalid arg]` when it is not a string. */
export function pathText(theme: Theme, value: unknown, fallback?: string): string {
	if (value === undefined || value === null || value === "") return fallback ? theme.fg("accent", fallback) : theme.fg("toolOutput", "...");
	if (typeof value !== "string") return theme.fg("error", "[invalid arg]");
	return theme.fg("accent", shownLine(shortPath(value)));
}

/** The path an argument object names (`path` wins over `file_path`, as the engine folds them). */
export function pathOf(args: Record<string, unknown> | undefined): unknown {
	return args?.path ?? args?.file_path;
}

/** The "(ctrl+o to expand)" hint in Pi's words. */
export function expandHint(theme: Theme): string {
	try {
		return keyHint("app.tools.expand", "to expand");
	} catch {
		return theme.fg("dim", "ctrl+o to expand");
	}
}

/** "... (N more lines, ctrl+o to expand)". */
export function moreLines(theme: Theme, n: number, where: "earlier" | "more"): string {
	return `${theme.fg("muted", `... (${n} ${where} line${n === 1 ? "" : "s"},`)} ${expandHint(theme)}${theme.fg("muted", ")")}`;
}

/** Rows of output or of a listing an expanded row draws at most (Pi's TUI keeps every line it is given in its
 * transcript; the model received them all). */
export const ROWS_DRAWN = 500;

/**
 * Output lines: expanded, the last ROWS_DRAWN of them; collapsed, the last `n` (the end of a log is where the error
 * is) after a "... (K earlier lines)" note — never the start of the kept text. Each line is one screen row, cut to
 * the width with a marker counting the characters cut (src/pi/render/rows.ts).
 */
export function tail(theme: Theme, body: string, expanded: boolean, n = PREVIEW_LINES, colour: "toolOutput" | "error" = "toolOutput"): Part[] {
	const lines = body.replace(/\r/g, "").replace(/\n+$/, "").split("\n");
	if (lines.length === 1 && lines[0] === "") return [];
	const keep = expanded ? ROWS_DRAWN : n;
	const shown = lines.length <= keep ? lines : lines.slice(-keep);
	const rows: RowsPart = {
		key: `tail\0${colour}\0${keep}\0${body}`,
		rows: shown,
		keep: "tail",
		style: (cut) => cut.map((l) => theme.fg(colour, l)),
		notDrawn: (k) => theme.fg("muted", `... (${k} earlier line${k === 1 ? "" : "s"} not drawn: too many wide characters to draw at once)`),
	};
	const hidden = lines.length - shown.length;
	if (!hidden) return [rows];
	return [expanded ? theme.fg("muted", `... (${hidden} earlier line${hidden === 1 ? "" : "s"} not drawn; the model received them all)`) : moreLines(theme, hidden, "earlier"), rows];
}

/** The first `n` rows of a listing (plain rows, `style` colours them once cut), then "... (K more lines)" when
 * collapsed; expanded, at most ROWS_DRAWN. `key` names the listing (the rows are not compared). */
export function head(theme: Theme, key: string, rows: string[], expanded: boolean, style: (cut: string[], from: number) => string[], n = COLLAPSED_LIST_LINES): Part[] {
	const keep = expanded ? ROWS_DRAWN : n;
	const shown = rows.length <= keep ? rows : rows.slice(0, keep);
	const part: RowsPart = {
		key: `head\0${keep}\0${key}`,
		rows: shown,
		keep: "head",
		style: (cut) => style(cut, 0),
		notDrawn: (k) => theme.fg("muted", `... (${k} more line${k === 1 ? "" : "s"} not drawn: too many wide characters to draw at once)`),
	};
	const hidden = rows.length - shown.length;
	if (!hidden) return [part];
	return [part, expanded ? theme.fg("muted", `... (${hidden} more line${hidden === 1 ? "" : "s"} not drawn; the model received them all)`) : moreLines(theme, hidden, "more")];
}

/** `4.2s` below a minute, then `1m 30s`, `2h 3m 4s` (Pi's format). */
export function duration(ms: number): string {
	const s = ms / 1000;
	if (s < 60) return `${s.toFixed(1)}s`;
	const t = Math.floor(s);
	const m = Math.floor(t / 60);
	if (m < 60) return `${m}m ${t % 60}s`;
	return `${Math.floor(m / 60)}h ${m % 60}m ${t % 60}s`;
}

/** When each call's own work ran, as the glue saw it: from the moment it was allowed (after its permission card, if
 * one was shown) to the moment its work returned. Keyed by Pi's tool call id; the oldest entries go past the cap. */
const runClock = new Map<string, { start?: number; end?: number }>();
const RUN_CLOCK_CAP = 512;

/** The call is deciding (a card may be shown): its row shows no timer until the work starts. */
export function clockWaiting(toolCallId: string): void {
	runClock.delete(toolCallId);
	runClock.set(toolCallId, {});
	if (runClock.size > RUN_CLOCK_CAP) runClock.delete(runClock.keys().next().value as string);
}

/** The call was allowed and its work starts now. */
export function clockStart(toolCallId: string): void {
	const c = runClock.get(toolCallId);
	if (c) c.start = Date.now();
}

/** The call's work returned. */
export function clockEnd(toolCallId: string): void {
	const c = runClock.get(toolCallId);
	if (c?.start !== undefined) c.end ??= Date.now();
}

/**
 * The row's timing: `Elapsed 4.2s` while the call runs (the row is redrawn every second), `Took 4.2s` once it has
 * a result. Called from `renderCall` and `renderResult`. A call the glue timed (src/pi/tools/host.ts) counts from
 * its approval, not from when Pi started it: the time a person took to answer its card is not the command's; while
 * the card is open the row shows no timer. Other calls count from when Pi marks the execution started.
 */
export function timer(context: RenderContext, done: boolean): string | undefined {
	const st = context.state;
	if (context.executionStarted && st.startedAt === undefined) st.startedAt = Date.now();
	if (!done && st.startedAt !== undefined && !st.interval) {
		st.interval = setInterval(() => context.invalidate(), 1000);
		// A timer must never keep Pi's process alive (print and json modes exit at the end of the run).
		st.interval.unref?.();
	}
	if (done) {
		st.endedAt ??= Date.now();
		if (st.interval) {
			clearInterval(st.interval);
			st.interval = undefined;
		}
	}
	const clock = runClock.get(context.toolCallId);
	if (clock) {
		if (clock.start === undefined) return done && typeof context.durationMs === "number" ? `Took ${duration(context.durationMs)}` : undefined;
		return `${done ? "Took" : "Elapsed"} ${duration((clock.end ?? (done ? st.endedAt! : Date.now())) - clock.start)}`;
	}
	if (done && typeof context.durationMs === "number") return `Took ${duration(context.durationMs)}`;
	if (st.startedAt === undefined) return undefined;
	return `${done ? "Took" : "Elapsed"} ${duration((st.endedAt ?? Date.now()) - st.startedAt)}`;
}

/** A human sentence for each stable failure code the toolkit returns (the code itself is shown beside it); keyed by
 * the codes index.d.ts generates from the engine's code enums (`ToolErrorCode`), so a sentence for a code that does
 * not exist fails the type check. */
const SENTENCES: Readonly<Partial<Record<ToolErrorCode, string>>> = {
	TOOL_DENIED: "Not run: the call was denied.",
	TOOL_FAILED: "The call failed.",
	TOOL_TIMEOUT: "Stopped: the command ran past its timeout and was killed.",
	INVALID_ARGUMENT: "Refused: the call's arguments are not valid.",
	PATH_OUTSIDE_WORKSPACE: "Refused: the path is outside the workspace.",
	NOT_FOUND: "Not found.",
	EDIT_TAG_MISMATCH: "Not applied: the file changed since the model read it.",
	EDIT_LINES_UNSEEN: "Not applied yet: the model had not seen those lines; they were shown to it.",
	"internal-panic": "An internal error stopped the call; nothing else was affected.",
	"policy-denied": "Blocked by the embedder's policy; nothing ran.",
	aborted: "Cancelled.",
	"approval-denied": "Not run: the nested apply_patch was declined.",
	"approval-unavailable": "Not run: no one could approve the nested apply_patch.",
	"shell-unavailable": "Not run: Pi has no usable shell.",
	"session-limit": "Not run: too many shell sessions are open.",
	"cell-limit": "Not run: too many code cells are running.",
	"invalid-session": "Refused: no such shell session.",
	"stale-session": "Refused: that shell session has ended.",
	"spawn-failed": "The command could not be started.",
	"manager-closed": "Not run: the Pi session was replaced.",
};

/** A failure as a result carries it (src/pi/failure.ts): the code, the call's fields, the message for the model. */
export interface Failure {
	code: ToolErrorCode;
	details: FailureDetails;
	/** The model-facing text without its leading `CODE: ` (the code is shown beside the sentence). */
	message: string;
	sentence: string;
}

/**
 * The failure a result carries as data (`details.errorCode`, Pi 1.x), or (Pi 0.87, where the text is thrown) the
 * data this process kept for call `callId`, with the sentence for the person; undefined when there is neither (a
 * 0.87 row of a saved session). Nothing is parsed out of the text: the code and every fact the sentence uses are
 * fields.
 */
export function failureOf(result: { content: { type: string; text?: string }[]; details?: unknown }, callId?: string): Failure | undefined {
	const given = result.details as FailureDetails | undefined;
	// Pi 0.87 (the text thrown): the data kept in this process for the call, when this process threw it.
	const details = given && typeof given.errorCode === "string" ? given : thrownFailure(callId);
	if (!details) return undefined;
	const code = details.errorCode;
	const text = resultText(result).trim();
	const message = text.startsWith(`${code}: `) ? text.slice(code.length + 2) : text;
	return { code, details, message, sentence: sentenceFor(code, details) };
}

/** The sentence for a failure: apply_patch's by its outcome, Edit's family, then the table. */
function sentenceFor(code: ToolErrorCode, details: FailureDetails): string {
	const outcome = typeof details.outcome === "string" ? details.outcome : undefined;
	if (outcome === "no-change") return "The patch was not applied; no file changed.";
	if (outcome) return `The patch failed part-way (${outcome}); see which files changed.`;
	return SENTENCES[code] ?? (code.startsWith("EDIT_") ? "The Edit was not applied." : "The call failed.");
}

/** The first line (all of it expanded) of a message, muted, with `…` when lines are hidden. */
function messageLines(theme: Theme, message: string, expanded: boolean): string {
	if (!message) return "";
	const shown = expanded ? message : message.split("\n", 1)[0];
	const more = !expanded && message.includes("\n") ? ` ${theme.fg("dim", "…")}` : "";
	return `${theme.fg("muted", shown)}${more}`;
}

/** The error view: the sentence and `[CODE]` in the error colour, the model-facing message below, muted (first line
 * only when collapsed). A result without failure data (a saved Pi 0.87 session) is shown as its text, in the error
 * colour. */
export function errorView(theme: Theme, result: { content: { type: string; text?: string }[]; details?: unknown }, expanded: boolean, callId?: string): string {
	const f = failureOf(result, callId);
	if (!f) {
		const text = resultText(result).trim();
		if (!text) return theme.fg("error", "The call failed.");
		const [first, ...rest] = text.split("\n");
		const more = rest.length ? `\n${messageLines(theme, rest.join("\n"), expanded)}` : "";
		return `${theme.fg("error", first)}${expanded || !rest.length ? more : ` ${theme.fg("dim", "…")}`}`;
	}
	const head = theme.fg("error", `${f.sentence} [${f.code}]`);
	const body = messageLines(theme, f.message, expanded);
	return body ? `${head}\n${body}` : head;
}

/** The text blocks of a result, joined. */
export function resultText(result: { content: { type: string; text?: string }[] }): string {
	return (result.content ?? [])
		.filter((c) => c.type === "text")
		.map((c) => c.text ?? "")
		.join("\n");
}
