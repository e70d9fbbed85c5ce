/**
 * Host Bash and background-task tool definitions (docs/spec/host-tools.md §Bash, docs/host.md "Bash"): TypeBox
 * schemas, descriptions and result shaping for `Bash`, `TaskList`, `TaskWait` and `TaskStop`. Everything that decides
 * (argument validation, the timeout rule, processes, truncation, recovery files, the caps, tree kills) is in Rust
 * (src/host/bash via `HostSession.bash/task*`); this file adapts Pi: `getShellConfig()`, the AbortSignal, and the
 * result object. Permissions, audit and registration come from the generic host-tool wrapper (src/pi/tools/host.ts):
 * `Bash` is high risk (mode-table row `bash`: confirmed in `ask` and `accept-edits`, auto-allowed only in `auto`), the
 * Task tools are low risk (row `read`: they only observe or stop this session's own tasks). The session's tasks are
 * stopped when the wrapper's runtime replaces or closes its HostSession (`closeTasks`).
 */
import { getShellConfig } from "@earendil-works/pi-coding-agent";
import type { AgentToolUpdateCallback } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { HostBashFailed, HostBashOk, HostFailure, HostSession, HostTaskListOk, HostTaskOk } from "../../../index.js";
import type { ToolkitHost } from "../host.ts";
import { hostRuntime, hostTool } from "./host.ts";
import { worktreeEnv } from "../worktree.ts";

/**
 * What the engine resolves for one of these tools, as the host-tool wrapper takes it: a failed command
 * (`HostBashFailed`, `ran: true`) is a `HostFailure` whose message is its whole text — `CODE: message`, exit code,
 * both streams — so the model still sees stdout and stderr when the wrapper turns the failure into an error result.
 */
export type HostBashNative = HostBashOk | HostBashFailed | HostTaskOk | HostTaskListOk | HostFailure;

/** One host tool as the wrapper registers it. */
export interface HostBashToolSpec {
	name: "Bash" | "TaskList" | "TaskWait" | "TaskStop";
	label: string;
	description: string;
	promptSnippet: string;
	parameters: typeof bashSchema | typeof taskListSchema | typeof taskIdSchema;
	/** The mode table's row: `bash` is confirmed per mode (auto-allowed only in `auto`); `read` never asks. */
	risk: "bash" | "read";
	call(session: HostSession, params: Record<string, unknown>, signal?: AbortSignal, onUpdate?: AgentToolUpdateCallback<unknown>): Promise<HostBashNative>;
}

export const bashSchema = Type.Object({
	command: Type.String({ description: "The command line." }),
	timeout: Type.Optional(Type.Number({ description: "Seconds, 1..21600 (default 60); larger values are milliseconds.", minimum: 1, maximum: 100_000_000 })),
	runInBackground: Type.Optional(Type.Boolean({ description: "A background task (no timeout); TaskWait, TaskList, TaskStop follow it." })),
	description: Type.Optional(Type.String({ description: "Shown in TaskList." })),
});

export const taskListSchema = Type.Object({});

