/**
 * The `/pct` command: config menu (a ctx.ui.select loop over a draft, saved under the lock), status and reload.
 * Without an interactive UI, output goes to stderr and the config menu only prints the file path.
 */
import type { ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Toolkit } from "./toolkit.ts";
import type { EffectiveConfig, ExecutionRule } from "../../index.js";
import { RELOADED, SAVED, USAGE, say } from "./messages.ts";
import { native } from "./native.ts";
import { fromJson, observe, rulesPreview, toJson } from "./rules.ts";
import { jobRow, jobsOf, registerFooter, statusText, stopJob, summary, type Job } from "./status.ts";
import { choose, type MenuItem } from "./render/menu.ts";
import { executorCandidates, executorEfforts } from "./net/facts.ts";
import { reviewCommand } from "./review.ts";
import { agentsText } from "./agents.ts";
import type { HostRuntime } from "./tools/host.ts";
import { TODOS_KEY } from "./tools/interactive.ts";
import { presetRows } from "./presets.ts";
import { configuredMode } from "./permission.ts";
import { modeCommand, refreshModeFooter } from "./plan.ts";
import { safeInput, safeSelect } from "./render/safe.ts";

type Ctx = ExtensionCommandContext;


const onOff = (v: unknown) => (v ? "on" : "off");
const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const PERMISSION_MODES = ["ask", "accept-edits", "auto"] as const;
/** What each permission mode means, in one line (docs/permissions.md "The matrix"). */
export const PERMISSION_MODE_TEXT: Record<(typeof PERMISSION_MODES)[number], string> = {
	ask: "reads run; every edit, command and extension tool asks first",
	"accept-edits": "reads and workspace edits run; commands, extension tools and paths outside the workspace ask",
	auto: "everything runs without asking (also outside the workspace)",
};

/** `/pct`'s sub-commands and their arguments, for completion (`getArgumentCompletions`). */
export const SUBCOMMANDS: Record<string, string[]> = {
	config: [],
	status: [],
	reload: [],
	jobs: ["stop all"],
	review: ["show", "rollback", "rollback all"],
	permission: [...PERMISSION_MODES, "default"],
	mode: ["plan", "agent"],
	agents: [],
};

/** Completions for what follows `/pct `: sub-commands, then their arguments. */
export function pctCompletions(prefix: string): { value: string; label: string }[] | null {
	const p = prefix.replace(/^\s+/, "");
	const sp = p.indexOf(" ");
	if (sp < 0) {
		const subs = Object.keys(SUBCOMMANDS).filter((s) => s.startsWith(p));
		return subs.length ? subs.map((s) => ({ value: s, label: s })) : null;
	}
	const sub = p.slice(0, sp);
	const rest = p.slice(sp + 1);
	const args = (SUBCOMMANDS[sub] ?? []).filter((a) => a.startsWith(rest));
	return args.length ? args.map((a) => ({ value: `${sub} ${a}`, label: a })) : null;
}

/** Registers `/pct`. `registered` = tool names the feature modules registered (for status). */
export function registerPctCommand(tk: Toolkit, registered: Set<string>): void {
	registerFooter(tk.pi, tk);
	tk.pi.registerCommand("pct", {
		description: "Pi Codex Toolkit: /pct [config|status|reload|jobs|review|permission|mode|agents]",
		getArgumentCompletions: pctCompletions,
		handler: async (args: string, ctx: Ctx) => {
			const sub = (args ?? "").trim();
			if (sub === "" || sub === "config") return configMenu(tk, ctx);
			if (sub === "status") return say(ctx, statusText(tk, ctx, registered));
			if (sub === "todos") return say(ctx, (tk.shared.get(TODOS_KEY) as (() => string) | undefined)?.() ?? "The todo list is not available in this build.");
			if (sub === "jobs" || sub.startsWith("jobs ")) return jobsCommand(tk, ctx, sub.slice("jobs".length).trim());
			if (sub === "review" || sub.startsWith("review ")) return reviewCommand(tk.agentDir, ctx, sub.slice("review".length));
			if (sub === "permission" || sub.startsWith("permission ")) return permissionCommand(tk, ctx, sub.slice("permission".length).trim());
			if (sub === "mode" || sub.startsWith("mode ")) {
				const r = modeCommand(tk, ctx, sub.slice("mode".length).trim());
				return say(ctx, r.text, r.level);
			}
			if (sub === "agents") return say(ctx, agentsText(tk, ctx.cwd));
			if (sub === "reload") {
				const r = tk.reload();
				tk.sync(ctx);
				return r.ok ? say(ctx, RELOADED) : say(ctx, r.message, "warning");
			}
			say(ctx, USAGE, "warning");
		},
	});
}

