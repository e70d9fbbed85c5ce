/**
 * Task delegation, the parent side (docs/agents.md). `Task {agent, prompt, runInBackground?}` hands a prompt to a
 * delegate: its own Pi process (`--mode rpc`, this toolkit and the parent's other `-e` extensions, only the tools its
 * definition resolves to as Pi's `--tools` allowlist, the definition's body appended to the system prompt). Pi's RPC
 * mode was picked over `--mode json` because it carries the extension UI protocol: the delegate's permission cards
 * arrive here as `extension_ui_request` records and are shown in the parent's UI, naming the delegate
 * (src/pi/delegate.ts is the delegate's side). Everything that decides is in Rust (src/agents: definitions, tool
 * rules, slots, the answer cut; src/host/bash/tasks.rs: background delegates share the Bash task table, so TaskList,
 * TaskWait and TaskStop list and control both kinds). The delegate's process group is registered with the watchdog
 * (it dies with this Node process however that ends) and is killed on abort, timeout, TaskStop and session end.
 *
 * In a worktree session a delegate that can write files works in a worktree of its own, branched from a checkpoint of
 * the session's worktree and merged back into it when it answers (src/worktree/delegate.rs; docs/worktrees.md
 * "Delegates"); on a conflict, failure or stop its branch is kept and the result says how to continue.
 *
 * Task is visible only in Agent mode, with `subagents.enabled`, and while at least one definition exists; the list
 * of definitions is added to the system prompt of each run so the model knows which agents it may name.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import type { AgentToolUpdateCallback, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { AgentDefinition, AgentsLoaded, HostFailure, ReviewTarget, WorktreeResult } from "../../index.js";
import type { ToolkitHost } from "./host.ts";
import { native } from "./native.ts";
import { ALLOW_SESSION, auditCall, configuredMode, inCardQueue } from "./permission.ts";
import { reviewTarget } from "./review.ts";
import { hostRuntime } from "./tools/host.ts";
import { DELEGATE, DELEGATE_ENV, type LivePolicy, parseCardHead, POLICY_QUERY, type DelegateInfo } from "./delegate.ts";
import { onOperationMode } from "./plan.ts";
import { safeConfirm, safeEditor, safeInput, safeSelect } from "./render/safe.ts";
import { currentWorktree, projectFolder, worktreeEnv } from "./worktree.ts";

export const TASK = "Task";

/** Every stable failure code of Task, in the order of docs/agents.md "Errors" (a test holds them equal). */
export const AGENT_CODES = ["AGENT_NOT_FOUND", "AGENT_UNAVAILABLE", "AGENT_LIMIT", "AGENT_TIMEOUT", "AGENT_ABORTED", "AGENT_FAILED", "TASK_DISABLED_IN_PLAN", "AGENT_STOPPED_IN_PLAN", "AGENT_TOOL_NOT_DECLARED", "AGENT_WORKTREE_FAILED", "AGENT_MERGE_CONFLICT", "AGENT_MERGE_FAILED"] as const;
/** One of Task's own codes. */
export type AgentCode = (typeof AGENT_CODES)[number];
/** What a Task call fails with: its own codes, or the host's code of a refused argument, slot or task adoption. */
export type TaskCode = AgentCode | HostFailure["code"];
export const AGENT_NOT_FOUND = "AGENT_NOT_FOUND" satisfies AgentCode;
export const AGENT_FAILED = "AGENT_FAILED" satisfies AgentCode;
export const AGENT_TIMEOUT = "AGENT_TIMEOUT" satisfies AgentCode;
export const AGENT_ABORTED = "AGENT_ABORTED" satisfies AgentCode;
export const AGENT_UNAVAILABLE = "AGENT_UNAVAILABLE" satisfies AgentCode;
export const TASK_DISABLED_IN_PLAN = "TASK_DISABLED_IN_PLAN" satisfies AgentCode;
export const AGENT_STOPPED_IN_PLAN = "AGENT_STOPPED_IN_PLAN" satisfies AgentCode;
export const AGENT_TOOL_NOT_DECLARED = "AGENT_TOOL_NOT_DECLARED" satisfies AgentCode;
export const AGENT_WORKTREE_FAILED = "AGENT_WORKTREE_FAILED" satisfies AgentCode;
export const AGENT_MERGE_CONFLICT = "AGENT_MERGE_CONFLICT" satisfies AgentCode;
export const AGENT_MERGE_FAILED = "AGENT_MERGE_FAILED" satisfies AgentCode;
export const INVALID_ARGUMENT = "INVALID_ARGUMENT";

/** A refused or failed Task call: Pi shows the message (`<code>: <text>`), the audit line takes the code. */
export class TaskError extends Error {
	readonly code: TaskCode;
	constructor(code: TaskCode, text: string) {
		super(`${code}: ${text}`);
		this.code = code;
	}
}

/** The longest prompt a Task may hand over (characters). */
export const MAX_PROMPT_CHARS = 32_000;
/** How long a delegate gets to exit after SIGTERM before SIGKILL. */
const KILL_GRACE_MS = 2000;
/** The tail of a delegate's stderr kept for an AGENT_FAILED message. */
const STDERR_TAIL = 2000;

