/**
 * The permission policy for tools this extension does not own, and the operation mode (docs/permissions.md "MCP
 * and other extensions' tools", "Plan mode"). Pi's `tool_call` event can block a call: every tool of another
 * extension (MCP tools on Pi 1.6: `mcp__<server>__<tool>`) goes through the same gate as the toolkit's own tools
 * (src/pi/permission.ts), as medium risk; in Plan mode Pi's own `edit`/`write` and goal tools are refused too.
 * The operation mode itself lives in the Rust permission state (`HostPermissions.setOperationMode`, which reads an
 * unknown stored value as Plan); this file persists it in the session file, restores it on `session_start`, shows
 * it in the footer, offers `/pct mode`, and is the glue of the plan tools `EnterPlanMode` and `SubmitPlan`
 * (docs/permissions.md "The plan tools": the plan file is written by Rust, `planSave`). A mode change re-syncs the
 * active tools: what Plan hides is decided in src/rules/plan_mode.rs.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { ToolkitHost } from "./host.ts";
import { native } from "./native.ts";
import { auditCall, type AuditDecision, cardPreview, configuredMode, type PermissionRisk, permissionGate, planSafe } from "./permission.ts";
import { toolOrigin } from "./origin.ts";
import type { ToolErrorCode } from "./failure.ts";
import { syncDelegatePolicy } from "./delegate.ts";
import { hostRuntime } from "./tools/host.ts";
import { safeInput, safeSelect, safeStatus } from "./render/safe.ts";

/** The custom session entry that stores the operation mode. */
export const MODE_ENTRY = "pct-operation-mode";
/** The footer status key. */
const STATUS_KEY = "pct-mode";
/** Goal proposals are retired; in Plan mode they are refused by name. */
const GOAL_TOOLS = new Set(["EnterGoalMode", "SubmitGoal"]);

/**
 * The plan tools' own refusals, in the order of docs/permissions.md "Tool codes" (a test holds them equal); the file
 * store's are Rust's (`planSave`, `PlanSaveResult["code"]`).
 */
export const PLAN_TOOL_CODES = ["PLAN_TOOL_NOT_ALONE", "ALREADY_IN_PLAN_MODE", "NOT_IN_PLAN_MODE", "PLAN_APPROVAL_UNAVAILABLE", "PLAN_GOAL_ACTIVATION_DISABLED"] as const;
/** One of the plan tools' own codes. */
export type PlanToolCode = (typeof PLAN_TOOL_CODES)[number];
export const PLAN_TOOL_NOT_ALONE = "PLAN_TOOL_NOT_ALONE" satisfies PlanToolCode;
export const ALREADY_IN_PLAN_MODE = "ALREADY_IN_PLAN_MODE" satisfies PlanToolCode;
export const NOT_IN_PLAN_MODE = "NOT_IN_PLAN_MODE" satisfies PlanToolCode;
export const PLAN_APPROVAL_UNAVAILABLE = "PLAN_APPROVAL_UNAVAILABLE" satisfies PlanToolCode;
export const PLAN_GOAL_ACTIVATION_DISABLED = "PLAN_GOAL_ACTIVATION_DISABLED" satisfies PlanToolCode;
/** The approval card's choices. */
export const APPROVE_PLAN = "Approve: switch to Agent and carry it out";
export const REJECT_PLAN = "Reject, with a reason";

type Mode = "agent" | "plan";

/**
 * The session's operation mode now: `"plan"` or `"agent"` (Agent before any session started). A stable export: other
 * features read it to refuse what Plan does not offer (e.g. Task, docs/permissions.md "Plan mode").
 */
export function operationMode(host: ToolkitHost): Mode {
	return hostRuntime(host).permissions.operationMode === "plan" ? "plan" : "agent";
}

/** Whether Plan runs commands without a card (`auto`, configured or for this session): then it is no read-only sandbox. */
function autoOn(host: ToolkitHost): boolean {
	return configuredMode(host.config()) === "auto" || hostRuntime(host).permissions.sessionOverride === "auto";
}

