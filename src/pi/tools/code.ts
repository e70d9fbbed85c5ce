/**
 * Code Mode glue (docs/spec/toolkit.md §7, §9, §10): the atomic pair `exec` / `wait`.
 * Cells, limits, validation, nested-call checks and rendering are in Rust (src/code); nested shell and patch
 * calls go Rust-to-Rust. This file only adapts Pi: schemas (with the freeform grammar variant), admission,
 * the permission gate of nested calls (src/pi/permission.ts, answered through the native gate callback), the
 * embedder's hooks, progress through onUpdate, Pi's AbortSignal, and the session lifecycle.
 */
import { failedWith } from "../failure.ts";
import { cardText } from "../render/card.ts";

/** The engine's cut of a nested call's preview (src/code/limits.rs `APPROVAL_PREVIEW_BYTES`). */
const NESTED_PREVIEW_BYTES = 800;
import { getShellConfig } from "@earendil-works/pi-coding-agent";
import type { AgentToolUpdateCallback, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { CodeManager, GateAnswer, GateRequest, ProgressRecord, ShellConfig, ShellManager } from "../../../index.js";
import { Type } from "typebox";
import type { InvocationCall, ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { runInvocationHooks } from "../hooks.ts";
import { reviewTarget } from "../review.ts";
import { errorText } from "../messages.ts";
import { auditCall, permissionGate } from "../permission.ts";
import { hostRuntime } from "./host.ts";
import { underQueues } from "../file-queue.ts";
import { safeConfirm } from "../render/safe.ts";
import { withWorktreeEnv, worktreeRefusal } from "../worktree.ts";

/** The gate message when the pair is not admitted. */
export const CODE_NOT_ENABLED =
	"Code Mode is not enabled. Enable codeMode in /pct config (or an execution rule with code), then retry.";

const ABORTED_BEFORE = "The call was cancelled before it started; no cell ran.";

/** Lark grammar of the freeform variant: the raw program, optionally led by the pragma line. */
export const EXEC_SOURCE_GRAMMAR = String.raw`
start: pragma_source | plain_source
pragma_source: PRAGMA_LINE NEWLINE SOURCE
plain_source: SOURCE

PRAGMA_LINE: /[ \t]*\/\/ @exec:[^\r\n]*/
NEWLINE: /\r?\n/
SOURCE: /[\s\S]+/
`;

const NESTED = ["exec_command", "write_stdin", "apply_patch"] as const;
// The model-facing texts are budgeted (docs/rules.md "What the tool list costs"): the schema shows one spelling
// of each field; yieldTimeMs, cellId, max_output_tokens (wait) and maxOutputBytes are still accepted, because Pi
// passes fields the schema does not list through to execute and Rust folds them.
const yieldField = Type.Optional(Type.Number({ description: "ms to wait, 0..60000 (default 10000); not a timeout." }));

/** exec parameters. `code` is the only required field, so grammar-capable providers send the raw program. */
export const execSchema = Type.Object({
	code: Type.String({ description: 'Raw JavaScript. May start with `// @exec: {"yield_time_ms": N, "max_output_tokens": M}`.' }),
	uses: Type.Optional(Type.Array(Type.String(), { description: "Tools the cell may call; omitted = all, [] = none." })),
	yield_time_ms: yieldField,
	max_output_tokens: Type.Optional(Type.Number({ description: "Output budget in tokens, 256..65536 (default 12800)." })),
});

/** wait parameters. The handle is typed loosely on purpose: a numeric handle must reach Rust and be refused. */
export const waitSchema = Type.Object({
	cell_id: Type.Optional(Type.Unknown({ description: "The cell ID string exec returned." })),
	terminate: Type.Optional(Type.Boolean({ description: "Stop the cell; its shells keep running." })),
	yield_time_ms: yieldField,
	max_tokens: Type.Optional(Type.Number({ description: "Output budget in tokens, 256..65536 (default 12800)." })),
});

const EXEC_DESCRIPTION =
	"Run a JavaScript code cell once, as the body of an async function (top-level await and return work). " +
	"Globals: tools.exec_command(args), tools.write_stdin(args), tools.apply_patch(patch) (those in `uses`; each " +
	"returns a promise), print, console.log, text(value) (no newline). No timers, import, require, " +
	"process, fetch or state across cells. After yield_time_ms it answers `Script running with cell ID <id>.`: continue " +
	"with wait.";

const WAIT_DESCRIPTION = "Wait for a code cell started by exec and read its new output, or stop it with terminate.";

/** Pi's shell for nested exec_command, or undefined (the nested call then fails shell-unavailable). */
function resolveShell(): ShellConfig | undefined {
	try {
		const c = getShellConfig();
		return c && typeof c.shell === "string" && c.shell ? c : undefined;
	} catch {
		return undefined;
	}
}

/** One progress record as a short line (names and ids only). */
function progressLine(rec: ProgressRecord): string {
	const who = `cell ${rec.cellId}: ${rec.tool}${rec.sessionId ? ` (${rec.sessionId})` : ""}`;
	if (rec.event === "start") return `${who} started`;
	if (rec.event === "waiting-approval") return `${who} waiting for approval`;
	return `${who} ${rec.ok ? "ok" : `failed (${rec.code})`}`;
}

let callSeq = 0;

/**
 * Pi's file mutation queue held for nested patches: `lock` takes the queue for every path (sorted, one global order)
 * and holds it until `unlock`; `releaseAll` frees whatever an unlock never reached (a failed callback, a dropped
 * task), so Pi's own edit/write never wait on a lease nobody will release.
 */
function leaseTable() {
	const leases = new Map<string, () => void>();
	let seq = 0;

	/** Fails closed: if the queue cannot be taken the answer is a refusal and Rust does not run the mutation. */
	async function lock(paths: string[]): Promise<GateAnswer> {
		let release!: () => void;
		const released = new Promise<void>((r) => (release = r));
		let acquired!: () => void;
		const held = new Promise<void>((r) => (acquired = r));
		const failed = underQueues(paths, () => (acquired(), released)).then(
			() => undefined,
			(e: unknown) => e ?? new Error("the file mutation queue failed"),
		);
		const outcome = await Promise.race([held.then(() => undefined), failed]);
		if (outcome !== undefined) {
			release();
			return {
				allow: false,
				code: "unavailable",
				reason: `Pi's file mutation queue failed: ${outcome instanceof Error ? outcome.message : String(outcome)}`,
			};
		}
		const lease = `lease-${++seq}`;
		leases.set(lease, release);
		return { allow: true, lease };
	}

	function unlock(lease: string | undefined): GateAnswer {
		const release = leases.get(lease ?? "");
		leases.delete(lease ?? "");
		try {
			release?.();
		} catch {
			// Releasing resolves a promise; nothing else can hold the queue once it is out of the map.
		}
		return { allow: true };
	}

	function releaseAll(): void {
		const held = [...leases.values()];
		leases.clear();
		for (const release of held) {
			try {
				release();
			} catch {
				// see unlock
			}
		}
	}

	return { lock, unlock, releaseAll, size: () => leases.size };
}

/** What the nested gate needs from the registration: admission and the ctx of the latest exec/wait. */
interface GateHost {
	host: ToolkitHost;
	leases: ReturnType<typeof leaseTable>;
	nestedAdmitted: (tool: string) => boolean;
	/** The ctx of the latest exec/wait: its UI answers approvals of nested apply_patch (dispatch time). */
	lastCtx: () => ExtensionContext | null;
}

/** The answer when a nested call's tool is not admitted (now, or any more after an async hook). */
function disabled(tool: string): GateAnswer {
	return {
		allow: false,
		code: "adapter-disabled",
		reason: `Tool "${tool}" is not enabled right now; enable it in /pct config or stop calling it.`,
	};
}

/**
 * The native gate callback (src/code/adapters.rs): each nested call's phases — `lock`/`unlock` of the file mutation
 * queue, `policy` (permission card, then the embedder's hooks) and `approval` (the nested apply_patch dialog).
 */
function nestedGate(g: GateHost): (req: GateRequest) => Promise<GateAnswer> {
	const { host, leases, nestedAdmitted } = g;
	let nestedSeq = 0;

	/** The permission decision (and card) of one nested call; a refusal answer, or null when it may run. */
	async function nestedPermission(req: GateRequest): Promise<GateAnswer | null> {
		const t0 = performance.now();
		const rt = hostRuntime(host);
		const risk = req.tool === "apply_patch" ? "edit" : req.tool === "write_stdin" && req.sendsInput === false ? "read" : "bash";
		const via = `code cell ${req.cellId}`;
		// A nested command's text is scanned for sensitive paths like a direct one's (docs/permissions.md).
		const command = risk === "bash" ? (req.preview ?? "") : undefined;
		// A nested apply_patch shows its direct twin's card (the files and their hunks) when its preview is the whole patch;
		// a preview that may have been cut (the engine cuts at a character boundary, so within 3 bytes of the limit) is
		// shown as text with the cut marked, so no count on the card is a guess.
		const whole = req.tool === "apply_patch" && req.preview !== undefined && req.preview !== null && Buffer.byteLength(req.preview) <= NESTED_PREVIEW_BYTES - 4;
		const title = whole ? () => cardText("apply_patch", { patch: req.preview }, null, g.lastCtx()?.cwd ?? process.cwd()) : undefined;
		const gate = await permissionGate(host, rt, g.lastCtx() ?? undefined, { tool: req.tool, risk, preview: req.preview ?? undefined, title, via, command, cwd: req.cwd });
		await auditCall(host, rt, {
			toolCallId: `${req.cellId}/nested-${++nestedSeq}`,
			tool: req.tool,
			args: { via, preview: req.preview ?? "" },
			gate,
			runMs: 0,
			totalMs: performance.now() - t0,
			ok: gate.ok,
			errorCode: gate.code,
		});
		if (gate.ok) return null;
		// The nested failure codes keep their names: no UI to ask, the user said no, or a policy (Plan) refusal.
		const code = gate.decision === "denied-headless" ? "approval-unavailable" : gate.decision === "deny" ? "approval-denied" : "policy-denied";
		return { allow: false, code, reason: `${gate.code}: ${gate.message}` };
	}

	/** The policy phase: admission, the permission card of the direct twin, then the embedder's hooks. */
	async function policy(req: GateRequest): Promise<GateAnswer> {
		const call: InvocationCall = { tool: req.tool, path: "nested", cwd: req.cwd, cellId: req.cellId };
		if (req.sessionId) call.sessionId = req.sessionId;
		if (!nestedAdmitted(req.tool)) return disabled(req.tool);
		// A nested call of a worktree session whose folder went missing changes nothing (docs/worktrees.md).
		const missing = worktreeRefusal(host.agentDir, req.cwd);
		if (missing) return { allow: false, code: "policy-denied", reason: missing };
		// The permission policy (docs/permissions.md): a nested call gets exactly the decision and card of its
		// direct twin, one card at a time, before the embedder's hooks run.
		const refusal = await nestedPermission(req);
		if (refusal) return refusal;
		const hooked = await runInvocationHooks(host.hooks, call);
		if (!hooked.ok) return { allow: false, code: "policy-denied", reason: `${hooked.reason} Nothing was started.` };
		const env = withWorktreeEnv(host, hooked.env);
		// Hooks may be async: the capability may have been disabled meanwhile.
		if (!nestedAdmitted(req.tool)) return disabled(req.tool);
		return {
			allow: true,
			env,
			// The permission card above is the approval: `codeMode.approvalMode` no longer adds a second one
			// (docs/permissions.md "Code cells").
			needsApproval: false,
			shell: req.tool === "exec_command" ? resolveShell() : undefined,
			// A nested patch records its review changes in the outer exec's session (docs/review.md).
			review: req.tool === "apply_patch" ? reviewTarget(host.agentDir, g.lastCtx()) : undefined,
		};
	}

	/** The approval phase: the nested apply_patch dialog in the UI of the latest exec/wait. */
	async function approval(req: GateRequest): Promise<GateAnswer> {
		const ctx = g.lastCtx();
		if (!ctx?.hasUI) {
			return {
				allow: false,
				code: "approval-unavailable",
				reason: 'No interactive UI can approve apply_patch from a code cell; nothing was changed. Set Code Mode nested apply_patch approval to "always" in /pct config, or run Pi with a UI.',
			};
		}
		const ok = await safeConfirm(ctx.ui, "Code Mode nested tool", `Code Mode cell ${req.cellId} will run apply_patch.\n\n${req.preview ?? ""}`);
		if (!ok) return { allow: false, code: "approval-denied", reason: "The user declined this apply_patch; nothing was changed." };
		if (!nestedAdmitted("apply_patch")) return disabled("apply_patch");
		return { allow: true };
	}

	return async function gate(req: GateRequest): Promise<GateAnswer> {
		if (req.phase === "lock") {
			try {
				return await leases.lock(req.paths ?? []);
			} catch (e: unknown) {
				return { allow: false, code: "unavailable", reason: `Pi's file mutation queue failed: ${errorText(e)}` };
			}
		}
		if (req.phase === "unlock") return leases.unlock(req.lease);
		try {
			return req.phase === "policy" ? await policy(req) : await approval(req);
		} catch (e: unknown) {
			return {
				allow: false,
				code: req.phase === "approval" ? "approval-unavailable" : "policy-denied",
				reason: `The ${req.phase === "approval" ? "approval dialog" : "invocation hook"} failed (${errorText(e)}); nothing was started.`,
			};
		}
	};
}

/**
 * An unconfirmed cleanup (docs/spec/toolkit.md §7, §10): the Rust manager refuses new cells (`cleanup-incomplete`)
 * while its kept cells stay reachable with wait/terminate; `/pct reload`, a model change and a session start
 * retry it (the `retry` lifecycle callback), and until one succeeds `/pct status` shows it on the `Apply error:`
 * line and the diagnostics record has cleanupPending.
 */
function cleanupTracker(manager: () => CodeManager | null, releaseLeases: () => void) {
	let pending = false;
	let message = "";
	let running: Promise<boolean> | null = null;
	const cleanup = (): Promise<boolean> => {
		// One cleanup at a time: a retry while one runs shares its answer.
		running ??= (async () => {
			try {
				const m = manager();
				const r = m ? await m.cleanup() : { ok: true as const };
				pending = r.ok !== true;
				message = "message" in r ? String(r.message ?? "") : "";
			} catch (e: unknown) {
				pending = true;
				message = errorText(e);
			} finally {
				releaseLeases();
				running = null;
			}
			return !pending;
		})();
		return running;
	};
	return {
		cleanup,
		pending: () => pending,
		forget: () => {
			pending = false;
		},
		applyError: () => (pending ? `cleanup-incomplete (${message || "Code Mode cells did not confirm that they stopped"})` : null),
	};
}

/** `codeMode.maxCellSeconds` from the config in force, or undefined (the engine's default) when it has none. */
function maxCell(host: ToolkitHost): number | undefined {
	try {
		const s = host.config().codeMode?.maxCellSeconds;
		return typeof s === "number" ? s : undefined;
	} catch {
		return undefined;
	}
}

export function register(host: ToolkitHost): void {
	let manager: CodeManager | null = null;
	let boundShell: unknown = null;
	let lastCtx: ExtensionContext | null = null;

	// Nested adapters are admitted like the direct tools; a host that distinguishes nested-only routes (execution
	// rules: patch only inside cells) may offer isNestedAdmitted.
	const nestedAdmitted = (tool: string) =>
		host.isNestedAdmitted ? host.isNestedAdmitted(tool) : host.isAdmitted(tool);
	const leases = leaseTable();
	const gate = nestedGate({ host, leases, nestedAdmitted, lastCtx: () => lastCtx });

	/** The manager, bound to the current shell manager, with admission refreshed. */
	function current(): CodeManager {
		if (!manager) {
			manager = new native.CodeManager(gate);
			boundShell = null;
			host.shared.set("code", manager); // for /pct jobs and the footer status (src/pi/status.ts)
		}
		const shell = host.shared.get("shell") as ShellManager | undefined;
		if (shell && shell !== boundShell && typeof manager.attachShell === "function") {
			manager.attachShell(shell);
			boundShell = shell;
		}
		manager.setAdmitted(NESTED.filter((n) => nestedAdmitted(n)));
		return manager;
	}

	async function run(
		tool: "exec" | "wait",
		params: Record<string, unknown>,
		signal: AbortSignal | undefined,
		onUpdate: AgentToolUpdateCallback<unknown> | undefined,
		ctx: ExtensionContext,
		toolCallId?: string,
	) {
		if (!host.isAdmitted(tool)) throw new Error(CODE_NOT_ENABLED);
		if (signal?.aborted) return failedWith("aborted", ABORTED_BEFORE, {}, false, toolCallId);
		lastCtx = ctx;
		const m = current();
		const callId = `${tool}-${process.pid}-${++callSeq}`;
		const onAbort = () => m.abort(callId);
		signal?.addEventListener("abort", onAbort, { once: true });
		const progress =
			typeof onUpdate === "function"
				? (rec: ProgressRecord) => {
						try {
							onUpdate({ content: [{ type: "text" as const, text: progressLine(rec) }], details: { progress: rec } });
						} catch {
							// A UI that cannot take an update must not fail the cell.
						}
					}
				: undefined;
		try {
			// The cell's time limit (docs/code.md "Limits"); the engine's default when the config has none.
			const maxCellSeconds = tool === "exec" ? maxCell(host) : undefined;
			const options = { cwd: ctx?.cwd ?? process.cwd(), callId, ...(maxCellSeconds === undefined ? {} : { maxCellSeconds }) };
			const res = tool === "exec" ? await m.exec(params, options, progress) : await m.wait(params, options, progress);
			if (!res.ok) {
				const { ok: _ok, code, message, ...fields } = res;
				return failedWith(code, message, fields, false, toolCallId);
			}
			const { text, ok: _ok, ...details } = res;
			return { content: [{ type: "text" as const, text }], details };
		} finally {
			signal?.removeEventListener("abort", onAbort);
		}
	}

	host.pi.registerTool({
		name: "exec",
		label: "exec",
		description: EXEC_DESCRIPTION,
		promptSnippet: "Run a JavaScript code cell that orchestrates exec_command / write_stdin / apply_patch; continue long ones with wait",
		parameters: execSchema,
		constrainedSampling: { type: "grammar", variants: { openai_lark: EXEC_SOURCE_GRAMMAR } },
		execute: (id, params, signal, onUpdate, ctx) => run("exec", params, signal, onUpdate, ctx, id),
	});

	host.pi.registerTool({
		name: "wait",
		label: "wait",
		description: WAIT_DESCRIPTION,
		promptSnippet: "Continue or terminate a running code cell",
		parameters: waitSchema,
		execute: (id, params, signal, onUpdate, ctx) => run("wait", params, signal, onUpdate, ctx, id),
	});

	host.shared.set("code.heldLeases", leases.size);
	const cleanups = cleanupTracker(() => manager, leases.releaseAll);
	host.shared.set("code.cleanupPending", cleanups.pending);
	host.shared.set("code.applyError", cleanups.applyError);

	host.lifecycle("codeMode", {
		// Switch/fork preflight: terminate every cell; an unconfirmed stop vetoes.
		beforeSwitch: cleanups.cleanup,
		// A real session_shutdown: close, delete only this manager's recovery files, start fresh on next use.
		shutdown: async () => {
			const old = manager;
			manager = null;
			cleanups.forget();
			try {
				if (old) await old.shutdown();
			} finally {
				leases.releaseAll();
			}
		},
		// Feature disabled: clean up Code Mode only; files stay until session_shutdown.
		disabled: async () => {
			await cleanups.cleanup();
		},
		// Reload, model change, session start: retry an unconfirmed cleanup (the same manager serves again once
		// it succeeds; its recovery files stay until session_shutdown).
		retry: async () => {
			if (cleanups.pending()) await cleanups.cleanup();
		},
	});
}
