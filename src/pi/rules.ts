/**
 * Glue between the toolkit core and the Rust decision engine (src/rules, src/discovery): gathers one snapshot
 * from Pi, applies the projection with `pi.setActiveTools`, emits the diagnostics record, and keeps the
 * per-session find_tools loads. Every decision is made by the addon; this file only adapts Pi's API.
 */
import { isPiBuiltinSource } from "./origin.ts";
import type { ExtensionAPI, ExtensionContext, ToolInfo } from "@earendil-works/pi-coding-agent";
import type { DiagnosticsRecord, EffectiveConfig, ExecutionRule, FindToolsResult, NetInput, RegistrationPlan, RulesConfigError, RulesDecision, RulesInput, RulesTool, ToolResultEvidence } from "../../index.js";
import { native, nativeLoad } from "./native.ts";
import { resolveShell, shellStatusLines } from "./tools/shell.ts";
import { netInput, REGISTRY_KEY } from "./net/facts.ts";
import type { PiModel, Registry } from "./net/route.ts";

/**
 * JSON text of a `T`, as the addon's rules functions declare it (index.d.ts; docs/napi.md §Typed shapes). Snapshots
 * and results cross the boundary as JSON text (much cheaper than napi object conversion: bench/rules.mjs); these
 * two helpers are the only places the text is made or read, so `tsc` checks both ends against the interfaces.
 */
export type JsonText<T> = string & { readonly __json: T };
export const toJson = <T>(value: T): JsonText<T> => JSON.stringify(value) as JsonText<T>;
export const fromJson = <T>(text: JsonText<T>): T => JSON.parse(text) as T;

const call = {
	resolve: (input: RulesInput): RulesDecision => fromJson(native.rulesResolve(toJson(input))),
	status: (input: RulesInput): string => native.rulesStatusText(toJson(input)),
	preview: (input: RulesInput): string => native.rulesPreviewText(toJson(input)),
	plan: (input: RulesInput, offered: string[]): RegistrationPlan => fromJson(native.rulesRegistrationPlan(toJson(input), offered)),
	find: (input: RulesInput, params: Record<string, unknown>): FindToolsResult =>
		fromJson(native.discoveryFindTools(toJson(input), toJson(params ?? {}))),
	evidence: (input: RulesInput, records: ToolResultEvidence[]): string[] => native.discoveryEvidence(toJson(input), toJson(records)),
};

/** The `pi.events` channel of the diagnostics record (docs/spec/toolkit.md §4). */
// Read at import: guarded so a missing engine leaves the module loadable (src/pi/unavailable.ts takes over).
export const DIAGNOSTICS_CHANNEL: string = nativeLoad.ok ? native.rulesDiagnosticsChannel() : "";

/** What the core keeps between syncs (owned by the Toolkit instance). */
export interface RulesState {
	/** The current model as last seen from ctx / model_select (none before Pi reports one). */
	model: PiModel | undefined;
	/** Whether the last context had a dialog-capable UI (nested approval transport). */
	hasUI: boolean;
	/** Builtins this extension hid (only those are ever restored). */
	hiddenByUs: Set<string>;
	/** Names Plan mode took out of the active list (given back in Agent; src/rules/plan_mode.rs). */
	planHiddenByUs: Set<string>;
	/** Managed deferred names find_tools loaded in this session. */
	loadedDeferred: string[];
	/** On-demand names loaded for the current prompt (reset and rebuilt from evidence when a prompt starts). */
	loadedOnDemand: string[];
	/** Whether a background Bash task was started in this session (the Task tools then stop being on demand). */
	backgroundSeen: boolean;
	/** Toolkit names the last committed sync admitted. */
	admitted: Set<string>;
	/** Adapters code cells may call under the last committed sync. */
	nested: Set<string>;
	/** The last committed diagnostics record (re-emitted with cleanupPending on a rejected apply). */
	lastRecord: DiagnosticsRecord | null;
	/** The last projection (for status / tests). */
	last: RulesDecision | null;
}

export function newRulesState(): RulesState {
	return { model: undefined, hasUI: false, hiddenByUs: new Set(), planHiddenByUs: new Set(), loadedDeferred: [], loadedOnDemand: [], backgroundSeen: false, admitted: new Set(), nested: new Set(), lastRecord: null, last: null };
}

/** The parts of the Toolkit the snapshot reads. */
export interface RulesHost {
	pi: ExtensionAPI;
	identities: Set<string>;
	config(): EffectiveConfig;
	configPath: string;
	revision: string | null;
	lastError: RulesConfigError | null;
	applyError: string | null;
	rules: RulesState;
	packageVersion?: string;
	/** Shared feature objects (the shell manager under "shell"). */
	shared?: Map<string, unknown>;
}