/** The line said wherever Plan + auto is shown (footer, /pct mode, EnterPlanMode's result). */
export const PLAN_AUTO_NOTE = "auto: Plan plans intent, it is not a read-only sandbox — commands may still change files";

/** The stored operation mode of the session: the last `pct-operation-mode` entry on the current branch. */
function storedMode(ctx: ExtensionContext): string | undefined | null {
	try {
		const entries = ctx.sessionManager.getBranch();
		for (let i = entries.length - 1; i >= 0; i--) {
			const e = entries[i] as { type?: string; customType?: string; data?: unknown };
			if (e.type === "custom" && e.customType === MODE_ENTRY) {
				const m = (e.data as { mode?: unknown } | undefined)?.mode;
				return typeof m === "string" ? m : "";
			}
		}
	} catch {
		// No readable session: Agent, as for a new session.
	}
	return null;
}

/** The footer line: shown in Plan only; with `auto` it says that commands may still change files. */
function showMode(host: ToolkitHost, ctx: ExtensionContext | undefined, mode: Mode): void {
	if (!ctx?.hasUI) return;
	try {
		safeStatus(ctx.ui, STATUS_KEY, mode === "plan" ? (autoOn(host) ? `Plan mode (${PLAN_AUTO_NOTE})` : "Plan mode") : undefined);
	} catch {
		// A UI without a footer.
	}
}

/** Shows the footer line again (a `/pct permission` change turns Plan's auto note on or off). */
export function refreshModeFooter(host: ToolkitHost, ctx: ExtensionContext): void {
	showMode(host, ctx, operationMode(host));
}

/** Who must act the moment the operation mode changes (Task stops its acting delegates on Plan), per instance. */
const modeListeners = new WeakMap<object, Set<(mode: Mode) => void>>();

/** Calls `fn` with the new mode whenever this instance switches the operation mode (before anything else runs). */
export function onOperationMode(host: ToolkitHost, fn: (mode: Mode) => void): void {
	let set = modeListeners.get(host.shared);
	if (!set) modeListeners.set(host.shared, (set = new Set()));
	set.add(fn);
}

/** Sets and persists the operation mode of the current session. */
export function setOperationMode(host: ToolkitHost, ctx: ExtensionContext | undefined, mode: Mode): Mode {
	const rt = hostRuntime(host);
	const now = rt.permissions.setOperationMode(mode);
	for (const fn of modeListeners.get(host.shared) ?? []) {
		try {
			fn(now);
		} catch {
			// A listener's failure never keeps the mode from changing.
		}
	}
	try {
		host.pi.appendEntry(MODE_ENTRY, { mode: now });
	} catch {
		// Not persisted (no session file): the mode holds for this process.
	}
	showMode(host, ctx, now);
	// The active tools follow the mode (src/rules/plan_mode.rs): the core's sync, when this host has one.
	try {
		(host as ToolkitHost & { sync?: (ctx?: ExtensionContext) => void }).sync?.(ctx);
	} catch {
		// A failed sync is reported by the core (applyError); the mode itself holds.
	}
	return now;
}

/** `/pct mode [plan|agent]`: shows or switches the operation mode. Returns the text to show. */
export function modeCommand(host: ToolkitHost, ctx: ExtensionContext, arg: string): { text: string; level?: "warning" } {
	const rt = hostRuntime(host);
	const current = rt.permissions.operationMode;
	if (arg === "") return { text: `Operation mode: ${current === "plan" ? "Plan" : "Agent"}` };
	if (arg !== "plan" && arg !== "agent") return { text: "Usage: /pct mode [plan|agent]", level: "warning" };
	const now = setOperationMode(host, ctx, arg);
	if (now === "plan") {
		return { text: `Operation mode: Plan. ${planRules(host)}` };
	}
	return { text: "Operation mode: Agent." };
}

