/**
 * The `/pct` command: config menu (a ctx.ui.select loop over a draft, saved under the lock), status and reload.
 * Without an interactive UI, output goes to stderr and the config menu only prints the file path.
 */
import type { ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Toolkit } from "./toolkit.ts";
import type { EffectiveConfig, ExecutionRule } from "../../index.js";
import type { AutocompleteItem } from "@earendil-works/pi-tui";
import { RELOADED, SAVED, say } from "./messages.ts";
import { native } from "./native.ts";
import { fromJson, observe, rulesPreview, toJson } from "./rules.ts";
import { jobOutput, jobRow, jobsOf, registerFooter, statusText, stopJob, summary, type Job } from "./status.ts";
import { jobsWidget } from "./render/jobs.ts";
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
import { worktreeCommand, worktreeStatusLine } from "./worktree.ts";

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

/** One argument a sub-command completes, with what it does (shown beside it in Pi's completion list). */
export interface PctArgument {
	value: string;
	description: string;
}

/** One `/pct` sub-command: its name, its argument syntax for the usage line, one line of what it does (completion and
 * docs), and the arguments it completes. */
export interface PctCommand {
	name: string;
	/** The argument syntax after the name (`[stop <id>|stop all]`); absent = takes no argument. */
	args?: string;
	description: string;
	completions?: readonly PctArgument[];
}

/**
 * Every `/pct` sub-command, in the order the usage line, the completion list and the docs table (docs/render.md
 * "/pct") show them. The usage line, `getArgumentCompletions` and the docs table are all derived from this one
 * table; the dispatcher has one handler per name (the type makes a missing one a compile error), and
 * __test__/render.test.mjs checks the docs table and every `/pct` command the docs name against it.
 */
export const PCT_COMMANDS = [
	{ name: "config", description: "the settings menu (also plain /pct)" },
	{
		name: "status",
		args: "[all]",
		description: "one screen: the summary, features by state, modes; all: every detail",
		completions: [{ value: "all", description: "every feature's reason and details, the model, the execution rules" }],
	},
	{ name: "reload", description: "re-read the toolkit's config file and re-sync its tools" },
	{
		name: "jobs",
		args: "[show <id>|stop <id>|stop all]",
		description: "running background tasks, code cells and shell sessions: their last output; show one's full output; stop one or all",
		completions: [
			{ value: "show", description: "one job's full output (a task's last 256 KiB per stream and its recovery file)" },
			{ value: "stop", description: "stop one job by its id" },
			{ value: "stop all", description: "stop every running job" },
		],
	},
	{
		name: "review",
		args: "[show <n>|rollback <n>|rollback all]",
		description: "the session's file changes: show a diff, roll back one or all",
		completions: [
			{ value: "show", description: "show change <n>'s diff" },
			{ value: "rollback", description: "roll back change <n>" },
			{ value: "rollback all", description: "roll back every active change, newest first" },
		],
	},
	{
		name: "permission",
		args: `[${PERMISSION_MODES.join("|")}|default|revoke <tool>|revoke all]`,
		description: "this session's permission mode for every toolkit tool, and its session grants",
		completions: [
			...PERMISSION_MODES.map((m) => ({ value: m, description: PERMISSION_MODE_TEXT[m] })),
			{ value: "default", description: "back to the config's mode" },
			{ value: "revoke", description: "take back one tool's \"Allow for this session\"" },
			{ value: "revoke all", description: "take back every \"Allow for this session\"" },
		],
	},
	{
		name: "mode",
		args: "[plan|agent]",
		description: "the operation mode: Plan (read and plan) or Agent",
		completions: [
			{ value: "plan", description: "read and plan; edits are refused" },
			{ value: "agent", description: "the normal mode" },
		],
	},
	{ name: "todos", description: "the session's todo list (what the model last sent with TodoWrite)" },
	{ name: "agents", description: "the Task agent definitions, their tools and warnings" },
	{
		name: "worktree",
		args: "[new [name]|list|merge [token]|leave|delete <id> [force]]",
		description: "this session's isolated git worktree: where it is; new, list, merge, leave, delete (docs/worktrees.md)",
		completions: [
			{ value: "new", description: "create a worktree from HEAD and move this session into it" },
			{ value: "list", description: "this project's worktrees: in use, idle, missing, leftover" },
			{ value: "merge", description: "preview, then fast-forward the project to this worktree's work" },
			{ value: "leave", description: "back to a session in the project checkout; the worktree stays" },
			{ value: "delete", description: "snapshot unmerged work, then remove a worktree and its branch" },
		],
	},
] as const satisfies readonly PctCommand[];

const PERMISSION: PctCommand = PCT_COMMANDS.find((c) => c.name === "permission")!;

/** A sub-command's name. */
export type PctName = (typeof PCT_COMMANDS)[number]["name"];

const COMMANDS: readonly PctCommand[] = PCT_COMMANDS;

/** `/pct config` or `/pct jobs [show <id>|stop <id>|stop all]`. */
export function pctSyntax(c: PctCommand): string {
	return c.args ? `/pct ${c.name} ${c.args}` : `/pct ${c.name}`;
}

