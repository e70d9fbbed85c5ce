/**
 * `/pct status` text (toolkit.md §2): model line, config path, error lines, then one block per feature with
 * configured / effective / reason and the feature's extra lines.
 */
import type { Toolkit } from "./toolkit.ts";
import { describeConfigError } from "./messages.ts";

/** A feature as status sees it: its config key, display name and the tool names that make it callable. */
interface FeatureRow {
	key: string;
	title: string;
	names: string[];
	extra?: (tk: Toolkit, on: boolean, effective: string) => string[];
}

const COMPUTER_USE_NAMES = ["list_apps", "get_app_state", "click", "type_text", "press_key", "scroll"].map((n) => `computer_use_${n}`);

export const FEATURE_ROWS: FeatureRow[] = [
	{
		key: "webSearch",
		title: "Web Search",
		names: ["openai_web_search"],
		extra: (tk, on) => {
			const ws = tk.config().webSearch;
			const sm = ws.sidecarModel;
			return [
				`requested backend: ${ws.backend}`,
				`effective backend: ${on ? "unavailable" : "off"}`,
				`web search executor: ${sm ? `${sm.provider}/${sm.model}` : "—"}`,
				`web search executor effort: ${sm ? sm.thinkingLevel ?? "auto" : "—"}`,
			];
		},
	},
	{ key: "remoteCompaction", title: "Remote Compaction", names: [] },
	{ key: "imageGeneration", title: "Image Generation", names: ["openai_generate_image"], extra: () => ["backend: —"] },
	{ key: "computerUse", title: "Computer Use", names: COMPUTER_USE_NAMES, extra: () => ["transport: —"] },
	{ key: "applyPatch", title: "Apply Patch", names: ["apply_patch"] },
	{
		key: "shellSessions",
		title: "Shell Sessions",
		names: ["exec_command", "write_stdin"],
		extra: () => ["note: local pipes only, no TTY; a command starts once and is never replayed"],
	},
	{
		key: "codeMode",
		title: "Code Mode",
		names: ["exec", "wait"],
		extra: () => ["note: nested calls are dispatched by the cell; per-call tool hooks and third-party permission interceptors do not see them"],
	},
	{
		key: "toolDiscovery",
		title: "Tool Discovery",
		names: ["find_tools"],
		extra: () => ["managed deferred: 0, loaded this session: 0", "note: only explicitly managed toolkit tools can be loaded"],
	},
];

/** Why an enabled feature is not active, or "" when it is. */
function reasonFor(tk: Toolkit, row: FeatureRow, registered: Set<string>, owned: Set<string>): { effective: string; reason: string } {
	if (row.key === "computerUse" && process.platform !== "darwin") return { effective: "unavailable", reason: "unsupported-platform" };
	if (row.names.length === 0 || !row.names.every((n) => registered.has(n))) {
		return { effective: "off", reason: "not built in this version of pi-codex-toolkit" };
	}
	if (!row.names.every((n) => owned.has(n))) return { effective: "unavailable", reason: "conflicting-tool-name" };
	if (row.names.every((n) => tk.isAdmitted(n))) return { effective: "active", reason: "" };
	return { effective: "unavailable", reason: "not admitted by the current projection" };
}

/** The whole status text. `model` is ctx.model (may be undefined). */
export function statusText(tk: Toolkit, model: any, registered: Set<string>): string {
	const lines: string[] = ["Pi Codex Toolkit status"];
	lines.push(model ? `model: ${model.id}  provider: ${model.provider}  api: ${model.api}` : "model: none (current-model-missing)");
	lines.push(`config: ${tk.configPath}`);
	if (tk.lastError) lines.push(`Config error: ${describeConfigError(tk.lastError.code, tk.lastError.detail)}`);
	if (tk.applyError) lines.push(`Apply error: ${tk.applyError}`);
	const owned = tk.ownedNames();
	const cfg = tk.config();
	for (const row of FEATURE_ROWS) {
		const on = !!cfg[row.key]?.enabled;
		const { effective, reason } = on ? reasonFor(tk, row, registered, owned) : { effective: "off", reason: "" };
		lines.push("", row.title, `  configured: ${on ? "on" : "off"}`, `  effective: ${effective}`, `  reason: ${reason}`);
		for (const l of row.extra?.(tk, on, effective) ?? []) lines.push(`  ${l}`);
	}
	lines.push("", `Debug: ${cfg.debug ? "on" : "off"}`);
	return lines.join("\n");
}
