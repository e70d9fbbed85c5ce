/**
 * The shapes of the JSON text the rules engine takes and returns. Rules snapshots cross the addon boundary as JSON
 * text because that is several times cheaper than napi object conversion for a 100-tool snapshot (bench/rules.mjs,
 * docs/rules.md); these interfaces keep that text typed on the TypeScript side. They mirror src/rules/input.rs
 * (input), src/rules/projection.rs and src/rules/diagnostics.rs (a sync), src/discovery/find.rs (find_tools) and
 * src/rules/editor.rs (the rules editor). Rust is the source of truth: a field added there is added here.
 */

/** The model a decision is made for (absent fields are omitted). */
export interface ModelRef {
	provider?: string;
	id?: string;
	api?: string;
}

/** One of `pi.getAllTools()`, reduced: our own registrations report the package identity as `source`. */
export interface ToolEntry {
	name: string;
	source: string;
	/** Only sent for find_tools, and only for our own tools. */
	description?: string;
}

/** One execution rule of the config (`execution.rules[]`). */
export interface RuleDef {
	id: string;
	match: string;
	patch: boolean;
	shell: boolean;
	code: boolean;
}

/** The snapshot every rules decision takes (src/rules/input.rs `ResolveInput`). */
export interface RulesInput {
	/** The effective config (or a draft config for the editor's preview). */
	config: object;
	model: ModelRef | null;
	tools: ToolEntry[];
	identity: string;
	activeNow: string[];
	hiddenByUs: string[];
	loadedDeferred: string[];
	platform: string;
	shellAvailable: boolean;
	hasUi: boolean;
	cleanupPending: boolean;
	configRevision: string | null;
	configPath: string;
	configError: { code: string; detail?: string } | null;
	applyError: string | null;
	toolkit: { name: string; version: string };
	/** Features' own `/pct status` lines, keyed by feature (e.g. `shellSessions`). */
	extraLines?: Record<string, string[]>;
}

/** Where the requested capabilities came from. */
export type RulesSource = "rules" | "legacy" | "unmatched";

/** The execution-diagnostics record emitted on `pi.events` after every committed sync (docs/spec/toolkit.md §4). */
export interface DiagnosticsRecord {
	version: 1;
	model?: ModelRef;
	source: RulesSource;
	ruleId?: string;
	requested: { patch: boolean; shell: boolean; code: boolean };
	effective: { directPatch: boolean; nestedPatch: boolean; directShell: boolean; code: boolean };
	admittedNames: string[];
	visibleNames: string[];
	nestedNames: string[];
	hiddenNatives: string[];
	notes: string[];
	approvalTransport: string;
	cleanupPending: boolean;
	configRevision: string | null;
	toolkit: { name: string; version: string };
}

/** One feature's line of `/pct status`. */
export interface FeatureView {
	configured: boolean;
	effective: "active" | "deferred" | "unavailable" | "off";
	reason: string;
}

/** One sync decision (src/rules/projection.rs `Projection`). */
export interface RulesProjection {
	/** The list for `pi.setActiveTools`. */
	active: string[];
	/** Whether `active` differs from what Pi has now (only then is setActiveTools called). */
	changed: boolean;
	hiddenNatives: string[];
	restoredNatives: string[];
	admittedNames: string[];
	visibleNames: string[];
	nestedNames: string[];
	deferredNames: string[];
	loadedDeferred: string[];
	notes: string[];
	features: Record<string, FeatureView>;
	diagnostics: DiagnosticsRecord;
}

/** find_tools arguments as the model sent them (validated in Rust). */
export interface FindToolsParams {
	query?: unknown;
	load?: unknown;
}

/** One find_tools call (src/discovery/find.rs `FindResult`). */
export interface FindToolsResult {
	error?: { code: string; message: string };
	text: string;
	matches: Array<{ name: string; summary: string; state: string }>;
	/** Names newly loaded by this call. */
	loaded: string[];
	/** Requested names that were already loaded or visible. */
	alreadyActive: string[];
	rejected: Array<{ name: string; reason: string }>;
	/** The session's loaded set after this call (stored; the next sync makes the names visible). */
	loadedDeferred: string[];
}

/** One rules-editor edit: the new list, or the refusal shown to the user (nothing changed). */
export interface RulesEditResult {
	rules?: RuleDef[];
	error?: string;
}
