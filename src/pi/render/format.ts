/**
 * Pieces every toolkit renderer shares (docs/render.md): the error view (a sentence for the person, then the stable
 * code), the tail of long output, the elapsed timer of a running call, and path display. They follow the behaviour
 * of Pi's own tool rows: title in `toolTitle` bold, paths in `accent`, output in `toolOutput`, errors in `error`,
 * notes in `muted`/`warning`, and "Elapsed 4.2s" / "Took 4.2s" timing lines.
 */
import { homedir } from "node:os";
import type { Theme, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { keyHint } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";
import { Text } from "@earendil-works/pi-tui";
import type { CodeFailure, HostFailure, HostPermissionDecision, ShellFailure } from "../../../index.js";
import { shownLine } from "./safe.ts";

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

/** Reuses the slot's Text (Pi hands the previous component back), else a new one. */
export function text(context: { lastComponent: Component | undefined }, value: string): Text {
	const t = context.lastComponent instanceof Text ? context.lastComponent : new Text("", 0, 0);
	t.setText(value);
	return t;
}

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

/**
 * Output lines: all of them expanded; collapsed, the last `n` (the end of a log is where the error is) after a
 * "... (K earlier lines)" note — never the start of the kept text.
 */
export function tail(theme: Theme, body: string, expanded: boolean, n = PREVIEW_LINES, colour: "toolOutput" | "error" = "toolOutput"): string {
	const lines = body.replace(/\r/g, "").replace(/\n+$/, "").split("\n");
	if (lines.length === 1 && lines[0] === "") return "";
	const shown = expanded || lines.length <= n ? lines : lines.slice(-n);
	const styled = shown.map((l) => theme.fg(colour, l.replace(/\t/g, "   "))).join("\n");
	return shown.length < lines.length ? `${moreLines(theme, lines.length - shown.length, "earlier")}\n${styled}` : styled;
}

/** The first `n` lines of a listing, then "... (K more lines)" when collapsed. */
export function head(theme: Theme, lines: string[], expanded: boolean, n = COLLAPSED_LIST_LINES): string {
	const shown = expanded || lines.length <= n ? lines : lines.slice(0, n);
	const out = shown.join("\n");
	return shown.length < lines.length ? `${out}\n${moreLines(theme, lines.length - shown.length, "more")}` : out;
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

/**
 * The row's timing: `Elapsed 4.2s` while the call runs (the row is redrawn every second), `Took 4.2s` once it has
 * a result. Called from `renderCall` and `renderResult`; the clock starts when Pi marks the execution started.
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
		if (typeof context.durationMs === "number") return `Took ${duration(context.durationMs)}`;
	}
	if (st.startedAt === undefined) return undefined;
	return `${done ? "Took" : "Elapsed"} ${duration((st.endedAt ?? Date.now()) - st.startedAt)}`;
}

/** The codes an error text of a toolkit tool starts with that have a sentence of their own: the unions index.d.ts
 * generates from the engine's code enums, so a sentence keyed by a code that does not exist fails the type check. */
type SentenceCode = HostFailure["code"] | NonNullable<HostPermissionDecision["code"]> | ShellFailure["code"] | CodeFailure["code"];

/** A human sentence for each stable failure code the toolkit returns (the code itself is shown beside it). */
const SENTENCES: Readonly<Record<string, string | undefined>> = {
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
} satisfies Partial<Record<SentenceCode, string>>;

/** A parsed failure: the code (when the text starts with one) and the rest of the message. */
export interface Failure {
	code?: string;
	message: string;
	sentence: string;
}

/**
 * Splits a failure text into its code and message and picks the sentence for the person. Recognised: `CODE: msg`
 * (host tools, code cells, shell sessions) and `apply_patch failed (outcome): msg`.
 */
export function failure(raw: string): Failure {
	const first = raw.split("\n", 1)[0];
	let m = /^([A-Z][A-Z0-9_]+|[a-z]+(?:-[a-z]+)+|aborted): ?([\s\S]*)$/.exec(raw);
	if (m) {
		const code = m[1];
		const sentence = SENTENCES[code] ?? (code.startsWith("EDIT_") ? "The Edit was not applied." : "The call failed.");
		return { code, message: m[2].trim(), sentence };
	}
	m = /^apply_patch failed \(([^)]*)\)(?::|\.)?\s*([\s\S]*)$/.exec(raw);
	if (m) {
		const outcome = m[1];
		const sentence = outcome === "no-change" ? "The patch was not applied; no file changed." : `The patch failed part-way (${outcome}); see which files changed.`;
		return { code: `apply_patch ${outcome}`, message: m[2].trim() || first, sentence };
	}
	return { message: raw.trim(), sentence: "The call failed." };
}

/** The error view: the sentence and `[CODE]` in the error colour; the model-facing message below, muted (first line
 * only when collapsed). */
export function errorView(theme: Theme, raw: string, expanded: boolean): string {
	const f = failure(raw);
	const head = theme.fg("error", f.code ? `${f.sentence} [${f.code}]` : f.sentence);
	if (!f.message) return head;
	const msg = expanded ? f.message : f.message.split("\n", 1)[0];
	const more = !expanded && f.message.includes("\n") ? ` ${theme.fg("dim", "…")}` : "";
	return `${head}\n${theme.fg("muted", msg)}${more}`;
}

/** The text blocks of a result, joined. */
export function resultText(result: { content: { type: string; text?: string }[] }): string {
	return (result.content ?? [])
		.filter((c) => c.type === "text")
		.map((c) => c.text ?? "")
		.join("\n");
}
