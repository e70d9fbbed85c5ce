/**
 * The toolkit core: holds the config state (in force, last known good, last error), decides which toolkit tools
 * are active on every sync, and runs feature lifecycles at Pi's session events. Features plug in through
 * ToolkitHost (host.ts); the /pct commands live in commands.ts.
 */
import { fileURLToPath } from "node:url";
import { getAgentDir, type ExtensionAPI, type ExtensionContext, type ToolDefinition } from "@earendil-works/pi-coding-agent";
import type { FeatureLifecycle, InvocationHooks, ToolkitHost, ToolkitOptions } from "./host.ts";
import { configErrorMessage } from "./messages.ts";
import { native } from "./native.ts";
import type { EffectiveConfig, RulesConfigError, RulesInput } from "../../index.js";
import { findTools, netFacts, newRulesState, observe, registrationPlan, type RulesState, syncRules } from "./rules.ts";

/** The last failed read, shown by /pct status and reload (its code is one of docs/config.md "Reads"). */
export type ConfigError = RulesConfigError;

export class Toolkit implements ToolkitHost {
	readonly pi: ExtensionAPI;
	readonly hooks: InvocationHooks;
	readonly agentDir: string;
	readonly configPath: string;
	readonly shared = new Map<string, unknown>();
	/** The embedder's pinned identity, if any. */
	private readonly pinnedSource?: string;
	/** This package's entry file: what Pi reports when it loads the default export. */
	private readonly entryPath: string;
	/** The parameter schema objects this factory registered, by tool name: Pi hands the same objects back in
	 * getAllTools(), which proves a registration is ours even when Pi attributes it to an embedder's file. */
	readonly ownSchemas = new Map<string, unknown>();
	/** Tool definitions the feature modules declared at load, by name; Pi sees one only once it is wanted. */
	private readonly offered = new Map<string, ToolDefinition>();
	/** Names this factory registered with Pi. Pi cannot unregister, so a feature turned off keeps them, inactive. */
	readonly registeredNames = new Set<string>();
	/** The raw object and revision in force (null raw = all-off defaults). */
	raw: Record<string, unknown> | null = null;
	revision: string | null = null;
	/** Whether a valid config was read or saved since load (decides the reload message ending). */
	hasLastKnownGood = false;
	/** Whether `raw`/`revision` were put in force by `adopt` (before, the all-off defaults are in force). */
	private adopted = false;
	lastError: ConfigError | null = null;
	applyError: string | null = null;
	private effectiveConfig: EffectiveConfig;
	private lifecycles = new Map<string, FeatureLifecycle>();
	/** Execution-rules / discovery state between syncs (decisions are made in Rust: src/rules, src/discovery). */
	rules: RulesState = newRulesState();

	constructor(pi: ExtensionAPI, options: ToolkitOptions) {
		this.pi = pi;
		this.hooks = options.invocationHooks ?? {};
		this.agentDir = getAgentDir();
		this.configPath = native.configPath(this.agentDir);
		// The entry file this code was loaded from: relative to the bundle (dist/pi-codex-toolkit/index.ts, the
		// manifest's entry) it is the bundle itself, relative to src/pi/ the unbundled entry (docs/release.md
		// "The bundled entry").
		this.entryPath = fileURLToPath(new URL("../pi-codex-toolkit/index.ts", import.meta.url));
		this.pinnedSource = options.sourcePath;
		this.effectiveConfig = native.configDefaults();
		this.shared.set("rules.findTools", (params: Record<string, unknown>) => findTools(this, params));
	}

	/** Records a feature's tool definition (the feature modules' `registerTool`); registered by a later sync. */
	offer(def: ToolDefinition): void {
		this.offered.set(def.name, def);
	}

	/**
	 * Registers the declared tools the config turns on whose names no other extension owns (the addon decides:
	 * src/rules/registration.rs). Pi accepts registerTool after load and refreshes its tool list; a taken name is
	 * never registered, so its feature reports `name-taken` and the rest of the toolkit works. `facts`: the parts of
	 * the snapshot this sync already read (its network facts).
	 */
	private registerWanted(facts: Partial<RulesInput>): void {
		const todo = [...this.offered.keys()].filter((n) => !this.registeredNames.has(n));
		if (todo.length === 0) return;
		let names: string[];
		try {
			names = registrationPlan(this, todo, facts).register;
		} catch (e) {
			this.applyError = `registration failed: ${e instanceof Error ? e.message : String(e)}`;
			return;
		}
		for (const name of names) {
			const def = this.offered.get(name)!;
			this.ownSchemas.set(name, def.parameters);
			this.registeredNames.add(name);
			this.pi.registerTool(def);
		}
	}

	config(): EffectiveConfig {
		return this.effectiveConfig;
	}

	isAdmitted(toolName: string): boolean {
		return this.rules.admitted.has(toolName);
	}

	/** Whether code cells may call this adapter now (execution rules can admit apply_patch only inside cells). */
	isNestedAdmitted(toolName: string): boolean {
		return this.rules.nested.has(toolName);
	}