const taskSchema = Type.Object({
	agent: Type.String({ description: "The name of the agent to delegate to (the list is in the system prompt; /pct agents shows it)." }),
	prompt: Type.String({ description: "The complete, self-contained task for the delegate: it sees nothing of this conversation." }),
	runInBackground: Type.Optional(
		Type.Boolean({ description: "Start the delegate and return its backgroundTaskId at once; follow it with TaskWait, TaskList, TaskStop." }),
	),
});

/** Task's parameters (taskSchema). */
type TaskParams = { agent: string; prompt: string; runInBackground?: boolean };

/** Token and cost totals over a delegate's assistant messages. */
export interface DelegateUsage {
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	totalTokens: number;
	/** Only when the delegate's provider reports a cost. */
	cost?: number;
}

/** How one delegate run ended. */
export interface DelegateOutcome {
	/** A delegate in its own worktree: what became of it. */
	worktreeOutcome?: WorktreeResult["outcome"];
	ok: boolean;
	code?: TaskCode;
	/** The final answer (ok), or the model-facing failure message. */
	text: string;
	cut: boolean;
	usage: DelegateUsage;
	toolCalls: number;
	durationMs: number;
}

/** `details` of a Task result. */
export interface TaskDetails {
	agent: string;
	tools: string[];
	backgroundTaskId?: string;
	usage?: DelegateUsage;
	toolCalls?: number;
	durationMs?: number;
	cut?: boolean;
	/** A write-capable delegate of a worktree session: its own worktree and what became of it (docs/worktrees.md
	 * "Delegates"). */
	worktree?: { id: string; branch: string; path: string; outcome?: WorktreeResult["outcome"] };
}

type Usage = Partial<Record<"input" | "output" | "cacheRead" | "cacheWrite" | "totalTokens", number>> & { cost?: { total?: number } };
type RpcRecord = {
	type?: string;
	id?: string;
	method?: string;
	title?: string;
	message?: unknown;
	options?: unknown;
	placeholder?: string;
	prefill?: string;
	command?: string;
	success?: boolean;
	error?: string;
	toolName?: string;
};
type AssistantMessage = { role?: string; content?: { type: string; text?: string }[]; usage?: Usage; stopReason?: string; errorMessage?: string };

/** The tools the parent could hand on: its active tools plus the deferred ones find_tools could load. */
function catalog(host: ToolkitHost): string[] {
	const active = host.pi.getActiveTools();
	return [...new Set([...active, ...(host.deferredNames?.() ?? [])])];
}

/** Every definition of the session, resolved against the parent's catalog. */
export function loadAgents(host: ToolkitHost, cwd: string): AgentsLoaded {
	// Project definitions stay keyed by the project, also in a worktree session (docs/worktrees.md "Layout").
	return native.agentsLoad(host.agentDir, projectFolder(host, cwd), catalog(host).filter((n) => n !== TASK));
}

/** `/pct agents`: every definition with its resolved tools and warnings. */
export function agentsText(host: ToolkitHost, cwd: string): string {
	const l = loadAgents(host, cwd);
	const on = host.config().subagents?.enabled === true;
	const lines = [`Task subagents: ${on ? "on" : "off (set subagents.enabled to true in the config)"}; ${l.definitions.length} definition(s)`];
	if (l.definitions.length === 0) lines.push(`  none: add Markdown files to ${host.agentDir}/agents/ or ${cwd}/.pi/agents/ (docs/agents.md)`);
	for (const d of l.definitions) {
		lines.push(`- ${d.name} (${d.scope}, permission ${d.permission}${d.model ? `, model ${d.model}` : ""}): ${d.description}`);
		lines.push(`  tools: ${d.tools.length ? d.tools.join(", ") : "(none)"}  [declared: ${d.declared}]`);
		for (const w of d.warnings) lines.push(`  warning: ${w}`);
		lines.push(`  file: ${d.path}`);
	}
	for (const w of l.warnings) lines.push(`warning: ${w}`);
	return lines.join("\n");
}

/** Pi's package names: a delegate is started only from a script inside one (never an embedder's own script). */
const PI_PACKAGES = new Set(["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"]);

/** Whether `script` (the running main module) belongs to Pi's package: the nearest package.json names it. */
function isPiScript(script: string): boolean {
	let dir = dirname(script);
	for (let i = 0; i < 8; i++) {
		try {
			const name = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name;
			if (typeof name === "string") return PI_PACKAGES.has(name);
		} catch {
			// no package.json here: look further up
		}
		const up = dirname(dir);
		if (up === dir) return false;
		dir = up;
	}
	return false;
}

/** The parent's Pi command line as the delegate gets it: the CLI, and the explicit extensions (`-e`, `-ne`). */
function piCommand(): { cli: string; extensionArgs: string[] } | null {
	let cli: string;
	try {
		cli = realpathSync(process.argv[1] ?? "");
	} catch {
		return null;
	}
	if (!isPiScript(cli)) return null;
	const out: string[] = [];
	const argv = process.argv.slice(2);
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if ((a === "-e" || a === "--extension") && i + 1 < argv.length) out.push("-e", argv[++i]);
		else if (a.startsWith("--extension=")) out.push("-e", a.slice("--extension=".length));
		else if (a === "-ne" || a === "--no-extensions") out.push("-ne");
	}
	return { cli, extensionArgs: out };
}