/** The usage line `/pct` prints for anything it does not know. */
export const PCT_USAGE = `Usage: /pct [${COMMANDS.map((c) => (c.args ? `${c.name} ${c.args}` : c.name)).join("|")}]`;

/** The docs table of the sub-commands (docs/render.md "/pct" holds exactly these lines; a unit test compares). */
export function pctDocsTable(): string {
	const esc = (s: string) => s.replace(/\|/g, "\\|");
	return ["| command | what it does |", "|---|---|", ...COMMANDS.map((c) => `| \`${esc(pctSyntax(c))}\` | ${esc(c.description)} |`)].join("\n");
}

/** The sub-command `args` names and what follows it, or undefined for an unknown one (plain `/pct` is `config`). */
export function pctRoute(args: string): { name: PctName; arg: string } | undefined {
	const s = (args ?? "").trim();
	if (s === "") return { name: "config", arg: "" };
	const sp = s.search(/\s/);
	const name = sp < 0 ? s : s.slice(0, sp);
	const c = COMMANDS.find((x) => x.name === name);
	if (!c) return undefined;
	return { name: c.name as PctName, arg: sp < 0 ? "" : s.slice(sp + 1).trim() };
}

/** Completions for what follows `/pct `: sub-commands (with what they do), then their arguments. */
export function pctCompletions(prefix: string): AutocompleteItem[] | null {
	const p = prefix.replace(/^\s+/, "");
	const sp = p.indexOf(" ");
	if (sp < 0) {
		const subs = COMMANDS.filter((c) => c.name.startsWith(p));
		return subs.length ? subs.map((c) => ({ value: c.name, label: c.name, description: c.description })) : null;
	}
	const sub = COMMANDS.find((c) => c.name === p.slice(0, sp));
	const rest = p.slice(sp + 1);
	const args = (sub?.completions ?? []).filter((a) => a.value.startsWith(rest));
	return args.length ? args.map((a) => ({ value: `${sub!.name} ${a.value}`, label: a.value, description: a.description })) : null;
}

type Handler = (ctx: Ctx, arg: string) => Promise<void> | void;