/** Whether Shell's manager or Code Mode's cells still have cleanup to finish (reported in the diagnostics record). */
function cleanupPending(host: RulesHost): boolean {
	try {
		const m = host.shared?.get("shell") as InstanceType<typeof native.ShellManager> | undefined;
		const code = host.shared?.get("code.cleanupPending") as (() => boolean) | undefined;
		return !!m?.status?.().cleanupPending || !!code?.();
	} catch {
		return false;
	}
}

/** The `Apply error:` line: a failed apply, and an unconfirmed Code Mode cleanup even after later syncs committed. */
function applyError(host: RulesHost): string | null {
	let code: string | null = null;
	try {
		code = (host.shared?.get("code.applyError") as (() => string | null) | undefined)?.() ?? null;
	} catch {
		code = null;
	}
	const parts = [host.applyError, code].filter((p): p is string => typeof p === "string" && p.length > 0);
	return parts.length > 0 ? parts.join("; ") : null;
}

/** Remembers what a Pi context tells us about the model and the UI. */
export function observe(host: RulesHost, ctx?: ExtensionContext, model?: PiModel): void {
	if (model) host.rules.model = model;
	else if (ctx && "model" in ctx) host.rules.model = ctx.model;
	if (ctx && typeof ctx.hasUI === "boolean") host.rules.hasUI = ctx.hasUI;
	// The network features read route facts from the registry on every snapshot (src/pi/net/facts.ts).
	if (ctx?.modelRegistry) host.shared?.set(REGISTRY_KEY, ctx.modelRegistry);
}

/**
 * `getAllTools()` reduced to {name, source[, description]}; our own registrations report the first identity.
 * Descriptions (often kilobytes each) are only sent for find_tools, and only ours: the managed set is ours.
 */
function toolList(host: RulesHost, ids: Set<string>, identity: string, withDescriptions: boolean): RulesTool[] {
	const out: RulesTool[] = [];
	for (const t of host.pi.getAllTools()) {
		// Pi 0.87.1 has no sourceInfo on every entry.
		const info: Partial<ToolInfo["sourceInfo"]> = t.sourceInfo ?? {};
		const ours = info.path !== undefined && ids.has(info.path);
		// "builtin" only for Pi's own tool of that very name (src/pi/origin.ts): a Pi 1.x builtin extension's tools
		// (its MCP servers, path `builtin:mcp`) and another extension's `find` are other owners.
		const source = ours ? identity : isPiBuiltinSource(t.name, info) ? "builtin" : String(info.path ?? info.source ?? "unknown");
		const entry: RulesTool = { name: t.name, source };
		if (withDescriptions && ours && typeof t.description === "string") entry.description = t.description;
		out.push(entry);
	}
	return out;
}

/** The session's operation mode as the permission state holds it (src/pi/plan.ts); Agent before any session. */
function operationModeOf(host: RulesHost): "agent" | "plan" {
	const rt = host.shared?.get("host.runtime") as { permissions?: { operationMode?: string } } | undefined;
	return rt?.permissions?.operationMode === "plan" ? "plan" : "agent";
}

/**
 * The snapshot's network facts (src/pi/net/facts.ts): empty unless a network feature is on; then a read of Pi's
 * model list, which Pi copies on every read (and rebuilds on Pi 1.6.0: a millisecond or more). A sync reads them
 * once for its registration plan and its projection (Toolkit.sync); nothing between the two changes the registry.
 */
export function netFacts(host: RulesHost): NetInput {
	return netInput(host.shared?.get(REGISTRY_KEY) as Registry | undefined, host.rules.model, host.config());
}

/** The snapshot every addon decision takes (see src/rules/input.rs). */
export function snapshot(host: RulesHost, overrides: Partial<RulesInput> = {}, withDescriptions = false): RulesInput {
	const ids = host.identities;
	const identity = [...ids][0] ?? "";
	const m = host.rules.model;
	return {
		config: host.config(),
		model: m ? { provider: m.provider, id: m.id, api: m.api, input: Array.isArray(m.input) ? [...m.input] : undefined } : null,
		tools: toolList(host, ids, identity, withDescriptions),
		identity,
		activeNow: host.pi.getActiveTools(),
		hiddenByUs: [...host.rules.hiddenByUs],
		loadedDeferred: host.rules.loadedDeferred,
		loadedOnDemand: host.rules.loadedOnDemand,
		backgroundTasks: backgroundTasks(host),
		platform: native.computerUsePlatform(), // process.platform, or the Computer Use test seam's (docs/computer.md)
		computerUseProbe: computerUseProbeReason(host),
		shellAvailable: resolveShell() !== null,
		hasUi: host.rules.hasUI,
		cleanupPending: cleanupPending(host),
		configRevision: host.revision,
		configPath: host.configPath,
		configError: host.lastError,
		applyError: applyError(host),
		toolkit: { name: "pi-codex-toolkit", version: host.packageVersion ?? native.engineVersion() },
		net: overrides.net ?? netFacts(host),
		operationMode: operationModeOf(host),
		planHiddenByUs: [...host.rules.planHiddenByUs],
		...overrides,
	};
}

