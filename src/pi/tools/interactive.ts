/**
 * The interactive tools' glue (docs/interactive.md): `asktool`, `TodoWrite` and `new_context`. Validation, bounds
 * and state are in Rust (src/interactive/, bound in src/bind/interactive.rs); this file adapts Pi:
 * - asktool shows one dialog in the TUI (interactive-dialog.ts), sequential `select`/`input` dialogs in RPC mode, and
 *   refuses headless (`no-user`). No timeout (the one interactive exception); an aborted turn resolves what is still
 *   open as skipped.
 * - TodoWrite stores each accepted snapshot in its result's details, rebuilds the list from the branch's results at
 *   every session start and tree navigation, and paints the widget above the editor with the running Host Bash
 *   background tasks. `/pct todos` prints it (commands.ts reads `shared["interactive.todos"]`).
 * - new_context changes nothing: it marks a request, and when the run ends Pi compacts (Remote Compaction's
 *   `session_before_compact` handler takes over when that feature is on, src/pi/compaction.ts).
 * All three are plan-safe (`planSafeTools()`), listed in /pct status and switched in /pct config.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { showAskDialog, type DialogQuestion, type DialogReply } from "./interactive-dialog.ts";
import type { HostRuntime } from "./host.ts";
import { safeInput, safeNotify, safeSelect, safeWidget } from "../render/safe.ts";

type AskSession = InstanceType<typeof native.AskSession>;

/** The names Plan (contract) mode lets through: the interactive tools change nothing in the workspace. */
export function planSafeTools(): string[] {
	return native.interactivePlanSafe();
}

/** The `shared` key of the `/pct todos` text. */
export const TODOS_KEY = "interactive.todos";
const WIDGET_KEY = "pct-todos";

const askSchema = Type.Object({
	questions: Type.Array(
		Type.Object({
			question: Type.String({ description: "Self-contained; at most 1,000 characters." }),
			options: Type.Optional(Type.Array(Type.String(), { description: "Choices (at most 12, 200 characters each); omit for free text." })),
			multiSelect: Type.Optional(Type.Boolean({ description: "Allow several choices." })),
		}),
		{ description: "1 to 8 questions." },
	),
});

const todoSchema = Type.Object({
	todos: Type.Array(
		Type.Object({
			id: Type.String({ description: "Unique; at most 64 characters." }),
			content: Type.String({ description: "Imperative; at most 500 characters." }),
			status: Type.String({ description: "pending, in_progress or completed." }),
		}),
		{ description: "The whole list (at most 50); [] clears it." },
	),
});

const newContextSchema = Type.Object({});

type Failure = { ok: false; code: string; message: string };
const fail = (f: Failure): never => {
	throw new Error(`${f.code}: ${f.message}`);
};
const text = (t: string) => [{ type: "text" as const, text: t }];

/** Applies the dialog's replies to the session (open slots stay open and read as skipped). */
function applyReplies(s: AskSession, replies: Array<DialogReply | undefined>): void {
	replies.forEach((r, i) => {
		if (!r) return;
		if (r.kind === "skip") s.skip(i);
		else if (r.kind === "text") s.answerText(i, r.text);
		else s.answerChoices(i, r.chosen, r.other ?? null);
	});
}

/** RPC mode: one `select`/`input` dialog after another; a cancelled dialog skips its question. */
async function askInTurn(ctx: ExtensionContext, s: AskSession, qs: DialogQuestion[], signal: AbortSignal | undefined): Promise<void> {
	const L = native.interactiveLimits();
	const opts = signal ? { signal } : undefined;
	for (let i = 0; i < qs.length; i++) {
		if (signal?.aborted) return;
		const q = qs[i]!;
		const title = qs.length > 1 ? `Question ${i + 1} of ${qs.length}: ${q.question}` : q.question;
		const typed = async (): Promise<string | undefined> => safeInput(ctx.ui, title, "Type an answer (empty = skip)", opts);
		if (q.options.length === 0) {
			const v = await typed();
			if (v === undefined) s.skip(i);
			else s.answerText(i, v);
		} else if (!q.multiSelect) {
			const v = await safeSelect(ctx.ui, title, [...q.options, L.otherLabel, L.skipLabel], opts);
			if (v === L.otherLabel) {
				const t = await typed();
				if (t === undefined) s.skip(i);
				else s.answerText(i, t);
			} else if (v !== undefined && q.options.includes(v)) s.answerChoices(i, [v], null);
			else s.skip(i);
		} else {
			const chosen = new Set<string>();
			let other: string | undefined;
			for (;;) {
				const rows = [...q.options.map((o) => `${chosen.has(o) ? "[x]" : "[ ]"} ${o}`), L.otherLabel, L.doneLabel, L.skipLabel];
				const v = await safeSelect(ctx.ui, other ? `${title} (typed: ${other})` : title, rows, opts);
				if (v === undefined || v === L.skipLabel) {
					s.skip(i);
					break;
				}
				if (v === L.doneLabel) {
					if (chosen.size > 0 || other) s.answerChoices(i, q.options.filter((o) => chosen.has(o)), other ?? null);
					else s.skip(i);
					break;
				}
				if (v === L.otherLabel) {
					const t = await typed();
					if (t !== undefined) other = t.trim() || undefined;
					continue;
				}
				const o = q.options[rows.indexOf(v)];
				if (o === undefined) continue;
				if (chosen.has(o)) chosen.delete(o);
				else chosen.add(o);
			}
		}
	}
}