/** Registers `/pct`. `_registered` = tool names the feature modules registered (kept for the call sites). */
export function registerPctCommand(tk: Toolkit, _registered: Set<string>): void {
	registerFooter(tk.pi, tk);
	// A sub-command that takes no argument answers an argument with the usage line.
	const bare = (run: (ctx: Ctx) => Promise<void> | void): Handler => (ctx, arg) => (arg === "" ? run(ctx) : say(ctx, PCT_USAGE, "warning"));
	const handlers: Record<PctName, Handler> = {
		config: bare((ctx) => configMenu(tk, ctx)),
		status: (ctx, arg) => (arg === "" || arg === "all" ? say(ctx, worktreeStatusLine(tk) + statusText(tk, ctx, arg === "all")) : say(ctx, PCT_USAGE, "warning")),
		reload: bare((ctx) => {
			const r = tk.reload();
			tk.sync(ctx);
			return r.ok ? say(ctx, RELOADED) : say(ctx, r.message, "warning");
		}),
		jobs: (ctx, arg) => jobsCommand(tk, ctx, arg),
		review: (ctx, arg) => reviewCommand(tk.agentDir, ctx, arg),
		permission: (ctx, arg) => permissionCommand(tk, ctx, arg),
		mode: (ctx, arg) => {
			const r = modeCommand(tk, ctx, arg);
			say(ctx, r.text, r.level);
		},
		todos: bare((ctx) => say(ctx, (tk.shared.get(TODOS_KEY) as (() => string) | undefined)?.() ?? "The todo list is not available in this build.")),
		agents: bare((ctx) => say(ctx, agentsText(tk, ctx.cwd))),
		worktree: (ctx, arg) => worktreeCommand(tk, ctx, arg),
	};
	tk.pi.registerCommand("pct", {
		description: `Pi Codex Toolkit: /pct [${COMMANDS.map((c) => c.name).join("|")}]`,
		getArgumentCompletions: pctCompletions,
		handler: async (args: string, ctx: Ctx) => {
			const route = pctRoute(args);
			if (!route) return say(ctx, PCT_USAGE, "warning");
			return handlers[route.name](ctx, route.arg);
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

/** The session grants in one line: what "Allow for this session" covers now, and how to take it back. */
function grantsText(rt: HostRuntime): string {
	const granted = rt.permissions.allowedTools();
	return granted.length
		? `Allowed for this session: ${granted.join(", ")} (/pct permission revoke <tool>|all asks again).`
		: "Allowed for this session: none.";
}

/** `/pct permission [ask|accept-edits|auto|default|revoke <tool>|revoke all]`: this session's permission mode for every
 * toolkit tool (docs/permissions.md); `default` goes back to the config's mode; `revoke` takes back "Allow for this
 * session" grants; no argument shows the mode in force and the grants. */
function permissionCommand(tk: Toolkit, ctx: Ctx, arg: string): void {
	const rt = tk.shared.get("host.runtime") as HostRuntime | undefined;
	if (!rt) return say(ctx, "Permissions are not available in this build.", "warning");
	const configured = configuredMode(tk.config()) ?? "ask";
	if (arg === "") {
		const o = rt.permissions.sessionOverride;
		const mode = o ? `Permission mode for every toolkit tool: ${o} (this session; the config says ${configured})` : `Permission mode for every toolkit tool: ${configured} (from the config)`;
		return say(ctx, `${mode}\n${grantsText(rt)}`);
	}
	if (arg === "default") {
		rt.permissions.setOverride(null);
		refreshModeFooter(tk, ctx);
		return say(ctx, `Permission mode for this session: back to the config (${configured}).`);
	}
	const [verb, ...rest] = arg.split(/\s+/);
	if (verb === "revoke" && rest.length === 1) {
		const which = rest[0];
		const gone = rt.permissions.revokeSession(which === "all" ? null : which);
		if (gone.length === 0) return say(ctx, which === "all" ? "No tool was allowed for this session." : `${which} was not allowed for this session. ${grantsText(rt)}`, "warning");
		return say(ctx, `Revoked for this session: ${gone.join(", ")}; ${gone.length === 1 ? "it asks" : "they ask"} again. ${grantsText(rt)}`);
	}
	if (!(PERMISSION_MODES as readonly string[]).includes(arg)) {
		return say(ctx, `Usage: ${pctSyntax(PERMISSION)}`, "warning");
	}
	rt.permissions.setOverride(arg as (typeof PERMISSION_MODES)[number]);
	refreshModeFooter(tk, ctx);
	say(ctx, `Permission mode for this session: ${arg} for every toolkit tool (the config's ${configured} applies again in the next session).`);
}

/** The permission-mode submenu: each mode with what it means; the cursor starts on the mode in force. */
async function pickMode(ctx: Ctx, current: string, apply: (v: string) => void): Promise<void> {
	const items: MenuItem[] = PERMISSION_MODES.map((m) => ({ label: `${m} — ${PERMISSION_MODE_TEXT[m]}` }));
	const v = await choose(ctx, "Permission mode", items, Math.max(0, (PERMISSION_MODES as readonly string[]).indexOf(current)));
	const mode = v?.split(" — ")[0];
	if (mode && (PERMISSION_MODES as readonly string[]).includes(mode)) apply(mode);
}

/** The lines `/pct jobs show <id>` prints (its last ones; the widget's `o` scrolls through all it holds). */
export const JOBS_SHOW_LINES = 60;

/** `/pct jobs show <id>`: the job's output — in the widget's scrollable view in Pi's TUI, else its last lines. */
async function showJob(tk: Toolkit, ctx: Ctx, id: string): Promise<void> {
	if (!id) return say(ctx, JOBS_USAGE, "warning");
	const out = await jobOutput(tk, id);
	if (!out) return say(ctx, `No job ${id} with output: /pct jobs lists the running ones (a cell or shell session that ended is gone; its output is in the model's results).`, "warning");
	const cut = Math.max(0, out.lines.length - JOBS_SHOW_LINES);
	const more = cut > 0 ? [`… ${cut} earlier lines: /pct jobs, select the job, o scrolls through them`] : [];
	say(ctx, [out.title, ...more, ...out.lines.slice(cut)].join("\n"));
}

/** The usage line of `/pct jobs`. */
const JOBS_USAGE = `Usage: ${pctSyntax(PCT_COMMANDS.find((c) => c.name === "jobs")!)}`;

/** `/pct jobs [show <id>|stop <id>|stop all]`: running background tasks, code cells and shell sessions; one's output; stop one or all. */
async function jobsCommand(tk: Toolkit, ctx: Ctx, arg: string): Promise<void> {
	const cwd = ctx.cwd;
	const stopAll = async (list: Job[]) => {
		const said = await Promise.all(list.map((j) => stopJob(tk, j, cwd)));
		say(ctx, said.join("\n") || "Nothing was running.");
	};
	const [verb, ...rest] = arg.split(/\s+/).filter(Boolean);
	if (verb === "show") return showJob(tk, ctx, rest.join(" "));
	if (verb === "stop") {
		const list = jobsOf(tk).list;
		const key = rest.join(" ");
		if (key === "all") return stopAll(list);
		const j = list.find((x) => x.id === key);
		if (!j) return say(ctx, key ? `No running job ${key}. /pct jobs lists them.` : "Usage: /pct jobs stop <id>|all", "warning");
		return say(ctx, await stopJob(tk, j, cwd));
	}
	if (verb !== undefined) return say(ctx, JOBS_USAGE, "warning");
	// The live widget in Pi's TUI (docs/render.md "Running work"); the menu below where custom UI is unavailable.
	if (ctx.hasUI && jobsOf(tk).list.length > 0 && (await jobsWidget(ctx, { list: () => jobsOf(tk), stop: (j) => stopJob(tk, j, cwd), output: (j) => jobOutput(tk, j.id) }))) return;
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
		const act = await safeSelect(ctx.ui, jobRow(picked), ["Show output", "Stop", "Back"]);
		if (act === "Show output") await showJob(tk, ctx, picked.id);
		else if (act === "Stop") say(ctx, await stopJob(tk, picked, cwd));
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