	/** The names Tool Discovery holds back after the last sync. */
	deferredNames(): string[] {
		return this.rules.last?.deferredNames ?? [];
	}

	lifecycle(feature: string, callbacks: FeatureLifecycle): void {
		this.lifecycles.set(feature, { ...this.lifecycles.get(feature), ...callbacks });
	}

	/** Re-reads the file. On failure the config in force stays (last known good, else all-off defaults). */
	reload(): { ok: true } | { ok: false; message: string } {
		let out: ReturnType<typeof native.configRead>;
		try {
			out = native.configRead(this.configPath);
		} catch (e) {
			// The engine classifies every read (docs/config.md §Limits); should it still throw, Pi must start anyway.
			out = { status: "error", code: "config-read-failed", detail: e instanceof Error ? e.message : String(e), revision: null, raw: null };
		}
		if (out.status === "error") {
			this.lastError = { code: out.code!, detail: out.detail };
			return { ok: false, message: configErrorMessage(out.code!, out.detail, this.hasLastKnownGood) };
		}
		this.lastError = null;
		const raw = out.status === "ok" ? (out.raw ?? null) : null;
		const revision = out.revision ?? null;
		// The same bytes as the config in force (the revision is their SHA-256, docs/config.md "Reads"), as when a
		// session start re-reads the file the load just read: the config in force stays, nothing is converted again.
		if (!(this.adopted && revision === this.revision && (raw === null) === (this.raw === null))) this.adopt(raw, revision);
		if (out.status === "ok") this.hasLastKnownGood = true;
		return { ok: true };
	}

	/** Puts a raw config in force (after a good read or a successful save). */
	adopt(raw: Record<string, unknown> | null, revision: string | null): void {
		const before = this.effectiveConfig;
		this.adopted = true;
		this.raw = raw;
		this.revision = revision;
		this.effectiveConfig = native.configEffective(raw);
		void this.notifyDisabled(before, this.effectiveConfig);
	}

	private async notifyDisabled(before: EffectiveConfig, after: EffectiveConfig): Promise<void> {
		const was = new Set<string>(native.configFeatures(before));
		const now = new Set<string>(native.configFeatures(after));
		for (const [feature, cb] of this.lifecycles) {
			if (was.has(feature) && !now.has(feature) && cb.disabled) {
				try {
					await cb.disabled();
				} catch {
					// A feature's cleanup failure is reported through its own status; never break the sync.
				}
			}
		}
	}

	/**
	 * The source paths that identify this factory's registrations, resolved afresh on every call (never cached):
	 * the pinned `sourcePath`, else the paths of registrations proven ours by their schema objects, else this
	 * package's entry file. Empty when nothing can be proven: the factory then owns nothing.
	 */
	get identities(): Set<string> {
		if (this.pinnedSource) return new Set([this.pinnedSource]);
		const proven = new Set<string>();
		for (const t of this.pi.getAllTools()) {
			const mine = this.ownSchemas.get(t.name);
			if (mine !== undefined && t.parameters === mine && t.sourceInfo?.path) proven.add(t.sourceInfo.path);
		}
		if (proven.size === 0 && this.ownSchemas.size === 0) proven.add(this.entryPath);
		return proven;
	}

	/** Names of the toolkit tools Pi currently attributes to this factory. */
	ownedNames(): Set<string> {
		const ids = this.identities;
		const owned = new Set<string>();
		for (const t of this.pi.getAllTools()) {
			if (ids.has(t.sourceInfo?.path)) owned.add(t.name);
		}
		return owned;
	}

	/**
	 * Applies the projection decided by the rules engine (execution rules or legacy flags, ownership, discovery)
	 * with setActiveTools and emits the diagnostics record. `ctx`/`model` refresh what is known about the session.
	 */
	sync(ctx?: ExtensionContext, model?: ExtensionContext["model"]): void {
		observe(this, ctx, model);
		// One read of the network facts serves the registration plan and the projection (netFacts says why).
		let facts: Partial<RulesInput> = {};
		try {
			facts = { net: netFacts(this) };
		} catch {
			// Each snapshot reads them again and fails where it always did.
		}
		this.registerWanted(facts);
		syncRules(this, facts);
		// Reload, model change and session start retry cleanup a feature could not finish (reported until it does).
		for (const cb of this.lifecycles.values()) void cb.retry?.().catch(() => undefined);
	}

	/** Asks every feature to release its work before a session switch/fork; false = incomplete (veto). */
	async beforeSwitch(): Promise<boolean> {
		let clean = true;
		for (const cb of this.lifecycles.values()) {
			if (cb.beforeSwitch && !(await cb.beforeSwitch().catch(() => false))) clean = false;
		}
		return clean;
	}

	async shutdown(): Promise<void> {
		for (const cb of this.lifecycles.values()) {
			if (cb.shutdown) await cb.shutdown().catch(() => undefined);
		}
	}
}
