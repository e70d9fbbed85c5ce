import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { EffectiveConfig } from "../../index.js";

/**
 * The seam between the toolkit core (config, sync, lifecycle) and each feature's Pi glue.
 * Feature modules (src/pi/tools/*.ts) export `register(host)` and talk to Pi only through `host.pi`,
 * so ownership, admission and lifecycle stay decided in one place.
 */

/** Identity of one shell/patch invocation, handed to the embedder's hooks (never commands, patches or programs). */
export interface InvocationCall {
	tool: "exec_command" | "write_stdin" | "apply_patch";
	path: "direct" | "nested";
	cwd: string;
	cellId?: string;
	sessionId?: string;
}

/** What `policy` answers: allow, or deny with a reason the model sees. */
export interface PolicyDecision {
	allow: boolean;
	reason?: string;
}

/** The embedder seam of createPiCodexToolkit (docs/spec/toolkit.md §9). Both hooks may be async. */
export interface InvocationHooks {
	/** Trusted per-call context; `env` is merged onto the inherited environment for that one spawn only. */
	context?(call: InvocationCall): { env?: Record<string, string> } | undefined | Promise<{ env?: Record<string, string> } | undefined>;
	/** Allow or deny one call before approval and execution. */
	policy?(call: InvocationCall): PolicyDecision | Promise<PolicyDecision>;
}

/** Options of the embedder factory. */
export interface ToolkitOptions {
	invocationHooks?: InvocationHooks;
	/** Pins the extension identity used for tool ownership (defaults to the entry file this code was loaded from: the bundle the manifest names, or src/pi-codex-toolkit/index.ts when run unbundled). */
	sourcePath?: string;
}

/** Lifecycle callbacks a feature may register; the core calls them at the matching Pi events. */
export interface FeatureLifecycle {
	/** Ask the feature to release its work before a session switch/fork; resolve false when cleanup is incomplete (veto). */
	beforeSwitch?(): Promise<boolean>;
	/** A real session_shutdown: close owners, delete only our own files. */
	shutdown?(): Promise<void>;
	/** The feature was disabled by config: clean up that feature only. */
	disabled?(): Promise<void>;
	/** After every sync (/pct reload, model change, session start): retry cleanup that did not complete earlier. */
	retry?(): Promise<void>;
}

/** What the core offers each feature module. */
export interface ToolkitHost {
	/** Pi's extension API (registerTool, events, ...). */
	readonly pi: ExtensionAPI;
	/** The embedder's invocation hooks ({} when none). */
	readonly hooks: InvocationHooks;
	/** Pi's agent dir (honours PI_CODING_AGENT_DIR). */
	readonly agentDir: string;
	/** The effective (validated, defaults filled) configuration currently in force. */
	config(): EffectiveConfig;
	/**
	 * Whether a toolkit tool name is currently admitted (may execute). Tools check this at execute time and fail
	 * with their feature's "not enabled" message otherwise; nested adapters check it at dispatch time.
	 */
	isAdmitted(toolName: string): boolean;
	/** Whether a code cell may call this adapter now (nested admission; the core's rules engine decides). */
	isNestedAdmitted?(toolName: string): boolean;
	/** The names Tool Discovery holds back now (a delegate's `inherit` catalog counts them; src/pi/agents.ts). */
	deferredNames?(): string[];
	/** Registers lifecycle callbacks for one feature key (e.g. "shellSessions"). */
	lifecycle(feature: string, callbacks: FeatureLifecycle): void;
	/** Shared objects between features (e.g. "shell" -> the native shell manager the code cells reuse). */
	readonly shared: Map<string, unknown>;
}