export const taskIdSchema = Type.Object({
	backgroundTaskId: Type.String({ description: "The id a background Bash call returned." }),
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

let callSeq = 0;

/** How often a running foreground command's output is read for Pi's row (docs/host.md "Live output"). */
export const LIVE_POLL_MS = 250;
/** Bytes of each stream a live update carries (the collapsed row shows the last few lines). */
export const LIVE_BYTES = 4096;

/**
 * Runs Bash with Pi's shell; Pi's AbortSignal kills a foreground command's tree (never a background task). With
 * `onUpdate`, the end of the running command's output is sent as a partial result whenever it grew (polled with
 * `bashPeek`, at most every LIVE_POLL_MS).
 */
export async function runBash(
	session: HostSession,
	params: Record<string, unknown>,
	signal?: AbortSignal,
	env?: Record<string, string>,
	onUpdate?: AgentToolUpdateCallback<unknown>,
): Promise<HostBashNative> {
	if (signal?.aborted) return { ok: false, code: "TOOL_FAILED", message: "The call was cancelled before it started; nothing ran." };
	const callId = `bash-${process.pid}-${++callSeq}`;
	const onAbort = () => session.bashCancel(callId);
	signal?.addEventListener("abort", onAbort, { once: true });
	let seen = -1;
	const poll =
		typeof onUpdate === "function" && params.runInBackground !== true
			? setInterval(() => {
					try {
						const p = session.bashPeek(callId, LIVE_BYTES);
						if (!p || p.stdoutBytes + p.stderrBytes === seen) return;
						seen = p.stdoutBytes + p.stderrBytes;
						onUpdate({ content: [{ type: "text", text: [p.stdout, p.stderr].filter(Boolean).join("\n") }], details: { live: true, ...p } });
					} catch {
						// A UI that cannot take an update must not fail the command.
					}
				}, LIVE_POLL_MS)
			: undefined;
	try {
		return await session.bash(params, { callId, shell: piShell(), env });
	} finally {
		if (poll) clearInterval(poll);
		signal?.removeEventListener("abort", onAbort);
	}
}

// The model-facing texts are budgeted (docs/rules.md "What the tool list costs").
const TIMEOUT_TEXT = "A timeout kills the whole process tree.";

/** The four tool definitions, in registration order. */
export const hostBashTools: HostBashToolSpec[] = [
	{
		name: "Bash",
		label: "Bash",
		description:
			"Run a shell command in the workspace root (login PATH; no TTY, empty stdin). stdout and stderr come back " +
			"separately, each cut to its last 50 KiB (full text in the file named). " +
			TIMEOUT_TEXT +
			" For servers and watchers use runInBackground, not `&`. $PI_SCRATCH_DIR is a private scratch directory.",
		promptSnippet: "Run a shell command (separate stdout/stderr, timeout, or runInBackground with TaskWait/TaskStop)",
		parameters: bashSchema,
		risk: "bash",
		call: (session, params, signal, onUpdate) => runBash(session, params, signal, undefined, onUpdate),
	},
	{
		name: "TaskList",
		label: "TaskList",
		description: "List this session's background tasks (started by Bash with runInBackground): id, status, exit code, output sizes.",
		promptSnippet: "List this session's background tasks",
		parameters: taskListSchema,
		risk: "read",
		call: async (session) => session.taskList(),
	},
	{
		name: "TaskWait",
		label: "TaskWait",
		description:
			"Wait up to 1 s for a background task and show its state and the last 50 KiB of its stdout and stderr (the full text is in the file named). Never stops it; call again to keep waiting.",
		promptSnippet: "Wait (at most 1 s) for a background task and show its output",
		parameters: taskIdSchema,
		risk: "read",
		call: (session, params) => session.taskWait(params),
	},
	{
		name: "TaskStop",
		label: "TaskStop",
		description:
			"Stop a background task and its process tree (SIGTERM, SIGKILL after 2 s). Returns its final state, or a running snapshot with stopRequested.",
		promptSnippet: "Stop a background task and its process tree",
		parameters: taskIdSchema,
		// Killing a process tree acts like a command: the bash row (docs/permissions.md, Rust `risk_of`).
		risk: "bash",
		call: (session, params) => session.taskStop(params),
	},
];

/** Registers Bash, TaskList, TaskWait and TaskStop through the host-tool wrapper (admitted with the host tools). */
export function register(host: ToolkitHost): void {
	// After every sync (session start, /pct reload, model change): once Bash is admitted, the session's login-PATH
	// probe and the shell watchdog start in the background, so the first Bash call waits for neither; with Bash off
	// nothing runs (docs/host.md "Bash"). Idempotent in the engine.
	host.lifecycle("hostBash", {
		retry: async () => {
			if (!host.isAdmitted("Bash")) return;
			hostRuntime(host).session?.prewarmBash();
		},
	});
	for (const t of hostBashTools) {
		hostTool(host, {
			name: t.name,
			label: t.label,
			description: t.description,
			promptSnippet: t.promptSnippet,
			parameters: t.parameters,
			risk: t.risk,
			command: t.name === "Bash" ? (p) => (typeof p.command === "string" ? p.command : "") : undefined,
			// Bash in a worktree session gets PI_PORT, PI_PROJECT_ROOT and PI_WORKTREE_ROOT (docs/worktrees.md).
			run: ({ session, params, signal, onUpdate }) => (t.name === "Bash" ? runBash(session, params, signal, worktreeEnv(host), onUpdate) : t.call(session, params, signal, onUpdate)),
		});
	}
}