/** The settings menu. Edits a draft; Save writes it under the lock; a refused save keeps the draft open. */
async function configMenu(tk: Toolkit, ctx: Ctx): Promise<void> {
	if (!ctx.hasUI) return say(ctx, `Pi Codex Toolkit config: ${tk.configPath}`);
	let draft: Record<string, unknown> = structuredClone(tk.raw ?? {});
	let base = tk.revision;
	const opened = JSON.stringify(draft);
	let cursor = 0;
	// A dismissed "Discard?" question keeps the draft open once; Esc right after discards (two Esc = leave).
	let askedToDiscard = false;
	const eff = () => native.configEffective(native.configValidate(draft) ? {} : draft);
	const set = (path: string, value: unknown): void => {
		draft = native.configDraftSet(draft, path, value);
	};
	for (;;) {
		const e = eff();
		const ws = e.webSearch;
		const rows: [string, () => Promise<void> | void][] = [
			...presetRows(ctx, e, draft, (next) => (draft = next)),
			[`Web Search: ${onOff(ws.enabled)}`, () => set("webSearch.enabled", !ws.enabled)],
			[`Web Search backend: ${ws.backend}`, () => pick(ctx, "Web Search backend", ["auto", "native", "sidecar"], (v) => set("webSearch.backend", v))],
			[`Web Search mode: ${ws.mode}`, () => pick(ctx, "Web Search mode", ["live", "cached"], (v) => set("webSearch.mode", v))],
			[`Search context size: ${ws.contextSize}`, () => pick(ctx, "Search context size", ["low", "medium", "high"], (v) => set("webSearch.contextSize", v))],
			[`Web Search executor: ${ws.sidecarModel ? `${ws.sidecarModel.provider}/${ws.sidecarModel.model}` : "—"}`, () => pickExecutor(ctx, draft, set)],
			[`Web Search executor effort: ${ws.sidecarModel ? ws.sidecarModel.thinkingLevel : "—"}`, () => pickEffort(ctx, ws.sidecarModel, set)],
			[`Remote Compaction: ${onOff(e.remoteCompaction.enabled)}`, () => set("remoteCompaction.enabled", !e.remoteCompaction.enabled)],
			[`Image Generation: ${onOff(e.imageGeneration.enabled)}`, () => set("imageGeneration.enabled", !e.imageGeneration.enabled)],
			[`Computer Use: ${onOff(e.computerUse.enabled)}`, () => set("computerUse.enabled", !e.computerUse.enabled)],
			[`Computer Use approval: ${cap(e.computerUse.approvalMode)}`, () => set("computerUse.approvalMode", e.computerUse.approvalMode === "confirm" ? "always" : "confirm")],
		];
		if (!draft.execution) {
			rows.push(
				[`Apply Patch: ${onOff(e.applyPatch.enabled)}`, () => set("applyPatch.enabled", !e.applyPatch.enabled)],
				[`Shell Sessions: ${onOff(e.shellSessions.enabled)}`, () => set("shellSessions.enabled", !e.shellSessions.enabled)],
				[`Code Mode: ${onOff(e.codeMode.enabled)}`, () => set("codeMode.enabled", !e.codeMode.enabled)],
			);
		}
		rows.push(
			[`Execution rules: ${draft.execution ? `${(draft.execution as { rules: unknown[] }).rules.length} rule(s)` : "none (the Apply Patch, Shell Sessions and Code Mode switches decide)"}`, async () => {
				draft = await rulesEditor(tk, ctx, draft);
			}],
			[`Code Mode nested apply_patch approval: ${cap(e.codeMode.approvalMode)}`, () => set("codeMode.approvalMode", e.codeMode.approvalMode === "confirm" ? "always" : "confirm")],
			[`Tool Discovery: ${onOff(e.toolDiscovery.enabled)}`, () => set("toolDiscovery.enabled", !e.toolDiscovery.enabled)],
			[`Host Tools: ${onOff(e.hostTools.enabled)}`, () => set("hostTools.enabled", !e.hostTools.enabled)],
			// One policy for every tool: the row writes permissions.mode (the older hostTools.permissionMode is still read
			// when permissions.mode is unset, docs/permissions.md "Configuration").
			[`Permission mode: ${configuredMode(e) ?? "ask"}`, () => pickMode(ctx, configuredMode(e) ?? "ask", (v) => set("permissions.mode", v))],
			[`Interactive Tools: ${onOff(e.interactiveTools.enabled)}`, () => set("interactiveTools.enabled", !e.interactiveTools.enabled)],
			[`  asktool: ${onOff(e.interactiveTools.askTool)}`, () => set("interactiveTools.askTool", !e.interactiveTools.askTool)],
			[`  TodoWrite: ${onOff(e.interactiveTools.todoWrite)}`, () => set("interactiveTools.todoWrite", !e.interactiveTools.todoWrite)],
			[`  new_context: ${onOff(e.interactiveTools.newContext)}`, () => set("interactiveTools.newContext", !e.interactiveTools.newContext)],
			[`Task subagents: ${onOff(e.subagents.enabled)}`, () => set("subagents.enabled", !e.subagents.enabled)],
			[`Debug metadata: ${onOff(e.debug)}`, () => set("debug", !e.debug)],
		);
		const labels = [...rows.map((r) => r[0]), "Save", "Cancel"];
		const changed = JSON.stringify(draft) !== opened;
		const choice = await choose(ctx, changed ? "Pi Codex Toolkit settings (unsaved changes)" : "Pi Codex Toolkit settings", labels.map((label) => ({ label })), cursor);
		if (choice === undefined || choice === "Cancel") {
			if (!changed) return;
			// Esc with unsaved changes asks first: the draft is never dropped silently.
			const sure: string | undefined = askedToDiscard ? "Discard changes" : await safeSelect(ctx.ui, "Discard the unsaved changes?", ["Keep editing", "Save", "Discard changes"]);
			if (sure === "Discard changes") return say(ctx, "Pi Codex Toolkit configuration: changes discarded.");
			askedToDiscard = sure !== "Keep editing" && sure !== "Save";
			if (sure !== "Save") continue;
		} else askedToDiscard = false;
		const picked = choice === undefined || choice === "Cancel" ? "Save" : choice;
		if (picked === "Save") {
			const out = await native.configSave(tk.configPath, draft, base);
			if (!out.ok) {
				say(ctx, out.message, "error");
				continue; // the draft stays open
			}
			tk.lastError = null;
			tk.hasLastKnownGood = true;
			tk.adopt(out.raw, out.revision);
			tk.sync(ctx);
			draft = structuredClone(out.raw);
			base = out.revision;
			return say(ctx, SAVED);
		}
		// The cursor stays on the row just changed (its label changes with its value, so keep the index).
		const i = rows.findIndex((r) => r[0] === picked);
		if (i >= 0) {
			cursor = i;
			await rows[i][1]();
		}
	}
}

