/**
 * Shell Sessions glue (docs/spec/toolkit.md §5, §9, §10): the atomic pair `exec_command` / `write_stdin`.
 * Everything that decides (validation, limits, processes, output, recovery files, the permission table) is in Rust
 * (src/shell, src/output, src/host/permission.rs); this file only adapts Pi: schemas, getShellConfig(), ctx.cwd, the
 * permission card (src/pi/permission.ts), the embedder's hooks, AbortSignal and the session lifecycle. The native manager is published as `host.shared.get("shell")` for Code Mode.
 */
import { getShellConfig } from "@earendil-works/pi-coding-agent";
import type { AgentToolUpdateCallback, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ShellContext, ShellFailure } from "../../../index.js";
import { failed, ToolFailure, type ToolErrorCode } from "../failure.ts";
import { Type } from "typebox";
import type { InvocationCall, ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { runInvocationHooks } from "../hooks.ts";
import { auditCall, permissionGate } from "../permission.ts";
import { clockEnd, clockStart, clockWaiting } from "../render/format.ts";
import { hostRuntime } from "./host.ts";
import { withWorktreeEnv } from "../worktree.ts";
import { LIVE_BYTES, LIVE_POLL_MS } from "./host-bash.ts";

/** The gate message when the pair is not admitted. */
export const SHELL_NOT_ENABLED =
	"Shell Sessions are not enabled. Enable shellSessions in /pct config (or an execution rule with shell), then retry.";

const MANAGER_REPLACED = "The Pi session this call belonged to ended or was replaced while the invocation hooks ran; nothing was started.";

const ABORTED_BEFORE = "The call was cancelled before it started; nothing ran.";

// The model-facing texts are budgeted (docs/rules.md "What the tool list costs"): the schema shows one spelling
// of each field; the other spellings (command, cwd, yieldTimeMs, sessionId, input) and maxOutputBytes are still
// accepted, because Pi passes fields the schema does not list through to execute and Rust folds them.

const yieldField = () => Type.Optional(Type.Number({ description: "ms to wait, 0..60000 (default 10000); not a timeout." }));
const tokensField = () => Type.Optional(Type.Number({ description: "Output budget in tokens, 256..65536 (default 12800)." }));

/** exec_command parameters: both spellings accepted; unsupported Codex fields stay open so Rust refuses them by name. */
export const execCommandSchema = Type.Object({
	cmd: Type.Optional(Type.String({ description: "The command line." })),
	workdir: Type.Optional(Type.String({ description: "Working directory, relative to the current one; must exist." })),
	yield_time_ms: yieldField(),
	max_output_tokens: tokensField(),
});

/** write_stdin parameters. The handle is typed loosely on purpose: a numeric handle must reach Rust and be refused, not coerced. */
export const writeStdinSchema = Type.Object({
	session_id: Type.Optional(Type.Unknown({ description: "The session_id string exec_command returned." })),
	chars: Type.Optional(Type.String({ description: "Written to stdin verbatim (no newline added); empty = just poll." })),
	closeStdin: Type.Optional(Type.Boolean({ description: "Close stdin (EOF) after writing." })),
	terminate: Type.Optional(Type.Boolean({ description: "Stop the command." })),
	yield_time_ms: yieldField(),
	max_output_tokens: tokensField(),
});

/** The shell Pi resolves, or null when none is usable (status reason shell-unavailable). */
export function resolveShell(): { shell: string; args: string[]; commandTransport?: "argv" | "stdin" } | null {
	try {
		const c = getShellConfig();
		return c && typeof c.shell === "string" && c.shell ? c : null;
	} catch {
		return null;
	}
}

/** The `/pct status` line when the exit watchdog (docs/shell.md "When Node exits") could not be started. */
export function watchdogLine(reason: string): string {
	return (
		`exit cleanup: unavailable (${reason}). Commands still run, but if Pi ends without a session shutdown ` +
		"(crash, kill) nothing stops the commands still running or deletes their recovery files. Stop long-running " +
		"commands with write_stdin terminate before quitting, and make sure /bin/sh can be started: the next command " +
		"retries."
	);
}

/** Extra `/pct status` lines for Shell Sessions (composed into the status block by the core). */
export function shellStatusLines(host: Pick<ToolkitHost, "shared">): string[] {
	const m = host.shared.get("shell") as InstanceType<typeof native.ShellManager> | undefined;
	const s = m?.status();
	const lines = ["transport: pipes only, no TTY; a command starts once and is never replayed"];
	if (!resolveShell()) lines.push("shell: unavailable (shell-unavailable)");
	if (s) {
		lines.push(`jobs: ${s.running} running, ${s.unreadTerminal} finished and unread`);
		lines.push(`cleanup pending: ${s.cleanupPending ? "yes" : "no"}`);
		lines.push(`recovery files: ${s.recoveryFiles}`);
		if (s.watchdogFailure) lines.push(watchdogLine(s.watchdogFailure));
	}
	return lines;
}

let callSeq = 0;

/**
 * Live output of a running call (docs/shell.md "Live output"): every LIVE_POLL_MS the end of the output the call will
 * return (`peek`, at most LIVE_BYTES of each stream, consumes nothing) is sent as a partial result whenever it grew.
 * The engine never waits for this reader, so a slow UI cannot back up the command's pipes.
 */
export function livePoll(
	mgr: Pick<InstanceType<typeof native.ShellManager>, "peek">,
	callId: string,
	onUpdate: AgentToolUpdateCallback<unknown>,
): ReturnType<typeof setInterval> {
	let seen = -1;
	return setInterval(() => {
		try {
			const p = mgr.peek(callId, LIVE_BYTES);
			if (!p || p.stdoutBytes + p.stderrBytes === seen) return;
			seen = p.stdoutBytes + p.stderrBytes;
			onUpdate({ content: [{ type: "text", text: [p.stdout, p.stderr].filter(Boolean).join("\n") }], details: { live: true, ...p } });
		} catch {
			// A UI that cannot take an update must not fail the command.
		}
	}, LIVE_POLL_MS);
}

/** A fresh manager whose default shell (used by Code Mode's nested calls) is the one Pi resolves now. */
function newManager() {
	const m = new native.ShellManager();
	const shell = resolveShell();
	if (shell) m.setShell(shell);
	return m;
}

/** A failure the engine resolved (ShellFailure): its own text is what the model reads. */
class ShellFailed extends ToolFailure {
	readonly text: string;
	constructor(f: ShellFailure) {
		super(f.code, f.message);
		this.text = f.text;
	}
	override result(callId?: string) {
		return failed(this.code, this.text, {}, false, callId);
	}
}

export function register(host: ToolkitHost): void {
	let manager = newManager();
	host.shared.set("shell", manager);

	/**
	 * The permission gate and its audit line around one call (docs/permissions.md): exec_command and a write_stdin
	 * that sends input are command risk (a card per command in ask and accept-edits); a poll, closing stdin or
	 * terminating is low risk. Nothing runs unless the gate allows it.
	 */
	async function gated(
		tool: "exec_command" | "write_stdin",
		toolCallId: string,
		params: Record<string, unknown>,
		signal: AbortSignal | undefined,
		ctx: ExtensionContext | undefined,
		onUpdate?: AgentToolUpdateCallback<unknown>,
	) {
		if (!host.isAdmitted(tool)) throw new Error(SHELL_NOT_ENABLED);
		const t0 = performance.now();
		clockWaiting(toolCallId);
		const rt = hostRuntime(host);
		try {
			if (ctx) rt.for(ctx);
		} catch {
			// A cwd that is not a directory: the decision and audit still work; the command reports the cwd itself.
		}
		const norm = tool === "exec_command" ? manager.normalizeExec(params) : manager.normalizeWrite(params);
		if (!norm.ok) return failed(norm.code, norm.text, {}, false, toolCallId);
		const preview = "cmd" in norm.request ? `$ ${norm.request.cmd}` : norm.request.input ? `stdin of ${norm.request.sessionId}: ${norm.request.input}` : undefined;
		const risk = tool === "exec_command" || ("input" in norm.request && norm.request.input !== "") ? "bash" : "read";
		const command = "cmd" in norm.request ? norm.request.cmd : risk === "bash" ? norm.request.input : undefined;
		const gate = await permissionGate(host, rt, ctx, { tool, risk, preview, signal, command, cwd: ctx?.cwd });
		let runMs = 0;
		// The audit line takes the failure's code from the failure itself (a ToolFailure), never from its text.
		let code: ToolErrorCode | undefined;
		try {
			if (!gate.ok) throw new ToolFailure(gate.code ?? "TOOL_DENIED", gate.message ?? "");
			const r0 = performance.now();
			clockStart(toolCallId);
			try {
				return await run(tool, params, signal, ctx, onUpdate);
			} finally {
				runMs = performance.now() - r0;
				clockEnd(toolCallId);
			}
		} catch (e) {
			if (e instanceof ToolFailure) {
				code = e.code;
				return e.result(toolCallId);
			}
			code = "TOOL_FAILED";
			throw e;
		} finally {
			await auditCall(host, rt, { toolCallId, tool, args: params, gate, runMs, totalMs: performance.now() - t0, ok: code === undefined, errorCode: code });
		}
	}

	async function run(
		tool: "exec_command" | "write_stdin",
		params: Record<string, unknown>,
		signal: AbortSignal | undefined,
		ctx: ExtensionContext | undefined,
		onUpdate?: AgentToolUpdateCallback<unknown>,
	) {
		if (!host.isAdmitted(tool)) throw new Error(SHELL_NOT_ENABLED);
		if (signal?.aborted) throw new ToolFailure("aborted", ABORTED_BEFORE);
		const mgr = manager;
		const norm = tool === "exec_command" ? mgr.normalizeExec(params) : mgr.normalizeWrite(params);
		if (!norm.ok) throw new ShellFailed(norm);
		const cwd: string = ctx?.cwd ?? process.cwd();
		const call: InvocationCall = { tool, path: "direct", cwd };
		if ("sessionId" in norm.request) call.sessionId = norm.request.sessionId;
		const hooked = await runInvocationHooks(host.hooks, call);
		if (!hooked.ok) throw new ToolFailure("policy-denied", `${hooked.reason} Nothing was started.`);
		const env = withWorktreeEnv(host, hooked.env);
		// Hooks may be async: the capability or the session may have changed meanwhile.
		if (!host.isAdmitted(tool)) throw new Error(SHELL_NOT_ENABLED);
		if (mgr !== manager) throw new ToolFailure("manager-closed", MANAGER_REPLACED);
		if (signal?.aborted) throw new ToolFailure("aborted", ABORTED_BEFORE);
		const context: ShellContext = { cwd, env, stopOnCancel: true };
		if (tool === "exec_command") {
			const shell = resolveShell();
			if (!shell) throw new ToolFailure("shell-unavailable", "Pi could not resolve a usable local shell (getShellConfig failed); nothing was started.");
			context.shell = shell;
		}
		const callId = `${tool}-${process.pid}-${++callSeq}`;
		const onAbort = () => mgr.cancel(callId);
		signal?.addEventListener("abort", onAbort, { once: true });
		const poll = typeof onUpdate === "function" ? livePoll(mgr, callId, onUpdate) : undefined;
		try {
			const res = tool === "exec_command" ? await mgr.exec(params, context, callId) : await mgr.writeStdin(params, context, callId);
			if (!res.ok) throw new ShellFailed(res);
			return { content: [{ type: "text" as const, text: res.text }], details: res.details };
		} finally {
			if (poll) clearInterval(poll);
			signal?.removeEventListener("abort", onAbort);
		}
	}

	host.pi.registerTool({
		name: "exec_command",
		label: "exec_command",
		description:
			"Run a shell command once; stdin, stdout and stderr are pipes (no TTY). Returns when it ends " +
			"or after yield_time_ms; status `running` comes with a session_id: continue with write_stdin (running with " +
			"output is not completion).",
		promptSnippet: "Run a shell command (pipes, no TTY); long or interactive ones continue with write_stdin",
		parameters: execCommandSchema,
		execute: (id, params, signal, onUpdate, ctx) => gated("exec_command", id, params, signal, ctx, onUpdate),
	});

	host.pi.registerTool({
		name: "write_stdin",
		label: "write_stdin",
		description: "Continue an exec_command session: poll for new output, write to its stdin, close stdin or terminate it.",
		promptSnippet: "Poll, feed stdin, close stdin or terminate an exec_command session",
		parameters: writeStdinSchema,
		execute: (id, params, signal, onUpdate, ctx) => gated("write_stdin", id, params, signal, ctx, onUpdate),
	});

	host.lifecycle("shellSessions", {
		// Switch/fork preflight: stop every job; incomplete cleanup vetoes and keeps the handles for a retry.
		beforeSwitch: async () => (await manager.cleanup()).ok === true,
		// A real session_shutdown: close this session's manager, delete only its own recovery files, start fresh.
		shutdown: async () => {
			const old = manager;
			manager = newManager();
			host.shared.set("shell", manager);
			await old.close();
			old.deleteRecoveryFiles();
		},
		// Feature disabled: clean up Shell only; files stay until session_shutdown.
		disabled: async () => {
			await manager.cleanup();
		},
	});
}