/**
 * Whether the session has a background task: a background Bash call succeeded in it, or a feature reports one
 * through a `background.<feature>` function in `shared` (e.g. background Task delegations). The Task tools stop
 * being on demand then (docs/rules.md "On-demand host tools").
 */
function backgroundTasks(host: RulesHost): boolean {
	if (host.rules.backgroundSeen) return true;
	for (const [key, value] of host.shared ?? []) {
		if (!key.startsWith("background.") || typeof value !== "function") continue;
		try {
			if ((value as () => unknown)() === true) return true;
		} catch {
			// A failing provider reports nothing.
		}
	}
	return false;
}

/** The Computer Use prerequisite probe's reason when the feature is on (a few `stat`s on macOS, none elsewhere). */
function computerUseProbeReason(host: RulesHost): RulesInput["computerUseProbe"] {
	if (!host.config().computerUse?.enabled) return null;
	try {
		return native.computerUseProbe().reason;
	} catch {
		return "missing-chatgpt-desktop-component";
	}
}

function emit(host: RulesHost, record: DiagnosticsRecord): void {
	try {
		host.pi.events?.emit?.(DIAGNOSTICS_CHANNEL, record);
	} catch {
		// A listener's failure must never break a sync.
	}
}

/**
 * One sync: decide in Rust, apply with setActiveTools, commit the state, emit the record. On a failed apply the
 * previous projection stays committed; the error goes to `applyError` and the still-committed route is emitted
 * again with `cleanupPending: true`. `overrides` replace parts of the snapshot (a sync's network facts).
 */
export function syncRules(host: RulesHost, overrides: Partial<RulesInput> = {}): void {
	let out: RulesDecision;
	try {
		out = call.resolve(snapshot(host, overrides));
		if (out.changed) host.pi.setActiveTools(out.active);
	} catch (e: unknown) {
		host.applyError = e instanceof Error ? e.message : String(e);
		if (host.rules.lastRecord) emit(host, { ...host.rules.lastRecord, cleanupPending: true });
		return;
	}
	host.rules.hiddenByUs = new Set(out.hiddenNatives);
	host.rules.planHiddenByUs = new Set(out.planHidden);
	host.rules.loadedDeferred = out.loadedDeferred;
	host.rules.loadedOnDemand = out.loadedOnDemand;
	host.rules.admitted = new Set(out.admittedNames);
	host.rules.nested = new Set(out.nestedNames);
	host.rules.lastRecord = out.diagnostics;
	host.rules.last = out;
	// The network tools and the payload hook follow the committed plans (src/pi/net).
	host.shared?.set("net.plan", out.net);
	host.applyError = null;
	emit(host, out.diagnostics);
}

/** Which of the `offered` (declared, unregistered) tool names to register now (src/rules/registration.rs);
 * `overrides` as for syncRules. */
export function registrationPlan(host: RulesHost, offered: string[], overrides: Partial<RulesInput> = {}): RegistrationPlan {
	return call.plan(snapshot(host, overrides), offered);
}

/** A new, resumed or forked session: deferred names hide again (loads are never persisted or replayed). */
export function resetSessionLoads(host: RulesHost): void {
	host.rules.loadedDeferred = [];
	host.rules.loadedOnDemand = [];
	host.rules.backgroundSeen = false;
}

/** The tool results of the session's effective (compaction-aware) context, reduced to what can prove a load. */
function contextEvidence(ctx: ExtensionContext): ToolResultEvidence[] {
	const out: ToolResultEvidence[] = [];
	let entries: unknown[];
	try {
		entries = ctx.sessionManager.buildContextEntries();
	} catch {
		return out;
	}
	for (const e of entries) {
		const m = (e as { type?: string; message?: { role?: string; toolName?: unknown; isError?: unknown; details?: unknown; addedToolNames?: unknown } }).message;
		if ((e as { type?: string }).type !== "message" || m?.role !== "toolResult" || typeof m.toolName !== "string") continue;
		const details = (m.details ?? {}) as { addedToolNames?: unknown; activated?: unknown };
		out.push({ toolName: m.toolName, isError: m.isError === true, detailsAddedToolNames: details.addedToolNames, detailsActivated: details.activated, addedToolNames: m.addedToolNames });
	}
	return out;
}