/** What Plan does, as /pct mode and EnterPlanMode say it. */
function planRules(host: ToolkitHost): string {
	return (
		"Write, Edit, apply_patch and tools not declared plan-safe are hidden and refused; commands are " +
		(autoOn(host) ? `allowed under auto and may still change files (${PLAN_AUTO_NOTE}).` : "confirmed per call.")
	);
}

/** The tool calls of the last assistant message, by id (Pi emits message_end before it runs the calls). */
const batches = new WeakMap<object, Set<string>>();

/** The refusal when a plan tool shares its assistant message with other calls (none of them is the mode switch). */
function notAlone(host: ToolkitHost, tool: string, toolCallId: string): string | null {
	const batch = batches.get(host.shared);
	if (batch?.has(toolCallId) && batch.size === 1) return null;
	const others = batch?.has(toolCallId) ? `it came with ${batch.size - 1} other call(s)` : "its assistant message is not known";
	return `${PLAN_TOOL_NOT_ALONE}: ${tool} must be the only tool call of its assistant message (${others}); nothing changed. Let the other calls finish, then call ${tool} alone.`;
}

/** The audit line of a plan tool call that acted (switched the mode, or reached the approval), as every tool's. */
function audit(host: ToolkitHost, toolCallId: string, tool: string, args: Record<string, unknown>, decision: AuditDecision, waitMs: number, ok: boolean, errorCode?: PlanToolCode): Promise<void> {
	const prompted = decision === "allow-once" || decision === "deny";
	return auditCall(host, hostRuntime(host), { toolCallId, tool, args, gate: { decision, prompted, waitMs }, runMs: 0, totalMs: waitMs, ok, errorCode });
}

type PlanToolResult = { content: { type: "text"; text: string }[]; details: Record<string, unknown> };
const result = (text: string, details: Record<string, unknown>): PlanToolResult => ({ content: [{ type: "text", text }], details });

/** How Plan mode ends, said after every refusal of a tool the mode hides. */
export const LEAVE_PLAN =
	"Plan mode is on: it ends when the user approves a plan submitted with SubmitPlan (alone in its message), or when the user switches with /pct mode agent.";

/** A tool result as Pi ends it (the fields the rewrite reads). */
type HiddenResult = { role: "toolResult"; toolCallId?: string; toolName?: string; isError?: boolean; content?: { type?: string; text?: string }[] };

/**
 * The refusal of a registered tool that the operation mode keeps out of the tool list, or null when `name` is not
 * one (docs/permissions.md "What Plan hides"): the code and message the tool would answer if it ran.
 */
export function modeRefusal(host: ToolkitHost, name: string): { code: ToolErrorCode; message: string } | null {
	const origin = toolOrigin(host.pi, ownSchemas(host), name);
	let registered = false;
	try {
		registered = host.pi.getAllTools().some((t) => t.name === name);
	} catch {
		registered = false;
	}
	if (!registered) return null;
	const rt = hostRuntime(host);
	if (operationMode(host) !== "plan") {
		if (origin === "ours" && name === "SubmitPlan") {
			return { code: NOT_IN_PLAN_MODE, message: "SubmitPlan works in Plan mode only and Agent mode is on: carry out the work directly, or call EnterPlanMode (alone) first to plan it." };
		}
		return null;
	}
	if (origin === "ours") {
		if (name === "EnterPlanMode") return { code: ALREADY_IN_PLAN_MODE, message: `Plan mode is already on. Explore with the read tools, then submit the plan with SubmitPlan.` };
		if (name === "Task") return { code: "TASK_DISABLED_IN_PLAN", message: `Task is disabled in Plan mode: Plan reads and plans; delegate after the plan is approved. ${LEAVE_PLAN}` };
		if (name.startsWith("computer_")) return { code: "COMPUTER_DISABLED_IN_PLAN", message: `Computer Use is disabled in Plan mode: Plan reads and plans. ${LEAVE_PLAN}` };
		if (name !== "Write" && name !== "Edit" && name !== "apply_patch") return null;
	}
	const risk: PermissionRisk = origin === "builtin" ? builtinRisk(name) : origin === "ours" ? "edit" : "plugin";
	if (risk !== "edit" && risk !== "plugin") return null;
	try {
		const config = host.config();
		const d = rt.permissions.decide({ tool: name, risk, external: false, scratch: false, hasUi: false, planSafe: planSafe(config, name) }, configuredMode(config));
		if (d.action !== "deny" || !d.code || d.code === "TOOL_DENIED") return null;
		return { code: d.code, message: `${d.message ?? d.deniedMessage} ${LEAVE_PLAN}` };
	} catch {
		return null;
	}
}

