/**
 * The toolkit core: holds the config state (in force, last known good, last error), decides which toolkit tools
 * are active on every sync, and runs feature lifecycles at Pi's session events. Features plug in through
 * ToolkitHost (host.ts); the /pct commands live in commands.ts.
 */
import { fileURLToPath } from "node:url";
import { getAgentDir } from "@earendil-works/pi-coding-agent";
import type { FeatureLifecycle, InvocationHooks, ToolkitHost, ToolkitOptions } from "./host.ts";
import { configErrorMessage } from "./messages.ts";
import { native } from "./native.ts";

/** Toolkit tool names per legacy feature flag; groups are atomic (both names or neither). */
export const LEGACY_GROUPS: Record<string, string[]> = {
	applyPatch: ["apply_patch"],
	shellSessions: ["exec_command", "write_stdin"],
	codeMode: ["exec", "wait"],
};

/** The last failed read, shown by /pct status and reload. */
export interface ConfigError {
	code: string;
	detail?: string;
}

export class Toolkit implements ToolkitHost {
	readonly pi: any;
	readonly hooks: InvocationHooks;
	readonly agentDir: string;
	readonly configPath: string;
	readonly shared = new Map<string, unknown>();
	/** Paths Pi may report as the source of this factory's registrations. */
	readonly identities: Set<string>;
	/** The raw object and revision in force (null raw = all-off defaults). */
	raw: Record<string, any> | null = null;
	revision: string | null = null;
	/** Whether a valid config was read or saved since load (decides the reload message ending). */
	hasLastKnownGood = false;
	lastError: ConfigError | null = null;
	applyError: string | null = null;
	private effectiveConfig: any;
	private admitted = new Set<string>();
	private lifecycles = new Map<string, FeatureLifecycle>();
	/** Builtins this toolkit hid, so only those are ever restored. */
	hiddenByUs = new Set<string>();

	constructor(pi: any, options: ToolkitOptions) {
		this.pi = pi;
		this.hooks = options.invocationHooks ?? {};
		this.agentDir = getAgentDir();
		this.configPath = native.configPath(this.agentDir);
		const own = fileURLToPath(new URL("../index.ts", import.meta.url));
		this.identities = new Set([own, ...(options.sourcePath ? [options.sourcePath] : [])]);
		this.effectiveConfig = native.configDefaults();
	}

	config(): any {
		return this.effectiveConfig;
	}

	isAdmitted(toolName: string): boolean {
		return this.admitted.has(toolName);
	}

	lifecycle(feature: string, callbacks: FeatureLifecycle): void {
		this.lifecycles.set(feature, { ...this.lifecycles.get(feature), ...callbacks });
	}

	/** Re-reads the file. On failure the config in force stays (last known good, else all-off defaults). */
	reload(): { ok: true } | { ok: false; message: string } {
		const out = native.configRead(this.configPath);
		if (out.status === "error") {
			this.lastError = { code: out.code!, detail: out.detail };
			return { ok: false, message: configErrorMessage(out.code!, out.detail, this.hasLastKnownGood) };
		}
		this.lastError = null;
		this.adopt(out.status === "ok" ? out.raw : null, out.revision);
		if (out.status === "ok") this.hasLastKnownGood = true;
		return { ok: true };
	}

	/** Puts a raw config in force (after a good read or a successful save). */
	adopt(raw: Record<string, any> | null, revision: string | null): void {
		const before = this.effectiveConfig;
		this.raw = raw;
		this.revision = revision;
		this.effectiveConfig = native.configEffective(raw);
		void this.notifyDisabled(before, this.effectiveConfig);
	}

	private async notifyDisabled(before: any, after: any): Promise<void> {
		for (const [feature, cb] of this.lifecycles) {
			if (before?.[feature]?.enabled && !after?.[feature]?.enabled && cb.disabled) {
				try {
					await cb.disabled();
				} catch {
					// A feature's cleanup failure is reported through its own status; never break the sync.
				}
			}
		}
	}

	/** Names of the toolkit tools Pi currently attributes to this factory. */
	ownedNames(): Set<string> {
		const owned = new Set<string>();
		for (const t of this.pi.getAllTools() as any[]) {
			if (this.identities.has(t.sourceInfo?.path)) owned.add(t.name);
		}
		return owned;
	}

	/** Which toolkit names should be active now (legacy flags: they only add, never hide builtins). */
	projection(): { admitted: Set<string> } {
		const owned = this.ownedNames();
		const admitted = new Set<string>();
		for (const [feature, names] of Object.entries(LEGACY_GROUPS)) {
			if (!this.effectiveConfig[feature]?.enabled) continue;
			if (names.every((n) => owned.has(n))) for (const n of names) admitted.add(n);
		}
		return { admitted };
	}

	/** Applies the projection with setActiveTools, touching only toolkit names. */
	sync(): void {
		try {
			const { admitted } = this.projection();
			const managed = new Set(Object.values(LEGACY_GROUPS).flat());
			const active: string[] = this.pi.getActiveTools().filter((n: string) => !managed.has(n) || admitted.has(n));
			for (const n of admitted) if (!active.includes(n)) active.push(n);
			this.pi.setActiveTools(active);
			this.admitted = admitted;
			this.applyError = null;
		} catch (e: any) {
			this.applyError = String(e?.message ?? e);
		}
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
