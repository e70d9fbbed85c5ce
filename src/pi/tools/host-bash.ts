/**
 * Host Bash and background-task tool definitions (docs/spec/host-tools.md §Bash, docs/host.md "Bash"): TypeBox
 * schemas, descriptions and result shaping for `Bash`, `TaskList`, `TaskWait` and `TaskStop`. Everything that decides
 * (argument validation, the timeout rule, processes, truncation, recovery files, the caps, tree kills) is in Rust
 * (src/host/bash via `HostSession.bash/task*`); this file adapts Pi: `getShellConfig()`, the AbortSignal, and the
 * result object. Permissions, audit and registration come from the generic host-tool wrapper (src/pi/tools/host.ts):
 * `Bash` is high risk (confirmed per the mode table, auto-allowed only in `auto`), the Task tools are low risk (they
 * only observe or stop this session's own tasks).
 */
import { getShellConfig } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { HostBashResult, HostFailure, HostSession, HostTaskListOk, HostTaskOk } from "../../../index.js";

/** What a host tool's `execute` returns to Pi: the model-facing text, typed details, and the error flag. */
export interface HostToolResult<D> {
	content: { type: "text"; text: string }[];
	details: D;
	isError?: boolean;
}

/** One host tool as the wrapper registers it. */
export interface HostBashToolSpec {
	name: "Bash" | "TaskList" | "TaskWait" | "TaskStop";
	label: string;
	description: string;
	promptSnippet: string;
	parameters: typeof bashSchema | typeof taskListSchema | typeof taskIdSchema;
	/** `high` tools are confirmed per the permission mode table; `low` ones never ask. */
	risk: "high" | "low";
	run(session: HostSession, params: Record<string, unknown>, signal?: AbortSignal): Promise<HostToolResult<unknown>>;
}

export const bashSchema = Type.Object({
	command: Type.String({ description: "The command line, run by Pi's shell (bash -c) in the workspace root. No TTY: stdin is empty." }),
	timeout: Type.Optional(
		Type.Number({
			description:
				"Seconds, 1 to 21600 (default 60). Values above 21600 (up to 100000000) are read as milliseconds and clamped to 21600 s. Ignored with runInBackground.",
			minimum: 1,
			maximum: 100_000_000,
		}),
	),
	runInBackground: Type.Optional(
		Type.Boolean({
			description:
				"Start the command as a background task and return its backgroundTaskId at once (no timeout; not stopped by an abort). Follow it with TaskWait, TaskList, TaskStop.",
		}),
	),
	description: Type.Optional(Type.String({ description: "A few words on what the command does (shown in TaskList)." })),
});

export const taskListSchema = Type.Object({});

export const taskIdSchema = Type.Object({
	backgroundTaskId: Type.String({ description: "The id a background Bash call returned (TaskList shows them)." }),
});

/** The shell Pi resolves now, in the shape the engine takes; undefined leaves the engine's /bin/bash -c. */
export function piShell(): { shell: string; args: string[] } | undefined {
	try {
		const c = getShellConfig();
		return c && typeof c.shell === "string" && c.shell ? { shell: c.shell, args: c.args ?? [] } : undefined;
	} catch {
		return undefined;
	}
}

const failed = (f: HostFailure): HostToolResult<HostFailure> => ({
	content: [{ type: "text", text: `${f.code}: ${f.message}` }],
	details: f,
	isError: true,
});

/** A Bash result: a failed command (TOOL_FAILED, TOOL_TIMEOUT) is an error result that keeps exitCode and both streams. */
export function bashResult(r: HostBashResult | HostFailure): HostToolResult<HostBashResult | HostFailure> {
	if (!("text" in r)) return failed(r);
	return { content: [{ type: "text", text: r.text }], details: r, isError: r.ok ? undefined : true };
}

function taskResult(r: HostTaskOk | HostTaskListOk | HostFailure): HostToolResult<HostTaskOk | HostTaskListOk | HostFailure> {
	if (!r.ok) return failed(r);
	return { content: [{ type: "text", text: r.text }], details: r };
}

let callSeq = 0;

/** Runs Bash with Pi's shell; Pi's AbortSignal kills a foreground command's tree (never a background task). */
export async function runBash(session: HostSession, params: Record<string, unknown>, signal?: AbortSignal, env?: Record<string, string>) {
	if (signal?.aborted) {
		return failed({ ok: false, code: "TOOL_FAILED", message: "The call was cancelled before it started; nothing ran." });
	}
	const callId = `bash-${process.pid}-${++callSeq}`;
	const onAbort = () => session.bashCancel(callId);
	signal?.addEventListener("abort", onAbort, { once: true });
	try {
		return bashResult(await session.bash(params, { callId, shell: piShell(), env }));
	} finally {
		signal?.removeEventListener("abort", onAbort);
	}
}

const TIMEOUT_TEXT =
	"timeout: seconds 1..21600, default 60; values above 21600 are milliseconds (clamped to 21600 s). On timeout the command's whole process tree is killed (TOOL_TIMEOUT).";

/** The four tool definitions, in registration order. */
export const hostBashTools: HostBashToolSpec[] = [
	{
		name: "Bash",
		label: "Bash",
		description:
			"Run a shell command in the workspace root with Pi's shell (bash -c) and the login shell's PATH; no TTY (stdin is empty). " +
			"stdout and stderr come back separately, each cut to its last 50 KiB on its own; a cut stream's full text is in a recovery file named in the result. " +
			"A non-zero exit is an error result (TOOL_FAILED) that still carries exitCode, stdout and stderr. " +
			TIMEOUT_TEXT +
			" runInBackground: true starts a background task and returns its backgroundTaskId at once (at most 10 running per session). " +
			"$PI_SCRATCH_DIR is a private scratch directory for this session.",
		promptSnippet: "Bash: run a shell command (separate stdout/stderr, timeout, or runInBackground with TaskWait/TaskStop)",
		parameters: bashSchema,
		risk: "high",
		run: (session, params, signal) => runBash(session, params, signal),
	},
	{
		name: "TaskList",
		label: "TaskList",
		description: "List this session's background tasks (started by Bash with runInBackground): id, status, exit code, output sizes.",
		promptSnippet: "TaskList: list this session's background tasks",
		parameters: taskListSchema,
		risk: "low",
		run: async (session) => taskResult(session.taskList()),
	},
	{
		name: "TaskWait",
		label: "TaskWait",
		description:
			"Wait up to 1 second for a background task to finish and show its state with the end of its stdout and of its stderr (the last 50 KiB of each; the task keeps 256 KiB, the full text is in the recovery file named). " +
			"Never stops the task; call again to keep waiting.",
		promptSnippet: "TaskWait: wait (at most 1 s) for a background task and show its output",
		parameters: taskIdSchema,
		risk: "low",
		run: async (session, params) => taskResult(await session.taskWait(params)),
	},
	{
		name: "TaskStop",
		label: "TaskStop",
		description:
			"Stop a background task: SIGTERM to its whole process tree, SIGKILL after 2 s. Returns its final state, or a running snapshot with stopRequested when it has not ended within 1 s.",
		promptSnippet: "TaskStop: stop a background task and its process tree",
		parameters: taskIdSchema,
		risk: "low",
		run: async (session, params) => taskResult(await session.taskStop(params)),
	},
];

/** `/pct status` lines for Bash under the Host Tools block: running background tasks against both caps. */
export function hostBashStatusLines(session: HostSession | undefined): string[] {
	if (!session) return [];
	const c = session.taskCounts();
	return [`background tasks: ${c.sessionRunning} running in this session (cap 10), ${c.processRunning} in this process (cap 64)`];
}