/**
 * Pi answers a call of a tool that is not in the active list with a bare `Tool <name> not found`. When the tool is
 * registered and only the operation mode keeps it out (Write in Plan, SubmitPlan in Agent…), the result says so
 * instead: the mode's code, why, and how Plan ends — in the message the model reads next, the one the session
 * stores, and (the text part is the same object) the row the TUI shows. Audited as a refusal of the mode.
 */
async function explainHidden(host: ToolkitHost, m: HiddenResult): Promise<undefined> {
	if (!m.isError || typeof m.toolName !== "string" || !Array.isArray(m.content) || m.content.length !== 1) return undefined;
	const part = m.content[0];
	if (part?.type !== "text" || part.text !== `Tool ${m.toolName} not found`) return undefined;
	const refusal = modeRefusal(host, m.toolName);
	if (!refusal) return undefined;
	part.text = `${refusal.code}: ${refusal.message}`;
	await auditCall(host, hostRuntime(host), {
		toolCallId: m.toolCallId ?? "",
		tool: m.toolName,
		args: {},
		gate: { decision: "denied-plan", prompted: false, waitMs: 0 },
		runMs: 0,
		totalMs: 0,
		ok: false,
		errorCode: refusal.code,
	});
	return undefined;
}

/** EnterPlanMode and SubmitPlan (docs/permissions.md "The plan tools"). */
function registerPlanTools(host: ToolkitHost): void {
	const notEnabled = (tool: string) =>
		new Error(`${tool} comes with the Host Tools, which are not enabled. Turn on hostTools.enabled with /pct config, or switch modes with /pct mode.`);
	host.pi.on("message_end", async (event) => {
		const m = event.message as { role?: string; content?: unknown };
		if (m.role === "toolResult") return explainHidden(host, event.message as HiddenResult);
		if (m.role !== "assistant" || !Array.isArray(m.content)) return;
		const ids = new Set<string>();
		for (const c of m.content as { type?: string; id?: unknown }[]) if (c?.type === "toolCall" && typeof c.id === "string") ids.add(c.id);
		batches.set(host.shared, ids);
	});

	host.pi.registerTool({
		name: "EnterPlanMode",
		label: "Enter Plan mode",
		// Sent with Agent's first request (never on demand: docs/rules.md "On-demand host tools"), so kept short.
		description:
			"Switch to Plan mode before a change the user should approve first: explore (Write, Edit and apply_patch are " +
			"refused), then submit the plan with SubmitPlan. Call it alone.",
		promptSnippet: "EnterPlanMode: switch to Plan mode (explore, then SubmitPlan for approval)",
		parameters: Type.Object({}),
		async execute(toolCallId: string, _params: unknown, _signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			if (!host.isAdmitted("EnterPlanMode")) throw notEnabled("EnterPlanMode");
			const alone = notAlone(host, "EnterPlanMode", toolCallId);
			if (alone) throw new Error(alone);
			if (operationMode(host) === "plan") {
				throw new Error(`${ALREADY_IN_PLAN_MODE}: Plan mode is already on. Explore with the read tools, then submit the plan with SubmitPlan.`);
			}
			setOperationMode(host, ctx, "plan");
			await audit(host, toolCallId, "EnterPlanMode", {}, "allow", 0, true);
			return result(
				`Plan mode is on. ${planRules(host)} Explore what the change needs, then submit the complete plan as Markdown with SubmitPlan (alone in its message); the user approves it before anything changes.`,
				{ mode: "plan" },
			);
		},
	});

	host.pi.registerTool({
		name: "SubmitPlan",
		label: "Submit plan",
		description:
			"In Plan mode: submit the complete plan as Markdown for the user's approval. The exact text is saved as a new file " +
			".pi/plan/<id>.md. Approved: Agent mode comes back and you carry the plan out. Rejected: you stay in Plan mode with " +
			"the user's reason; revise and submit again. Must be the only tool call of its message.",
		promptSnippet: "SubmitPlan: submit the Markdown plan for approval (Plan mode)",
		parameters: Type.Object({ plan: Type.String({ description: "The whole plan, in Markdown." }) }),
		async execute(toolCallId: string, params: { plan: string }, signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			if (!host.isAdmitted("SubmitPlan")) throw notEnabled("SubmitPlan");
			const alone = notAlone(host, "SubmitPlan", toolCallId);
			if (alone) throw new Error(alone);
			if (operationMode(host) !== "plan") {
				throw new Error(`${NOT_IN_PLAN_MODE}: SubmitPlan works in Plan mode only and Agent mode is on: carry out the work directly, or call EnterPlanMode (alone) first to plan it.`);
			}
			const plan = typeof params?.plan === "string" ? params.plan : "";
			const saved = await native.planSave(ctx.cwd, plan);
			if (!saved.ok) throw new Error(`${saved.code}: ${saved.message}`);
			const where = saved.relative!;
			const details = { path: where, bytes: saved.bytes };
			if (!ctx.hasUI) {
				await audit(host, toolCallId, "SubmitPlan", { plan }, "denied-headless", 0, false, PLAN_APPROVAL_UNAVAILABLE);
				throw new Error(
					`${PLAN_APPROVAL_UNAVAILABLE}: The plan was saved to ${where}, but this session has no interactive UI to approve it, so Plan mode stays on and nothing else changed. Stop here and tell the user where the plan is; they approve it by switching to Agent with /pct mode agent.`,
				);
			}
			let choice: string | undefined;
			const w0 = performance.now();
			try {
				choice = await safeSelect(ctx.ui, `Approve this plan? (saved to ${where})
${cardPreview(plan)}`, [APPROVE_PLAN, REJECT_PLAN], signal ? { signal } : undefined);
			} catch {
				choice = undefined;
			}
			const waitMs = performance.now() - w0;
			if (choice === APPROVE_PLAN) {
				setOperationMode(host, ctx, "agent");
				await audit(host, toolCallId, "SubmitPlan", { plan }, "allow-once", waitMs, true);
				return result(`The user approved the plan (saved as ${where}). Agent mode is on: carry out this plan now.

${plan}`, { ...details, approved: true });
			}
			let reason: string | undefined;
			if (choice === REJECT_PLAN) {
				try {
					reason = (await safeInput(ctx.ui, "Why is the plan rejected? (the model reads this)", "", signal ? { signal } : undefined))?.trim();
				} catch {
					reason = undefined;
				}
			}
			await audit(host, toolCallId, "SubmitPlan", { plan }, "deny", waitMs, true);
			const why = reason ? `: ${reason}` : choice === REJECT_PLAN ? " without giving a reason" : " (the approval was dismissed without an answer)";
			return result(
				`The user rejected the plan (saved as ${where})${why}. Plan mode stays on: revise the plan accordingly and submit it again with SubmitPlan, or ask the user what they want.`,
				{ ...details, approved: false, reason: reason ?? "" },
			);
		},
	});
}