/** `/pct permission [ask|accept-edits|auto|default]`: this session's host-tool permission mode (docs/host.md
 * "Permissions"); `default` goes back to hostTools.permissionMode; no argument shows the mode in force. */
function permissionCommand(tk: Toolkit, ctx: Ctx, arg: string): void {
	const rt = tk.shared.get("host.runtime") as HostRuntime | undefined;
	if (!rt) return say(ctx, "Host Tools are not available in this build.", "warning");
	const configured = configuredMode(tk.config()) ?? "ask";
	if (arg === "") {
		const o = rt.permissions.sessionOverride;
		return say(ctx, o ? `Host Tools permission mode: ${o} (this session; the config says ${configured})` : `Host Tools permission mode: ${configured} (from the config)`);
	}
	if (arg === "default") {
		rt.permissions.setOverride(null);
		refreshModeFooter(tk, ctx);
		return say(ctx, `Host Tools permission mode for this session: back to the config (${configured}).`);
	}
	if (!(PERMISSION_MODES as readonly string[]).includes(arg)) {
		return say(ctx, `Usage: /pct permission [${PERMISSION_MODES.join("|")}|default]`, "warning");
	}
	rt.permissions.setOverride(arg as (typeof PERMISSION_MODES)[number]);
	refreshModeFooter(tk, ctx);
	say(ctx, `Host Tools permission mode for this session: ${arg} (the config's ${configured} applies again in the next session).`);
}

