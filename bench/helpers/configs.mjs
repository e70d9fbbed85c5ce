// The toolkit configs the benchmarks compare, built in one place (bench/schema-size.mjs, bench/startup.mjs): the presets exactly as `/pct config` writes them (configPresetApply, src/config/presets.rs)
// and "every feature on".
import { createRequire } from "node:module";

const native = createRequire(import.meta.url)("../../index.js");

/** A preset applied to `base` (default: an empty config), as `/pct config` → Preset writes it. */
export function presetConfig(key, base = {}) {
	return native.configPresetApply(base, key);
}

/**
 * Every config section switched on: the legacy-free switches of the Codex route, Tool Discovery, the host tools,
 * the network features (Web Search on its sidecar backend, so its tool can be registered), Remote Compaction,
 * Computer Use (macOS only; elsewhere it registers nothing), the interactive tools and Task subagents (no
 * definitions here, so no Task tool: it needs one).
 */
export const ALL_ON = Object.freeze({
	applyPatch: { enabled: true },
	shellSessions: { enabled: true },
	codeMode: { enabled: true },
	toolDiscovery: { enabled: true },
	hostTools: { enabled: true },
	webSearch: { enabled: true, backend: "sidecar" },
	imageGeneration: { enabled: true },
	remoteCompaction: { enabled: true },
	computerUse: { enabled: true },
	interactiveTools: { enabled: true },
	subagents: { enabled: true },
});

/** The Codex route of the target: the Codex preset (patch + shell + code) with find_tools. */
export const CODEX_ROUTE = Object.freeze({ ...presetConfig("codex"), toolDiscovery: { enabled: true } });
