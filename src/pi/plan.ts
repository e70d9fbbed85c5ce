/**
 * The permission policy for tools this extension does not own, and the operation mode (docs/permissions.md "MCP
 * and other extensions' tools", "Plan mode"). Pi's `tool_call` event can block a call: every tool of another
 * extension (MCP tools on Pi 1.6: `mcp__<server>__<tool>`) goes through the same gate as the toolkit's own tools
 * (src/pi/permission.ts), as medium risk; in Plan mode Pi's own `edit`/`write` and goal tools are refused too.
 * The operation mode itself lives in the Rust permission state (`HostPermissions.setOperationMode`, which reads an
 * unknown stored value as Plan); this file persists it in the session file, restores it on `session_start`, shows
 * it in the footer, and offers `/pct mode`.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ToolkitHost } from "./host.ts";
import { auditCall, configuredMode, permissionGate } from "./permission.ts";
import { hostRuntime } from "./tools/host.ts";

/** The custom session entry that stores the operation mode. */
export const MODE_ENTRY = "pct-operation-mode";
/** The footer status key. */
const STATUS_KEY = "pct-mode";
/** Pi's builtin tools: Pi's own, not another extension's. */
const PI_BUILTINS = new Set(["read", "bash", "edit", "write", "grep", "find", "ls", "powershell"]);
/** Goal proposals are retired; in Plan mode they are refused by name. */
const GOAL_TOOLS = new Set(["EnterGoalMode", "SubmitGoal"]);

export const PLAN_GOAL_ACTIVATION_DISABLED = "PLAN_GOAL_ACTIVATION_DISABLED";

type Mode = "agent" | "plan";

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
		const auto = configuredMode(host.config()) === "auto" || hostRuntime(host).permissions.sessionOverride === "auto";
		ctx.ui.setStatus(STATUS_KEY, mode === "plan" ? (auto ? "Plan mode (auto: commands may still change files)" : "Plan mode") : undefined);
	} catch {
		// A UI without a footer.
	}
}

/** Sets and persists the operation mode of the current session. */
export function setOperationMode(host: ToolkitHost, ctx: ExtensionContext | undefined, mode: Mode): Mode {
	const rt = hostRuntime(host);
	const now = rt.permissions.setOperationMode(mode);
	try {
		host.pi.appendEntry(MODE_ENTRY, { mode: now });
	} catch {
		// Not persisted (no session file): the mode holds for this process.
	}
	showMode(host, ctx, now);
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
		const auto = configuredMode(host.config()) === "auto" || rt.permissions.sessionOverride === "auto";
		return {
			text:
				"Operation mode: Plan. Write, Edit, apply_patch and tools not declared plan-safe are refused; commands are " +
				(auto ? "allowed under auto and may still change files (Plan plans intent, it is not a read-only sandbox)." : "confirmed per call."),
		};
	}
	return { text: "Operation mode: Agent." };
}

/** Whether `name` is a tool this extension registered. */
function ownTool(host: ToolkitHost, name: string): boolean {
	const own = (host as ToolkitHost & { ownSchemas?: Map<string, unknown> }).ownSchemas;
	return own?.has(name) ?? false;
}

export function register(host: ToolkitHost): void {
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
		if (ownTool(host, name)) return undefined; // the toolkit's own tools decide in their execute
		const rt = hostRuntime(host);
		const plan = rt.permissions.operationMode === "plan";
		if (PI_BUILTINS.has(name)) {
			if (plan && (name === "edit" || name === "write")) {
				return { block: true, reason: `EDIT_DISABLED_IN_PLAN: Pi's ${name} is disabled in Plan mode: Plan reads and plans, it does not change files. Nothing was changed.` };
			}
			return undefined; // Pi's builtins are Pi's (docs/permissions.md "Risk of each tool")
		}
		if (plan && GOAL_TOOLS.has(name)) {
			return { block: true, reason: `${PLAN_GOAL_ACTIVATION_DISABLED}: goal proposals are disabled in Plan mode; submit a plan with SubmitPlan instead.` };
		}
		// In Agent mode another extension's tools are gated only once the user chose a policy for every tool
		// (`permissions.mode` or `/pct permission`): installing the toolkit never changes how they run
		// (docs/permissions.md "MCP and other extensions' tools").
		if (!plan && !host.config().permissions?.mode && rt.permissions.sessionOverride === null) return undefined;
		const t0 = performance.now();
		let preview: string | undefined;
		try {
			preview = JSON.stringify(event.input);
		} catch {
			preview = undefined;
		}
		const gate = await permissionGate(host, rt, ctx, { tool: name, risk: "plugin", preview });
		auditCall(host, rt, {
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
	});
}