/** The permission-mode submenu: each mode with what it means; the cursor starts on the mode in force. */
async function pickMode(ctx: Ctx, current: string, apply: (v: string) => void): Promise<void> {
	const items: MenuItem[] = PERMISSION_MODES.map((m) => ({ label: `${m} — ${PERMISSION_MODE_TEXT[m]}` }));
	const v = await choose(ctx, "Permission mode", items, Math.max(0, (PERMISSION_MODES as readonly string[]).indexOf(current)));
	const mode = v?.split(" — ")[0];
	if (mode && (PERMISSION_MODES as readonly string[]).includes(mode)) apply(mode);
}

/** `/pct jobs [stop <id>|stop all]`: running background tasks, code cells and shell sessions; stop one or all. */
async function jobsCommand(tk: Toolkit, ctx: Ctx, arg: string): Promise<void> {
	const cwd = ctx.cwd;
	const stopAll = async (list: Job[]) => {
		const said = await Promise.all(list.map((j) => stopJob(tk, j, cwd)));
		say(ctx, said.join("\n") || "Nothing was running.");
	};
	const [verb, ...rest] = arg.split(/\s+/).filter(Boolean);
	if (verb === "stop") {
		const list = jobsOf(tk).list;
		const key = rest.join(" ");
		if (key === "all") return stopAll(list);
		const j = list.find((x) => x.id === key);
		if (!j) return say(ctx, key ? `No running job ${key}. /pct jobs lists them.` : "Usage: /pct jobs stop <id>|all", "warning");
		return say(ctx, await stopJob(tk, j, cwd));
	}
	if (verb !== undefined) return say(ctx, "Usage: /pct jobs [stop <id>|stop all]", "warning");
	for (;;) {
		const j = jobsOf(tk);
		const s = summary(j);
		const head = s ? `Running: ${s}` : "Nothing is running (no background tasks, code cells or shell sessions).";
		if (!ctx.hasUI || j.list.length === 0) return say(ctx, [head, ...j.list.map((x) => `  ${jobRow(x)}`)].join("\n"));
		const rows = j.list.map((x) => jobRow(x));
		const choice = await safeSelect(ctx.ui, head, [...rows, "Stop all", "Close"]);
		if (choice === undefined || choice === "Close") return;
		if (choice === "Stop all") {
			await stopAll(j.list);
			continue;
		}
		const picked = j.list[rows.indexOf(choice)];
		if (!picked) continue;
		const act = await safeSelect(ctx.ui, jobRow(picked), ["Stop", "Back"]);
		if (act === "Stop") say(ctx, await stopJob(tk, picked, cwd));
	}
}

async function pick(ctx: Ctx, title: string, options: string[], apply: (v: string) => void): Promise<void> {
	const v = await safeSelect(ctx.ui, title, options);
	if (v !== undefined && options.includes(v)) apply(v);
}

/** Executor candidates: models on an official route whose credential kind matches, within Pi's scoped models when
 * set (src/pi/net/facts.ts; docs/net.md). */
async function pickExecutor(ctx: Ctx, _draft: Record<string, unknown>, set: (p: string, v: unknown) => void): Promise<void> {
	const candidates = executorCandidates(ctx.modelRegistry, ctx.scopedModels);
	if (candidates.length === 0) return say(ctx, "No model qualifies as a Web Search executor: it needs an openai model with an API key or an openai-codex model with a ChatGPT login (/login), on the official endpoint.", "warning");
	const labels = ["none", ...candidates.map((m) => `${m.provider}/${m.id}`)];
	const v = await safeSelect(ctx.ui, "Web Search executor", labels);
	if (v === undefined) return;
	if (v === "none") return set("webSearch.sidecarModel", null);
	const m = candidates[labels.indexOf(v) - 1];
	if (!m) return;
	set("webSearch.sidecarModel", { provider: m.provider, model: m.id, thinkingLevel: "auto" });
}