/**
 * A user prompt starts (or a session is resumed): the on-demand loads are reset and rebuilt from the successful
 * evidence in the session's effective context (src/discovery/evidence.rs), so tools the session already used stay
 * loaded after a resume or a compaction, and nothing else does. Returns whether the loads changed (a sync is due).
 */
export function rebuildOnDemand(host: RulesHost, ctx: ExtensionContext): boolean {
	const before = host.rules.loadedOnDemand.join("\n");
	// Nothing can be on demand without the host tools and a working find_tools: skip reading the context.
	const f = host.rules.last?.features;
	if (f && !(f.hostTools?.configured && f.toolDiscovery?.effective === "active") && before === "") return false;
	host.rules.loadedOnDemand = [];
	try {
		// Only a successful tool result proves a load (docs/rules.md "On-demand host tools"): a context without one,
		// as every new session has, proves nothing, so the snapshot (Pi's tool list, and its model list when a
		// network feature is on: about a millisecond on Pi 1.6.0) and the addon call are skipped.
		const evidence = contextEvidence(ctx);
		if (evidence.some((r) => !r.isError)) host.rules.loadedOnDemand = call.evidence(snapshot(host), evidence);
	} catch {
		// No readable context: nothing is proven, the tools stay on demand.
	}
	return host.rules.loadedOnDemand.join("\n") !== before;
}

/** The `# On-demand tools` system prompt section of the last committed sync (empty when nothing is held back). */
export function onDemandCatalog(host: RulesHost): string {
	return host.rules.last?.onDemandCatalog ?? "";
}

/** What Pi reports when a tool call ends (`tool_execution_end`), reduced to what the rules glue reads. */
export interface ToolEnd {
	toolName: string;
	isError: boolean;
	result?: { details?: unknown };
}

/**
 * After a tool call: a successful background Bash call makes the Task tools active for the next turn; a call of an
 * on-demand tool by its name (Pi answers `Tool <name> not found`: it resolves a call against the turn's tool list
 * before any extension sees it) loads that tool for the next turn, as `find_tools {load: [name]}` would.
 */
export function afterToolCall(host: RulesHost, end: ToolEnd): void {
	const details = end.result?.details as { backgroundTaskId?: unknown } | undefined;
	if (end.toolName === "Bash" && !end.isError && typeof details?.backgroundTaskId === "string" && !host.rules.backgroundSeen) {
		host.rules.backgroundSeen = true;
		syncRules(host);
		return;
	}
	if (!end.isError || !host.rules.last?.deferredNames.includes(end.toolName)) return;
	try {
		const out = call.find(snapshot(host), { load: [end.toolName] });
		// Only on-demand tools load by name; the managed deferred set waits for find_tools (docs/spec/toolkit.md §8).
		if (out.error || !out.loaded.includes(end.toolName) || !out.loadedOnDemand.includes(end.toolName)) return;
		host.rules.loadedOnDemand = out.loadedOnDemand;
		syncRules(host);
	} catch {
		// Best effort: the model can still load it with find_tools.
	}
}

/** `/pct status` text (with the features' own status lines). */
export function rulesStatus(host: RulesHost): string {
	const extraLines: Record<string, string[]> = {};
	if (host.shared?.get("shell")) extraLines.shellSessions = shellStatusLines({ shared: host.shared });
	return call.status(snapshot(host, { extraLines }));
}

/** The rules editor's "Preview current model" for a draft rules list. */
export function rulesPreview(host: RulesHost, draftRules: ExecutionRule[]): string {
	const cfg = { ...host.config(), execution: { version: 1 as const, rules: draftRules } };
	return call.preview(snapshot(host, { config: cfg }));
}

/** `details` of a find_tools result. */
export type FindToolsDetails = Pick<FindToolsResult, "matches" | "loaded" | "alreadyActive" | "rejected" | "addedToolNames">;

/** One find_tools call; on success the loads are kept for this session and a sync makes them visible. */
export function findTools(host: RulesHost, params: Record<string, unknown>): { text: string; details: FindToolsDetails } {
	const out = call.find(snapshot(host, {}, true), params);
	if (out.error) throw new Error(out.error.message);
	host.rules.loadedDeferred = out.loadedDeferred;
	host.rules.loadedOnDemand = out.loadedOnDemand;
	if (out.loaded.length > 0) syncRules(host);
	return {
		text: out.text,
		details: { matches: out.matches, loaded: out.loaded, alreadyActive: out.alreadyActive, rejected: out.rejected, addedToolNames: out.addedToolNames },
	};
}