/** This toolkit's schema objects by tool name: the proof that a registry entry is ours (src/pi/origin.ts). */
function ownSchemas(host: ToolkitHost): ReadonlyMap<string, unknown> | undefined {
	return (host as ToolkitHost & { ownSchemas?: Map<string, unknown> }).ownSchemas;
}

/** The permission row of one of Pi's own builtins: `read` for the readers, `edit` for edit/write, `bash` for a shell. */
function builtinRisk(name: string): PermissionRisk {
	if (name === "edit" || name === "write") return "edit";
	if (name === "bash" || name === "powershell") return "bash";
	return "read";
}

/** The preview of a call as its card shows it: a builtin shell's command itself, anything else its arguments. */
function callPreview(name: string, input: unknown): string | undefined {
	const command = (input as { command?: unknown } | null | undefined)?.command;
	if ((name === "bash" || name === "powershell") && typeof command === "string") return `$ ${command}`;
	try {
		return JSON.stringify(input);
	} catch {
		return undefined;
	}
}

export function register(host: ToolkitHost): void {
	registerPlanTools(host);
	host.pi.on("session_start", async (_event, ctx) => {
		const rt = hostRuntime(host);
		// The host runtime starts its own session state on the same event; bind it first so the mode lands there.
		try {
			rt.for(ctx);
		} catch {
			// A cwd that is not a directory: the permission state still exists.
		}
		const stored = storedMode(ctx);
		// No entry: a new session starts in Agent. Any stored value other than agent (damaged, unknown) is Plan.
		const mode = rt.permissions.setOperationMode(stored === null ? "agent" : stored);
		showMode(host, ctx, mode);
	});

	host.pi.on("tool_call", async (event, ctx) => {
		const name = event.toolName;
		// Whose tool runs is read from Pi's registry, never from the name (docs/permissions.md "Whose tool is it"):
		// another extension's `find` or `Write` is foreign, whatever it is called.
		const origin = toolOrigin(host.pi, ownSchemas(host), name);
		if (origin === "ours") return undefined; // the toolkit's own tools decide in their execute
		const rt = hostRuntime(host);
		// A delegate reads the session's operation mode now (docs/agents.md "The live policy").
		await syncDelegatePolicy(rt.permissions, ctx);
		const plan = rt.permissions.operationMode === "plan";
		if (origin === "builtin") {
			// Pi's builtins are Pi's in Agent mode (docs/permissions.md "Risk of each tool"); in Plan every builtin
			// that acts goes through the table: edit/write are refused, a shell is confirmed as the mode says.
			const risk = builtinRisk(name);
			if (!plan || risk === "read") return undefined;
			return gateForeign(event, ctx, rt, risk);
		}
		if (plan && GOAL_TOOLS.has(name)) {
			return { block: true, reason: `${PLAN_GOAL_ACTIVATION_DISABLED}: goal proposals are disabled in Plan mode; submit a plan with SubmitPlan instead.` };
		}
		// In Agent mode another extension's tools are gated only once the user chose a policy for every tool
		// (`permissions.mode` or `/pct permission`): installing the toolkit never changes how they run
		// (docs/permissions.md "MCP and other extensions' tools").
		if (!plan && !host.config().permissions?.mode && rt.permissions.sessionOverride === null) return undefined;
		return gateForeign(event, ctx, rt, "plugin");
	});

	/** Decides, audits and (when refused) blocks one call of a tool this toolkit did not register. */
	async function gateForeign(event: { toolName: string; toolCallId: string; input: unknown }, ctx: ExtensionContext, rt: ReturnType<typeof hostRuntime>, risk: PermissionRisk) {
		const name = event.toolName;
		const t0 = performance.now();
		const gate = await permissionGate(host, rt, ctx, { tool: name, risk, preview: callPreview(name, event.input) });
		await auditCall(host, rt, {
			toolCallId: event.toolCallId,
			tool: name,
			args: (event.input ?? {}) as Record<string, unknown>,
			gate,
			runMs: 0,
			totalMs: performance.now() - t0,
			ok: gate.ok,
			errorCode: gate.code,
		});
		if (gate.ok) return undefined;
		return { block: true, reason: `${gate.code}: ${gate.message}` };
	}
}