/** The effort menu offers the chosen model's own thinking levels (`auto` only on the openai API-key route). */
async function pickEffort(ctx: Ctx, sm: EffectiveConfig["webSearch"]["sidecarModel"], set: (p: string, v: unknown) => void): Promise<void> {
	if (!sm) return say(ctx, "Choose a Web Search executor first.", "warning");
	const options = executorEfforts(ctx.modelRegistry, String(sm.provider), String(sm.model));
	await pick(ctx, "Web Search executor effort", options, (v) => set("webSearch.sidecarModel", { ...sm, thinkingLevel: v }));
}

/** One edit through the Rust rules editor; a refusal (e.g. a duplicate id) is shown and changes nothing. */
function edit(ctx: Ctx, rules: ExecutionRule[], action: Parameters<typeof native.rulesEditorApply>[1], index?: number, value?: string): ExecutionRule[] {
	const out = fromJson(native.rulesEditorApply(toJson(rules), action, index, value));
	if (out.error !== undefined || out.rules === undefined) {
		say(ctx, out.error ?? "The rules editor returned no list.", "error");
		return rules;
	}
	return out.rules;
}

/** The execution-rules editor. A legacy config previews one catch-all rule; opening (and Back without edits)
 * writes nothing, not even into the draft. */
async function rulesEditor(tk: Toolkit, ctx: Ctx, draft: Record<string, unknown>): Promise<Record<string, unknown>> {
	const opened = native.rulesEditorRules(toJson(draft));
	let rules = fromJson(opened);
	for (;;) {
		const ruleRows = native.rulesEditorRows(toJson(rules));
		const choice = await safeSelect(ctx.ui, "Execution rules", [...ruleRows, "Add rule", "Delete rule", "Move rule up", "Move rule down", "Preview current model", "Back"]);
		if (choice === undefined || choice === "Back") {
			if (JSON.stringify(rules) === opened) return draft;
			return native.configDraftSet(draft, "execution", { ...(draft.execution as Record<string, unknown> | undefined), version: 1, rules });
		}
		if (choice === "Add rule") rules = edit(ctx, rules, "add");
		else if (choice === "Delete rule" || choice === "Move rule up" || choice === "Move rule down") {
			const i = ruleRows.indexOf((await safeSelect(ctx.ui, choice, ruleRows)) ?? "");
			if (i < 0) continue;
			rules = edit(ctx, rules, choice === "Delete rule" ? "delete" : choice === "Move rule up" ? "up" : "down", i);
		} else if (choice === "Preview current model") {
			say(ctx, previewText(tk, ctx, rules));
		} else {
			const i = ruleRows.indexOf(choice);
			if (i >= 0) rules = await editRule(ctx, rules, i);
		}
	}
}

/** What the draft rules would do for the current model (decided by the rules engine). */
function previewText(tk: Toolkit, ctx: Ctx, rules: ExecutionRule[]): string {
	observe(tk, ctx);
	return rulesPreview(tk, rules);
}

async function editRule(ctx: Ctx, rules: ExecutionRule[], i: number): Promise<ExecutionRule[]> {
	for (;;) {
		const r = rules[i];
		const choice = await safeSelect(ctx.ui, `Rule ${i + 1}`, [`Id: ${r.id}`, `Match: ${r.match}`, `Patch: ${onOff(r.patch)}`, `Shell: ${onOff(r.shell)}`, `Code: ${onOff(r.code)}`, "Back"]);
		if (choice === undefined || choice === "Back") return rules;
		if (choice.startsWith("Id:")) {
			const v = await safeInput(ctx.ui, "Rule id", r.id);
			if (v !== undefined) rules = edit(ctx, rules, "id", i, v);
		} else if (choice.startsWith("Match:")) {
			const v = await safeInput(ctx.ui, "Model glob (* and ?; a / matches provider/modelId)", r.match);
			if (v !== undefined) rules = edit(ctx, rules, "match", i, v);
		} else {
			rules = edit(ctx, rules, "toggle", i, choice.split(":")[0].toLowerCase());
		}
	}
}