/** The delegate's effective permission mode: its definition's, else the parent session's. */
function effectiveMode(host: ToolkitHost, def: AgentDefinition): DelegateInfo["mode"] {
	if (def.permission !== "inherit") return def.permission;
	const rt = hostRuntime(host);
	return rt.permissions.sessionOverride ?? configuredMode(host.config()) ?? null;
}

function modelArgs(def: AgentDefinition, ctx: ExtensionContext): string[] {
	const m = ctx.model;
	if (def.model) return def.model.includes("/") || !m ? ["--model", def.model] : ["--provider", m.provider, "--model", def.model];
	return m ? ["--provider", m.provider, "--model", m.id] : [];
}

/** The session's policy as delegate `def` applies it now: the operation mode, its effective mode, the grants. */
function livePolicy(host: ToolkitHost, def: AgentDefinition): LivePolicy {
	const rt = hostRuntime(host);
	return { operationMode: rt.permissions.operationMode === "plan" ? "plan" : "agent", mode: effectiveMode(host, def), grants: rt.permissions.allowedTools() };
}

/** The tools a delegate may keep in Plan: they only read or observe. Any other tool makes it an acting delegate. */
const PLAN_SAFE_DELEGATE_TOOLS = new Set(["Read", "Glob", "Grep", "read", "grep", "find", "ls", "TaskList", "TaskWait"]);

/** Whether a delegate with these tools could change files or run commands (docs/agents.md "Plan mode"). */
export function actingDelegate(tools: readonly string[]): boolean {
	return tools.some((t) => !PLAN_SAFE_DELEGATE_TOOLS.has(t));
}

/** The tools that write files: Write/Edit and their apply_patch and Pi forms, and code cells (`exec`, whose nested
 * calls include apply_patch). A delegate with one of them gets its own worktree in a worktree session; Bash-only and
 * read-only delegates share the session's root (docs/worktrees.md "Delegates"). */
const WRITING_TOOLS = new Set(["Write", "Edit", "apply_patch", "write", "edit", "exec"]);

/** Whether a delegate with these tools can write files with a file tool. */
export function writingDelegate(tools: readonly string[]): boolean {
	return tools.some((t) => WRITING_TOOLS.has(t));
}

/** The own worktree of a write-capable delegate (from `worktreeDelegateStart`). */
interface DelegateWorktree {
	id: string;
	branch: string;
	/** Its folder, and where the delegate works (the same sub-folder as the session, when there is one). */
	path: string;
	cwd: string;
	/** The checkpoint of the session worktree it started from. */
	base: string;
	/** Its own `PI_PORT` block (leased for `path`), so a dev server it starts never collides with the session's or
	 * another delegate's; absent when no block was free (it then shares the session's). */
	port?: number;
}

/** How to continue with a delegate's kept worktree: where its work is and the commands that bring it in. */
function keptText(own: DelegateWorktree, r: WorktreeResult): string {
	const changed = r.filesTotal !== undefined && r.filesTotal !== null ? ` (${r.filesTotal} changed file(s)${r.files?.length ? `: ${r.files.slice(0, 10).map((f) => f.replace("\t", " ")).join(", ")}` : ""})` : "";
	return (
		`Its work is kept, committed, on branch ${own.branch}${changed} in worktree ${own.path}. To continue: see its changes with \`git diff ${own.base} ${own.branch}\` (its version of a file: \`git show ${own.branch}:<path>\`) and bring them into this worktree with Edit/apply_patch, ` +
		`or with Bash \`git add -A && git diff --binary ${own.base} ${own.branch} | git apply --3way\` here (stages this worktree's files first; then resolve the conflict markers it leaves), or call Task again on the current files. ` +
		`When it is no longer needed, the person removes its worktree and branch with /pct worktree delete ${own.id} force.`
	);
}

/** Kills a delegate's whole process group: SIGTERM, then SIGKILL after the grace (`now`: SIGKILL at once). */
function killGroup(child: ChildProcess, now = false): void {
	const pid = child.pid;
	if (!pid || child.exitCode !== null || child.signalCode !== null) return;
	try {
		process.kill(-pid, now ? "SIGKILL" : "SIGTERM");
	} catch {
		return;
	}
	if (now) return;
	const t = setTimeout(() => {
		try {
			process.kill(-pid, "SIGKILL");
		} catch {
			// already gone
		}
	}, KILL_GRACE_MS);
	t.unref();
}

/** Relays one of the delegate's dialogs to the parent's UI, one card at a time with the parent's own cards (the
 * same queue: on Pi 0.87 a second dialog over an open one can leave the first unanswered); resolves the RPC
 * response fields. */
function relayDialog(host: ToolkitHost, def: AgentDefinition, ctx: ExtensionContext, rec: RpcRecord, signal: AbortSignal): Promise<Record<string, unknown>> {
	if (!ctx.hasUI) return Promise.resolve({ cancelled: true });
	return inCardQueue(host, () => (signal.aborted ? Promise.resolve({ cancelled: true }) : showDialog(host, def, ctx, rec, signal)), ctx.ui);
}