/** The branch's TodoWrite result details, oldest first (what the list is rebuilt from). */
function todoSnapshots(ctx: ExtensionContext): unknown[] {
	const branch = (ctx.sessionManager as unknown as { getBranch?: () => Array<{ type: string; message?: { role?: string; toolName?: string; isError?: boolean; details?: unknown } }> } | undefined)?.getBranch?.() ?? [];
	const out: unknown[] = [];
	for (const e of branch) {
		const m = e.type === "message" ? e.message : undefined;
		if (m?.role === "toolResult" && m.toolName === "TodoWrite" && !m.isError && m.details) out.push(m.details);
	}
	return out;
}

/** Running Host Bash background tasks, one line each (empty when Host Bash is off or has none). */
function runningTasks(host: ToolkitHost): string[] {
	const rt = host.shared.get("host.runtime") as HostRuntime | undefined;
	const r = rt?.session?.taskList();
	if (!r || !r.ok) return [];
	return r.tasks.filter((t) => t.status === "running").map((t) => `${t.backgroundTaskId}  ${t.description ?? t.command}`);
}

export function register(host: ToolkitHost): void {
	const todos = new native.TodoList();
	let compactRequested = false;
	// The rows last painted: an unchanged widget is not sent again (in RPC mode every paint is a record), and an empty
	// list is never painted over nothing.
	const NOTHING = "[]";
	let painted = NOTHING;
	const paint = (ctx: ExtensionContext | undefined) => {
		if (!ctx?.hasUI) return;
		const rows = todos.widget(runningTasks(host));
		const key = JSON.stringify(rows);
		if (key === painted) return;
		painted = key;
		safeWidget(ctx.ui, WIDGET_KEY, rows.length > 0 ? rows : undefined);
	};
	const notEnabled = (name: string) => fail(native.interactiveNotEnabled(name));
	host.shared.set(TODOS_KEY, () => todos.text());

	host.pi.registerTool({
		name: "asktool",
		label: "Ask the user",
		description:
			"Ask the user questions and wait for the answers; the user may type another answer or skip. Use it when a decision needs the user.",
		promptSnippet: "Ask the user questions (free text or choices) and wait for the answers.",
		parameters: askSchema,
		async execute(_id: string, params: unknown, signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			if (!host.isAdmitted("asktool")) notEnabled("asktool");
			const s = new native.AskSession(params ?? {});
			const bad = s.failure();
			if (bad) fail(bad);
			if (!ctx?.hasUI) fail(native.askNoUser());
			const qs = s.questions();
			if (!signal?.aborted) {
				const replies = ctx.mode === "tui" ? await showAskDialog(ctx, qs, native.interactiveLimits(), signal) : undefined;
				if (replies) applyReplies(s, replies);
				else await askInTurn(ctx, s, qs, signal);
			}
			s.skipOpen();
			const r = s.result();
			return { content: text(r.text), details: { answers: r.answers } };
		},
	});

	host.pi.registerTool({
		name: "TodoWrite",
		label: "Todo list",
		description:
			"Replace the todo list the user sees with the complete, ordered list (at most one in_progress). Use it for multi-step work; keep it current.",
		promptSnippet: "Keep a todo list for multi-step work (send the whole list each time).",
		parameters: todoSchema,
		async execute(_id: string, params: unknown, _signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			if (!host.isAdmitted("TodoWrite")) notEnabled("TodoWrite");
			const r = todos.replace(params ?? {});
			if (!r.ok) return fail(r);
			paint(ctx);
			return { content: text(r.text), details: { todos: r.todos } };
		},
	});

	host.pi.registerTool({
		name: "new_context",
		label: "New context",
		description:
			"Ask for a fresh context: when this run ends, the conversation is compacted into a summary the next turn starts from.",
		promptSnippet: "Ask for a fresh (compacted) context once this run ends.",
		parameters: newContextSchema,
		async execute(_id: string, params: unknown) {
			if (!host.isAdmitted("new_context")) notEnabled("new_context");
			const bad = native.newContextCheck(params ?? {});
			if (bad) fail(bad);
			const already = compactRequested;
			compactRequested = true;
			return { content: text(native.newContextResult(!!host.config().remoteCompaction?.enabled, already)), details: { requested: true } };
		},
	});

	// The run is over: the turn boundary where a fresh context can start without cutting the model off.
	host.pi.on("agent_end", async (_event, ctx) => {
		paint(ctx);
		if (!compactRequested) return;
		compactRequested = false;
		ctx.compact({
			onComplete: () => {
				if (ctx.hasUI) safeNotify(ctx.ui, "new_context: the conversation was compacted; the next turn starts from the summary.", "info");
			},
			onError: (e: Error) => {
				const msg = `new_context: compaction did not run (${e.message}).`;
				if (ctx.hasUI) safeNotify(ctx.ui, msg, "warning");
				else process.stderr.write(msg + "\n");
			},
		});
	});
	// Resume, fork, new session and tree navigation: the list is the newest snapshot on the branch now in force.
	const rebuild = async (_event: unknown, ctx: ExtensionContext) => {
		todos.restore(todoSnapshots(ctx));
		paint(ctx);
	};
	host.pi.on("session_start", async (event, ctx) => {
		compactRequested = false;
		painted = NOTHING;
		await rebuild(event, ctx);
	});
	host.pi.on("session_tree", rebuild);
	// Background tasks start and end with tool calls: repaint after each.
	host.pi.on("tool_execution_end", async (_event, ctx) => paint(ctx));
}