async function showDialog(host: ToolkitHost, def: AgentDefinition, ctx: ExtensionContext, rec: RpcRecord, signal: AbortSignal): Promise<Record<string, unknown>> {
	// The delegate's permission cards already name it (src/pi/delegate.ts); any other dialog gets its name here.
	// A card head counts only when it names this delegate and a tool of its allowlist: any other title (another
	// extension's dialog inside the delegate included) is prefixed and never grants anything.
	const ownHead = (t: string | undefined) => {
		const head = parseCardHead(t ?? "");
		return head && head.name === def.name && def.allowlist.includes(head.tool) ? head : null;
	};
	const named = (t: string | undefined) => (ownHead(t) ? (t ?? "") : `Delegate "${def.name}": ${t ?? ""}`);
	try {
		if (rec.method === "select") {
			const options = Array.isArray(rec.options) ? rec.options.filter((o): o is string => typeof o === "string") : [];
			const value = await safeSelect(ctx.ui, named(rec.title), options, { signal });
			if (value === undefined) return { cancelled: true };
			const head = ownHead(rec.title);
			// "Allow for this session" on a delegate's card is the parent session's grant too (per tool name).
			if (head && value === ALLOW_SESSION) hostRuntime(host).permissions.allowSession(head.tool);
			return { value };
		}
		if (rec.method === "confirm") return { confirmed: await safeConfirm(ctx.ui, named(rec.title), typeof rec.message === "string" ? rec.message : "", { signal }) };
		if (rec.method === "input") {
			const value = await safeInput(ctx.ui, named(rec.title), rec.placeholder, { signal });
			return value === undefined ? { cancelled: true } : { value };
		}
		if (rec.method === "editor") {
			const value = await safeEditor(ctx.ui, named(rec.title), rec.prefill);
			return value === undefined ? { cancelled: true } : { value };
		}
	} catch {
		return { cancelled: true };
	}
	return { cancelled: true };
}

function addUsage(total: DelegateUsage, u: Usage | undefined): void {
	if (!u) return;
	total.input += u.input ?? 0;
	total.output += u.output ?? 0;
	total.cacheRead += u.cacheRead ?? 0;
	total.cacheWrite += u.cacheWrite ?? 0;
	total.totalTokens += u.totalTokens ?? 0;
	if (typeof u.cost?.total === "number" && u.cost.total > 0) total.cost = (total.cost ?? 0) + u.cost.total;
}

function messageText(m: AssistantMessage): string {
	return (m.content ?? []).filter((c) => c.type === "text" && typeof c.text === "string").map((c) => c.text).join("\n");
}

/** One started delegate: its process and the promise of its outcome. */
interface Running {
	child: ChildProcess;
	done: Promise<DelegateOutcome>;
	/** Stops the delegate with this outcome; `now`: SIGKILL at once (nothing more of it may land). */
	stop(code: TaskCode, message: string, now?: boolean): void;
}

/** A review target that names the delegate making the change. */
function withAgent(target: ReviewTarget | undefined, agent: string): ReviewTarget | undefined {
	return target ? { ...target, agent } : undefined;
}

/** Starts a delegate process and drives it over RPC until its run ends. */
function startDelegate(host: ToolkitHost, def: AgentDefinition, prompt: string, ctx: ExtensionContext, onUpdate?: (line: string) => void, own?: DelegateWorktree): Running | { ok: false; code: TaskCode; message: string } {
	const pi = piCommand();
	if (!pi) return { ok: false, code: AGENT_UNAVAILABLE, message: "Delegates need the pi command line (this Pi was started by an embedder); nothing was started." };
	const rt = hostRuntime(host);
	const info: DelegateInfo = {
		name: def.name,
		tools: def.tools,
		mode: effectiveMode(host, def),
		sessionId: rt.sessionId,
		// The delegate's changes are listed in the parent's review under its name (docs/review.md "Who").
		review: withAgent(reviewTarget(host.agentDir, ctx), def.name),
		grants: rt.permissions.allowedTools(),
	};
	const args = [pi.cli, "--mode", "rpc", "--no-session", ...pi.extensionArgs, ...modelArgs(def, ctx), "--tools", def.allowlist.join(",")];
	if (def.prompt) args.push("--append-system-prompt", def.prompt);
	// In a worktree session a write-capable delegate works in its own worktree with its own PI_PORT block; every other
	// shares the session's root and block (docs/worktrees.md "Delegates").
	const ownEnv = own ? { PI_WORKTREE_ROOT: own.path, ...(own.port !== undefined ? { PI_PORT: String(own.port) } : {}) } : {};
	const env: NodeJS.ProcessEnv = { ...process.env, ...worktreeEnv(host), ...ownEnv, [DELEGATE_ENV]: JSON.stringify(info), PCT_DELEGATE_NAME: def.name };
	let child: ChildProcess;
	try {
		child = spawn(process.execPath, args, { cwd: own?.cwd ?? ctx.cwd, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
	} catch (e) {
		return { ok: false, code: AGENT_FAILED, message: `The delegate could not be started (${e instanceof Error ? e.message : String(e)}); nothing ran.` };
	}
	// A write to a delegate that already died is an 'error' event on its stdin, not a throw: never let it reach Node.
	child.stdin?.on("error", () => undefined);
	const pid = child.pid;
	if (pid) native.agentsGuardProcess(pid);
	const t0 = performance.now();
	const usage: DelegateUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
	let toolCalls = 0;
	let last: AssistantMessage | undefined;
	let stderr = "";
	let stopped: { code: TaskCode; message: string } | undefined;
	let finished = false;
	const dialogs = new AbortController();
	const send = (o: unknown) => {
		try {
			child.stdin?.write(`${JSON.stringify(o)}\n`);
		} catch {
			// the delegate is gone; its close settles the run
		}
	};
	const done = new Promise<DelegateOutcome>((resolve) => {
		const settle = (ok: boolean, code: TaskCode | undefined, text: string) => {
			if (finished) return;
			finished = true;
			dialogs.abort();
			const cut = ok ? native.agentsCutAnswer(text) : { text, cut: false };
			resolve({ ok, code, text: cut.text, cut: cut.cut, usage, toolCalls, durationMs: performance.now() - t0 });
			try {
				child.stdin?.end();
			} catch {
				// already closed
			}
			// A delegate that does not leave after its run (or after a stop) is killed with its tree.
			const t = setTimeout(() => killGroup(child), ok ? KILL_GRACE_MS : 0);
			t.unref();
		};
		let buf = "";
		child.stdout?.setEncoding("utf8");
		child.stdout?.on("data", (chunk: string) => {
			buf += chunk;
			let i: number;
			while ((i = buf.indexOf("\n")) >= 0) {
				const line = buf.slice(0, i).replace(/\r$/, "");
				buf = buf.slice(i + 1);
				if (!line.trim()) continue;
				let rec: RpcRecord;
				try {
					rec = JSON.parse(line) as RpcRecord;
				} catch {
					continue;
				}
				if (rec.type === "extension_ui_request" && rec.id && rec.method === "input" && rec.title === POLICY_QUERY) {
					// The delegate asks for the session's policy now (docs/agents.md "The live policy"): answered at once
					// from the live state, never shown and never queued behind a card.
					send({ type: "extension_ui_response", id: rec.id, value: JSON.stringify(livePolicy(host, def)) });
				} else if (rec.type === "extension_ui_request" && rec.id && ["select", "confirm", "input", "editor"].includes(rec.method ?? "")) {
					const id = rec.id;
					void relayDialog(host, def, ctx, rec, dialogs.signal).then((answer) => send({ type: "extension_ui_response", id, ...answer }));
				} else if (rec.type === "message_end") {
					const m = rec.message as AssistantMessage | undefined;
					if (m?.role === "assistant") {
						last = m;
						addUsage(usage, m.usage);
					}
				} else if (rec.type === "tool_execution_start") {
					toolCalls++;
					onUpdate?.(`${def.name}: ${rec.toolName ?? "tool"} (${toolCalls} call${toolCalls === 1 ? "" : "s"})`);
				} else if (rec.type === "response" && rec.command === "prompt" && rec.success === false) {
					settle(false, AGENT_FAILED, `The delegate refused the prompt: ${rec.error ?? "unknown error"}.`);
				} else if (rec.type === "agent_end") {
					if (!last) settle(false, AGENT_FAILED, `Delegate "${def.name}" ended without an answer.`);
					else if (last.stopReason === "error" || last.stopReason === "aborted") {
						settle(false, AGENT_FAILED, `Delegate "${def.name}" failed: ${last.errorMessage ?? last.stopReason}. ${messageText(last)}`.trim());
					} else settle(true, undefined, messageText(last));
				}
			}
		});
		child.stderr?.setEncoding("utf8");
		child.stderr?.on("data", (d: string) => {
			stderr = (stderr + d).slice(-STDERR_TAIL);
		});
		child.on("error", (e) => settle(false, AGENT_FAILED, `The delegate could not run: ${e.message}. Nothing more ran.`));
		child.on("close", (code, sig) => {
			if (pid) native.agentsReleaseProcess(pid);
			if (stopped) return settle(false, stopped.code, stopped.message);
			settle(false, AGENT_FAILED, `Delegate "${def.name}" exited (${sig ?? `code ${code}`}) before it answered.${stderr.trim() ? ` Its last output: ${stderr.trim()}` : ""}`);
		});
	});
	send({ id: "task", type: "prompt", message: prompt });
	return {
		child,
		done,
		stop(code: TaskCode, message: string, now = false) {
			if (finished) return;
			stopped = { code, message };
			killGroup(child, now);
		},
	};
}

function summary(def: AgentDefinition, o: DelegateOutcome): string {
	const u = o.usage;
	const cost = u.cost !== undefined ? `, cost $${u.cost.toFixed(4)}` : "";
	return `[${def.name}: ${(o.durationMs / 1000).toFixed(1)}s, ${o.toolCalls} tool call(s), tokens ${u.input} in / ${u.output} out${cost}]`;
}

const text = (t: string) => [{ type: "text" as const, text: t }];
const fail = (code: TaskCode, message: string): never => {
	throw new TaskError(code, message);
};

/** Whether Task should be visible now: on, Agent mode, a session of its own, and at least one definition. */
function wanted(host: ToolkitHost, cwd: string | undefined): boolean {
	if (DELEGATE || host.config().subagents?.enabled !== true || cwd === undefined) return false;
	if (hostRuntime(host).permissions.operationMode !== "agent") return false;
	try {
		return loadAgents(host, cwd).definitions.length > 0;
	} catch {
		return false;
	}
}

export function register(host: ToolkitHost): void {
	let lastCwd: string | undefined;
	const sessionSlots = new Set<{ release(): void }>();
	/** The delegates running now, with their definitions. */
	const running = new Set<{ def: AgentDefinition; run: Running }>();

	// Entering Plan stops every running delegate that could change files or run commands, before anything else runs
	// (docs/agents.md "Plan mode"): stopped, not paused — a paused process still holds its half-done call, and
	// nothing of it may land after the switch. SIGKILL at once; its own watchdog then kills its commands.
	onOperationMode(host, (mode) => {
		if (mode !== "plan") return;
		for (const r of running) {
			if (!actingDelegate(r.def.tools)) continue;
			r.run.stop(
				AGENT_STOPPED_IN_PLAN,
				`Delegate "${r.def.name}" was stopped: the session entered Plan mode, and a delegate that can change files or run commands (${r.def.tools.join(", ")}) does not run in Plan. It was stopped, not paused; what it finished before the switch stays (see /pct review), nothing more of it ran. Plan with the read tools; delegate again after the plan is approved.`,
				true,
			);
		}
	});

	/** Shows or hides Task (Pi activates a tool when it is registered, so this runs after every sync too). */
	const refresh = (cwd = lastCwd) => {
		lastCwd = cwd;
		let all: string[];
		try {
			all = host.pi.getAllTools().map((t) => t.name);
		} catch {
			return;
		}
		if (!all.includes(TASK)) return;
		const active = host.pi.getActiveTools();
		const want = wanted(host, cwd);
		if (want === active.includes(TASK)) return;
		host.pi.setActiveTools(want ? [...active, TASK] : active.filter((n) => n !== TASK));
	};

	host.pi.registerTool({
		name: TASK,
		label: "Task",
		description:
			"Delegate a self-contained task to a named agent (a separate Pi process with only the tools its definition declares, under this session's permissions, audit and review). Foreground: returns the agent's final answer. runInBackground: returns a backgroundTaskId at once for TaskWait/TaskStop. The available agents are listed in the system prompt.",
		promptSnippet: "Task: delegate a self-contained task to a named agent",
		parameters: taskSchema,
		async execute(toolCallId: string, params: TaskParams, signal: AbortSignal | undefined, onUpdate: AgentToolUpdateCallback<TaskDetails> | undefined, ctx: ExtensionContext) {
			// The Task call itself is audited too (its delegate's calls are, each with the delegate's name).
			const t0 = performance.now();
			let errorCode: TaskCode | undefined;
			try {
				return await runTask(params, signal, onUpdate, ctx);
			} catch (e) {
				errorCode = e instanceof TaskError ? e.code : AGENT_FAILED;
				throw e;
			} finally {
				const ms = performance.now() - t0;
				await auditCall(host, hostRuntime(host), {
					toolCallId,
					tool: TASK,
					args: { agent: params.agent, prompt: params.prompt, runInBackground: params.runInBackground === true },
					gate: { decision: "allow", prompted: false, waitMs: 0 },
					runMs: ms,
					totalMs: ms,
					ok: errorCode === undefined,
					errorCode,
				});
			}
		},
	});

	async function runTask(params: TaskParams, signal: AbortSignal | undefined, onUpdate: AgentToolUpdateCallback<TaskDetails> | undefined, ctx: ExtensionContext) {
		if (DELEGATE) fail(AGENT_UNAVAILABLE, "A delegate cannot delegate; do the work with your own tools.");
		if (host.config().subagents?.enabled !== true) fail(AGENT_UNAVAILABLE, "Task subagents are off: set subagents.enabled to true with /pct config, then retry.");
		const rt = hostRuntime(host);
		rt.for(ctx);
		if (rt.permissions.operationMode !== "agent") {
			fail(TASK_DISABLED_IN_PLAN, "Task is disabled in Plan mode: Plan reads and plans; delegate after the plan is approved and the session is back in Agent mode.");
		}
		if (typeof params.prompt !== "string" || params.prompt.trim() === "") fail(INVALID_ARGUMENT, "Task needs a non-empty `prompt`: the complete task for the delegate.");
		if (params.prompt.length > MAX_PROMPT_CHARS) fail(INVALID_ARGUMENT, `The prompt has ${params.prompt.length} characters, more than ${MAX_PROMPT_CHARS}; shorten it (the delegate can read files itself) and retry.`);
		const loaded = loadAgents(host, ctx.cwd);
		const def = loaded.definitions.find((d) => d.name === params.agent);
		if (!def) {
			fail(AGENT_NOT_FOUND, `No agent named "${params.agent}". Available: ${loaded.definitions.map((d) => d.name).join(", ") || "none"}. Call Task with one of them.`);
		}
		const agent = def as AgentDefinition;
		if (agent.tools.length === 0) fail(AGENT_UNAVAILABLE, `Agent "${agent.name}" has no tool available in this session (${agent.warnings.join("; ")}); pick another agent.`);
		const slot = new native.AgentSlot(rt.sessionId);
		const refused = slot.failure();
		if (refused) fail(refused.code, refused.message);
		sessionSlots.add(slot);
		const release = () => {
			slot.release();
			sessionSlots.delete(slot);
		};
		const background = params.runInBackground === true;
		if (background && !host.pi.getActiveTools().includes("TaskWait")) {
			release();
			fail(AGENT_UNAVAILABLE, "A background Task needs TaskWait/TaskStop (the Host Tools' Bash family, hostTools.enabled); run it in the foreground instead.");
		}
		const update = (line: string) => onUpdate?.({ content: text(line), details: { agent: agent.name, tools: agent.tools } });
		// A delegate that writes files, in a worktree session, works in its own worktree (docs/worktrees.md "Delegates").
		let own: DelegateWorktree | undefined;
		if (currentWorktree(host) && writingDelegate(agent.tools)) {
			const w = await native.worktreeDelegateStart(host.agentDir, ctx.cwd, agent.name, process.pid);
			if (!w.ok || !w.path || !w.cwd || !w.branch || !w.id || !w.base) {
				release();
				fail(
					AGENT_WORKTREE_FAILED,
					`Delegate "${agent.name}" can write files, so in this worktree session it works in a worktree of its own, and that could not be made: ${w.code}: ${w.message} Nothing was started; fix that (or use an agent without Write/Edit) and call Task again.`,
				);
			}
			own = { id: w.id!, branch: w.branch!, path: w.path!, cwd: w.cwd!, base: w.base! };
			const lease = native.worktreePortLease(host.agentDir, own.path);
			if (lease.ok && lease.port) own.port = lease.port;
		}
		const releasePorts = () => {
			if (own?.port !== undefined) native.worktreePortRelease(own.path);
		};
		const run = startDelegate(host, agent, params.prompt, ctx, background ? undefined : update, own);
		if (!("child" in run)) {
			release();
			releasePorts();
			if (own) await native.worktreeDelegateFinish(host.agentDir, own.path, true, undefined).catch(() => undefined);
			return fail(run.code, run.message);
		}
		const entry = { def: agent, run };
		running.add(entry);
		void run.done.finally(() => running.delete(entry));
		const reviewSession = reviewTarget(host.agentDir, ctx)?.sessionId;
		// The outcome the caller sees: for a delegate in its own worktree, after its work was merged back (or kept).
		const done = own ? run.done.then((o) => mergeBack(agent, own, o, reviewSession)) : run.done;
		const wtDetails = own ? { id: own.id, branch: own.branch, path: own.path } : undefined;
		const timeoutS = host.config().subagents?.timeoutSeconds ?? native.agentsLimits().defaultTimeoutSeconds;
		const timer = setTimeout(
			() => run.stop(AGENT_TIMEOUT, `Delegate "${agent.name}" did not finish within ${timeoutS} s (subagents.timeoutSeconds) and was stopped; give it a smaller task or raise the timeout.`),
			timeoutS * 1000,
		);
		timer.unref();
		void done.finally(() => {
			clearTimeout(timer);
			release();
			releasePorts();
		});
		if (background) {
			const task = new native.AgentTask(rt.for(ctx), run.child.pid ?? 0, `Task ${agent.name}`, `${agent.name}: ${params.prompt.split("\n")[0].slice(0, 120)}`);
			const tf = task.failure();
			if (tf) {
				run.stop(tf.code, tf.message);
				await done;
				return fail(tf.code, tf.message);
			}
			void done.then((o) => {
				const code = o.ok ? 0 : 1;
				task.finish(code, o.ok ? `${o.text}\n${summary(agent, o)}` : "", o.ok ? "" : `${o.code}: ${o.text}\n${summary(agent, o)}`);
			});
			return {
				content: text(`Started delegate "${agent.name}" in the background: backgroundTaskId ${task.id}. Follow it with TaskWait (its answer arrives as the task's output), TaskList or TaskStop.`),
				details: { agent: agent.name, tools: agent.tools, backgroundTaskId: task.id, worktree: wtDetails } satisfies TaskDetails,
			};
		}
		const onAbort = () => run.stop(AGENT_ABORTED, `Delegate "${agent.name}" was stopped: the turn was aborted.`);
		if (signal?.aborted) onAbort();
		signal?.addEventListener("abort", onAbort, { once: true });
		const o = await done;
		signal?.removeEventListener("abort", onAbort);
		if (!o.ok) fail(o.code ?? AGENT_FAILED, `${o.text} ${summary(agent, o)}`);
		return {
			content: text(`${o.text}\n\n${summary(agent, o)}`),
			details: { agent: agent.name, tools: agent.tools, usage: o.usage, toolCalls: o.toolCalls, durationMs: o.durationMs, cut: o.cut, worktree: wtDetails && { ...wtDetails, outcome: o.worktreeOutcome } } satisfies TaskDetails,
		};
	}

	/** Ends a delegate's own worktree (docs/worktrees.md "Delegates"): a delegate that answered, while the session is
	 * still in Agent mode, is merged back into the session's worktree; one that failed, was stopped or finished
	 * after the switch to Plan is kept on its branch. The outcome says what happened and how to continue. */
	async function mergeBack(def: AgentDefinition, own: DelegateWorktree, o: DelegateOutcome, reviewSession: string | undefined): Promise<DelegateOutcome> {
		const inPlan = hostRuntime(host).permissions.operationMode !== "agent";
		const merge = o.ok && !inPlan;
		let r: WorktreeResult;
		try {
			r = await native.worktreeDelegateFinish(host.agentDir, own.path, merge, reviewSession);
		} catch (e) {
			r = { ok: false, message: e instanceof Error ? e.message : String(e) };
		}
		const kept = keptText(own, r);
		if (!r.ok) {
			const why = `${r.code ?? "WORKTREE_GIT_FAILED"}: ${r.message ?? "unknown error"}`;
			if (!o.ok) return { ...o, text: `${o.text} Its worktree could not be closed (${why}). ${kept}` };
			return { ...o, ok: false, code: AGENT_MERGE_FAILED, text: `Delegate "${def.name}" finished, but its work could not be merged back into this session's worktree: ${why} Nothing of it was applied here. ${kept} Its answer: ${o.text}` };
		}
		const files = (r.files ?? []).map((f) => f.replace("\t", " ")).join(", ");
		const more = (r.filesTotal ?? 0) > (r.files?.length ?? 0) ? `, … ${(r.filesTotal ?? 0) - (r.files?.length ?? 0)} more` : "";
		if (r.outcome === "merged") {
			return { ...o, worktreeOutcome: "merged", text: `${o.text}\n\n[Its changes to ${r.filesTotal} file(s) were merged into this session's worktree as uncommitted changes: ${files}${more}.]` };
		}
		if (r.outcome === "unchanged") return { ...o, worktreeOutcome: "unchanged", text: `${o.text}\n\n[It changed no files.]` };
		if (r.outcome === "conflict") {
			const where = r.conflicts?.length ? ` in ${r.conflicts.join(", ")}` : r.tail ? ` (${r.tail})` : "";
			return { ...o, ok: false, code: AGENT_MERGE_CONFLICT, worktreeOutcome: "conflict", text: `Delegate "${def.name}" finished, but its changes conflict with this session's worktree${where}: nothing of it was applied here. ${kept} Its answer: ${o.text}` };
		}
		if (o.ok && inPlan) {
			return { ...o, ok: false, code: AGENT_STOPPED_IN_PLAN, worktreeOutcome: "kept", text: `Delegate "${def.name}" finished after the session entered Plan mode, so its work was not merged back. ${kept} Its answer: ${o.text}` };
		}
		return { ...o, worktreeOutcome: "kept", text: `${o.text} ${kept}` };
	}

	// The model learns the agents it may name from the system prompt of each run (Task's description is fixed).
	host.pi.on("before_agent_start", async (event, ctx) => {
		refresh(ctx.cwd);
		if (!host.pi.getActiveTools().includes(TASK)) return undefined;
		let defs: AgentDefinition[];
		try {
			defs = loadAgents(host, ctx.cwd).definitions;
		} catch {
			return undefined;
		}
		const list = defs.map((d) => `- ${d.name}: ${d.description} (tools: ${d.tools.join(", ")})`).join("\n");
		return { systemPrompt: `${event.systemPrompt}\n\nAgents available to the Task tool:\n${list}` };
	});
	host.pi.on("session_start", async (_event, ctx) => {
		lastCwd = ctx.cwd;
	});
	host.lifecycle("subagents", {
		// Runs after every sync (session start, reload, model change): Pi activates Task when it registers it.
		retry: async () => refresh(),
		shutdown: async () => {
			for (const s of [...sessionSlots]) s.release();
			sessionSlots.clear();
		},
	});
}

/** The delegate side's guard: a call of a tool outside the definition is refused (Pi's allowlist is the first). */
export function registerDelegateGuard(host: ToolkitHost): void {
	if (!DELEGATE) return;
	const d = DELEGATE;
	host.pi.on("session_start", async (_event, ctx) => {
		const rt = hostRuntime(host);
		try {
			rt.for(ctx);
		} catch {
			// a cwd that is not a directory: the permission state still exists
		}
		if (d.mode) rt.permissions.setOverride(d.mode);
		for (const t of d.grants) rt.permissions.allowSession(t);
	});
	// Pi's allowlist holds whole toolkit groups (src/agents/resolve.rs); only the declared tools stay active.
	const narrow = () => {
		try {
			const active = host.pi.getActiveTools();
			const keep = active.filter((n) => d.tools.includes(n));
			if (keep.length !== active.length) host.pi.setActiveTools(keep);
		} catch {
			// no tools yet: the next sync narrows
		}
	};
	host.lifecycle("delegate", { retry: async () => narrow() });
	host.pi.on("before_agent_start", async () => {
		narrow();
		return undefined;
	});
	host.pi.on("tool_call", async (event) => {
		if (d.tools.includes(event.toolName)) return undefined;
		return { block: true, reason: `${AGENT_TOOL_NOT_DECLARED}: ${event.toolName} is not among this delegate's tools (${d.tools.join(", ")}); nothing ran. Answer with what your own tools can do.` };
	});
}
