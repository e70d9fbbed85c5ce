/**
 * Isolated session worktrees, the Pi side (docs/worktrees.md). Everything that touches git or the filesystem is in
 * Rust (src/worktree via the `worktree*` exports); this file adapts Pi:
 *
 * - `/pct worktree [new [name]|list|merge [token]|leave|delete [id] [force]]` (`worktreeCommand`);
 * - moving the Pi session in and out: a session file whose header names the new folder as `cwd`, written in the
 *   session's folder, then `ctx.switchSession(file)`; Pi rebuilds its own tools, AGENTS.md and this extension
 *   from that cwd, so everything roots in the worktree with no fallback to the project;
 * - per session (session_start / session_shutdown): the `git worktree lock`, the `PI_PORT` block, the footer line,
 *   and at start-up the list of leftover worktrees (never deleted silently) and the removal of stale session files
 *   the toolkit wrote (src/worktree/sessions.rs);
 * - `guardWorktree`: every toolkit tool call of a worktree session (nested calls from code cells included) first
 *   checks that the worktree folder is still a real folder at every component, else fails with `WORKTREE_MISSING`
 *   and changes nothing; the `tool_call` hook does the same for every tool the model calls — Pi's own (read, bash,
 *   edit, write, grep, find, ls) and other extensions' — by blocking the call before it runs; the `user_bash` hook
 *   refuses the person's own `!`/`!!` commands the same way;
 * - `worktreeEnv`: `PI_PORT`, `PI_PROJECT_ROOT`, `PI_WORKTREE_ROOT` for every shell the toolkit starts.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ExtensionCommandContext, ExtensionContext, ToolDefinition } from "@earendil-works/pi-coding-agent";
import type { WorktreeEntry, WorktreeResult } from "../../index.js";
import type { ToolkitHost } from "./host.ts";
import { DELEGATE } from "./delegate.ts";
import { say } from "./messages.ts";
import { native } from "./native.ts";
import { piShell } from "./tools/host-bash.ts";

/** `host.shared` key of the current session's worktree state. */
export const WORKTREE_KEY = "worktree.session";
/** The footer status key. */
const FOOTER = "pct-worktree";

/** The worktree the current session works in. */
export interface WorktreeSession {
	id: string;
	path: string;
	branch: string;
	project: string;
	baseBranch: string;
	/** The first port of this session's block (undefined when none could be leased). */
	port?: number;
}

const short = (sha: string | null | undefined) => (sha ?? "").slice(0, 10);
const failure = (r: WorktreeResult) => `${r.code}: ${r.message}`;

/** The current session's worktree, if it works in one. */
export function currentWorktree(host: Pick<ToolkitHost, "shared">): WorktreeSession | undefined {
	return host.shared?.get(WORKTREE_KEY) as WorktreeSession | undefined;
}

/** The variables every shell the toolkit starts for a worktree session gets; undefined outside worktrees. */
export function worktreeEnv(host: Pick<ToolkitHost, "shared">): Record<string, string> | undefined {
	const w = currentWorktree(host);
	if (!w) return undefined;
	const env: Record<string, string> = { PI_PROJECT_ROOT: w.project, PI_WORKTREE_ROOT: w.path };
	if (w.port !== undefined) env.PI_PORT = String(w.port);
	return env;
}

/** The project folder that corresponds to `cwd`: in a worktree session the same place in the project checkout
 * (subagent definitions and other project-keyed state are read there), else `cwd` itself. */
export function projectFolder(host: Pick<ToolkitHost, "shared">, cwd: string): string {
	const w = currentWorktree(host);
	if (!w) return cwd;
	if (cwd === w.path) return w.project;
	return cwd.startsWith(`${w.path}/`) ? join(w.project, cwd.slice(w.path.length + 1)) : cwd;
}

/** `env` with the worktree variables under it (a hook's own values win). */
export function withWorktreeEnv(host: Pick<ToolkitHost, "shared">, env: Record<string, string> | undefined): Record<string, string> | undefined {
	const w = worktreeEnv(host);
	return w ? { ...w, ...(env ?? {}) } : env;
}

/** `WORKTREE_MISSING: ...` when `cwd` is in a toolkit worktree whose folder is missing or linked over; else null. */
export function worktreeRefusal(agentDir: string | undefined, cwd: string | undefined): string | null {
	if (typeof agentDir !== "string" || typeof cwd !== "string") return null;
	const r = native.worktreeCheck(agentDir, cwd);
	return r && !r.ok ? failure(r) : null;
}

/** `def` whose every call first checks the session's worktree (see the file header). */
export function guardWorktree<D extends ToolDefinition>(agentDir: string, def: D): D {
	const execute = def.execute;
	const guarded: D["execute"] = (toolCallId, params, signal, onUpdate, ctx) => {
		const refusal = ctx?.cwd ? worktreeRefusal(agentDir, ctx.cwd) : null;
		if (refusal) return Promise.reject(new Error(refusal));
		return execute.call(def, toolCallId, params, signal, onUpdate, ctx);
	};
	return { ...def, execute: guarded };
}

/** Writes a session file whose header names `cwd`, in the session's folder (or the toolkit's when the session
 * lives in memory), and returns its path. */
function sessionFile(agentDir: string, ctx: ExtensionContext, cwd: string): string {
	let dir = "";
	try {
		dir = ctx.sessionManager.getSessionDir();
	} catch {
		// an in-memory session has none
	}
	if (!dir) dir = join(agentDir, "pi-codex-toolkit", "sessions");
	mkdirSync(dir, { recursive: true });
	const id = randomUUID();
	const timestamp = new Date().toISOString();
	const file = join(dir, `${timestamp.replace(/[:.]/g, "-")}_${id}.jsonl`);
	writeFileSync(file, JSON.stringify({ type: "session", version: 3, id, timestamp, cwd }) + "\n", { flag: "wx" });
	return file;
}

/** Switches the Pi session to a new one rooted at `cwd`; `after` runs with the new session's context. */
async function switchTo(host: ToolkitHost, ctx: ExtensionCommandContext, cwd: string, after: (c: ExtensionCommandContext) => void): Promise<boolean> {
	const file = sessionFile(host.agentDir, ctx, cwd);
	const r = await ctx.switchSession(file, { withSession: async (c) => after(c) });
	return !r.cancelled;
}

/** The project folder of this session: the worktree's project, else the git checkout around cwd. */
async function projectOf(host: ToolkitHost, ctx: ExtensionContext): Promise<{ ok: true; root: string } | { ok: false; text: string }> {
	const w = currentWorktree(host);
	if (w) return { ok: true, root: w.project };
	const check = native.worktreeCheck(host.agentDir, ctx.cwd);
	if (check?.project) return { ok: true, root: check.project };
	const p = await native.worktreeProject(ctx.cwd);
	return p.ok && p.project ? { ok: true, root: p.project } : { ok: false, text: failure(p) };
}

const USAGE = "Usage: /pct worktree [new [name]|list|merge [token]|leave|delete <id> [force]]";

/** `/pct worktree ...`. */
export async function worktreeCommand(host: ToolkitHost, ctx: ExtensionCommandContext, arg: string): Promise<void> {
	const [verb, ...rest] = arg.split(/\s+/).filter(Boolean);
	if (verb === undefined) return statusCommand(host, ctx);
	if (verb === "new") return newCommand(host, ctx, rest[0]);
	if (verb === "list") return listCommand(host, ctx);
	if (verb === "leave") return leaveCommand(host, ctx);
	if (verb === "merge") return mergeCommand(host, ctx, rest[0]);
	if (verb === "delete") return deleteCommand(host, ctx, rest[0], rest[1] === "force");
	say(ctx, USAGE, "warning");
}

async function statusCommand(host: ToolkitHost, ctx: ExtensionCommandContext): Promise<void> {
	const check = native.worktreeCheck(host.agentDir, ctx.cwd);
	if (!check) return say(ctx, `This session works in the project checkout (${ctx.cwd}), not in a worktree. /pct worktree new creates one.`);
	if (!check.ok) return say(ctx, failure(check), "error");
	const s = await native.worktreeStatus(host.agentDir, ctx.cwd);
	if (!s.ok) return say(ctx, failure(s), "error");
	const w = currentWorktree(host);
	const lines = [
		`Worktree ${s.id} (${s.path})`,
		`branch: ${s.branch}, from ${s.baseBranch} at ${short(s.base)}`,
		`project: ${s.project}${s.projectBranch ? ` (${s.projectBranch}): ${s.ahead} commit(s) ahead, ${s.behind} behind` : " (detached HEAD)"}`,
		...(w?.port !== undefined ? [`PI_PORT: ${w.port}`] : []),
		`changed files: ${s.changedTotal ?? 0}`,
		...(s.changed ?? []).map((l) => `  ${l}`),
	];
	say(ctx, lines.join("\n"));
}

async function newCommand(host: ToolkitHost, ctx: ExtensionCommandContext, name: string | undefined): Promise<void> {
	const cfg = host.config().worktrees ?? { enabled: false, init: null };
	if (!cfg.enabled) return say(ctx, 'Worktrees are off. Turn them on with {"worktrees": {"enabled": true}} in the config file (/pct config shows where), then /pct reload.', "warning");
	const here = native.worktreeCheck(host.agentDir, ctx.cwd);
	if (here) return say(ctx, `This session already works in worktree ${here.id ?? ""}. /pct worktree leave goes back to the project first.`, "warning");
	say(ctx, "Creating a worktree…");
	const r = await native.worktreeCreate(host.agentDir, ctx.cwd, name, process.pid);
	if (!r.ok) return say(ctx, failure(r), "error");
	const lines = [`Worktree ${r.id} created at ${r.path} on branch ${r.branch} from ${r.baseBranch} at ${short(r.base)} (${r.totalMs} ms).`];
	if (r.filesCopied || r.linksCopied) lines.push(`.worktreeinclude: copied ${r.filesCopied} file(s), ${r.linksCopied} link(s), ${r.bytesCopied} bytes.`);
	if (r.skipped?.length) lines.push(`.worktreeinclude: left out ${r.skipped.length}: ${r.skipped.slice(0, 5).join("; ")}`);
	if (cfg.init) lines.push(await runInit(host, ctx, r, cfg.init));
	const text = lines.join("\n");
	const switched = await switchTo(host, ctx, r.cwd!, (c) => say(c, `${text}\nThis session now works in the worktree: every tool, AGENTS.md and the shells root there. /pct worktree merge brings the work back; /pct worktree leave goes back to the project.`));
	if (!switched) say(ctx, `${text}\nThe session switch was cancelled; the worktree stays (/pct worktree list).`, "warning");
}

/** Runs `worktrees.init` once in the new worktree (with a progress line); returns the line that reports it. */
async function runInit(host: ToolkitHost, ctx: ExtensionCommandContext, r: WorktreeResult, command: string): Promise<string> {
	const lease = native.worktreePortLease(host.agentDir, r.path!);
	const env: Record<string, string> = { PI_PROJECT_ROOT: r.project!, PI_WORKTREE_ROOT: r.path! };
	if (lease.ok && lease.port) env.PI_PORT = String(lease.port);
	const shell = piShell() ?? { shell: "/bin/bash", args: ["-c"] };
	const log = join(dirname(r.path!), `${r.id}.init.log`);
	say(ctx, `Running worktrees.init in ${r.path}: ${command}`);
	try {
		if (ctx.hasUI) ctx.ui.setStatus(FOOTER, `worktree ${r.id}: init running`);
	} catch {
		// a UI that cannot show a status still runs the command
	}
	const o = await native.worktreeInit(shell.shell, shell.args, command, r.cwd!, env, log);
	if (!o.ok) return `worktrees.init could not run: ${failure(o)}`;
	if (o.status === 0) return `worktrees.init finished (output: ${o.log}).`;
	const how = o.timedOut ? "was stopped at its time limit" : `exited with status ${o.status ?? "(signal)"}`;
	return `worktrees.init ${how}; the worktree is kept. Output (${o.log}), last lines:\n${o.tail}`;
}

function entryRow(e: WorktreeEntry, current?: string): string {
	const mark = e.id === current ? " (this session)" : "";
	return `  ${e.id}  ${e.state}${mark}  ${e.branch}  ${e.path}${e.why ? `  — ${e.why}` : ""}`;
}

async function listCommand(host: ToolkitHost, ctx: ExtensionCommandContext): Promise<void> {
	const p = await projectOf(host, ctx);
	if (!p.ok) return say(ctx, p.text, "error");
	const l = await native.worktreeList(host.agentDir, p.root);
	if (!l.ok) return say(ctx, failure(l), "error");
	const entries = l.entries ?? [];
	if (entries.length === 0) return say(ctx, `No worktrees of ${p.root}. /pct worktree new creates one.`);
	say(ctx, [`Worktrees of ${p.root}:`, ...entries.map((e) => entryRow(e, currentWorktree(host)?.id))].join("\n"));
}

async function leaveCommand(host: ToolkitHost, ctx: ExtensionCommandContext): Promise<void> {
	const check = native.worktreeCheck(host.agentDir, ctx.cwd);
	if (!check) return say(ctx, "This session is not in a worktree.", "warning");
	const project = check.project ?? currentWorktree(host)?.project;
	if (!project) return say(ctx, failure(check), "error");
	const id = check.id ?? "";
	const switched = await switchTo(host, ctx, project, (c) => say(c, `Back in the project checkout ${project}. Worktree ${id} stays (/pct worktree list; /pct worktree delete ${id} removes it).`));
	if (!switched) say(ctx, "The session switch was cancelled; this session is still in the worktree.", "warning");
}

function previewText(p: WorktreeResult): string {
	const lines = [
		`Merge worktree ${p.id} into ${p.projectBranch} (${short(p.projectCommit)} → ${short(p.worktreeCommit)}):`,
		...(p.committedWork ? ["  (the worktree's uncommitted work was committed first)"] : []),
		...(p.synced ? [`  (${p.projectBranch} was merged into the worktree first, without conflicts)`] : []),
		`commits: ${p.commitsTotal}`,
		...(p.commits ?? []).map((c) => `  ${c}`),
		...((p.commitsTotal ?? 0) > (p.commits?.length ?? 0) ? [`  … and ${(p.commitsTotal ?? 0) - (p.commits?.length ?? 0)} more`] : []),
		`files: ${p.filesTotal}`,
		...(p.files ?? []).map((f) => `  ${f.replace("\t", " ")}`),
		...((p.filesTotal ?? 0) > (p.files?.length ?? 0) ? [`  … and ${(p.filesTotal ?? 0) - (p.files?.length ?? 0)} more`] : []),
		"conflicts: none",
	];
	return lines.join("\n");
}

async function mergeCommand(host: ToolkitHost, ctx: ExtensionCommandContext, token: string | undefined): Promise<void> {
	const check = native.worktreeCheck(host.agentDir, ctx.cwd);
	if (!check) return say(ctx, "This session is not in a worktree: /pct worktree merge runs in the worktree session.", "warning");
	if (!check.ok) return say(ctx, failure(check), "error");
	if (token) return applyMerge(host, ctx, token);
	const p = await native.worktreeMergePrepare(host.agentDir, ctx.cwd);
	if (!p.ok) return say(ctx, failure(p), "error");
	if (p.commitsTotal === 0) return say(ctx, `Nothing to merge: ${p.projectBranch} already has everything of worktree ${p.id}.`);
	const text = previewText(p);
	if (!ctx.hasUI) return say(ctx, `${text}\nTo merge, run: /pct worktree merge ${p.token}`);
	const yes = await ctx.ui.confirm(`Merge worktree ${p.id} into ${p.projectBranch}?`, text);
	if (!yes) return say(ctx, `Not merged. To merge this preview later: /pct worktree merge ${p.token}`);
	return applyMerge(host, ctx, p.token!);
}

async function applyMerge(host: ToolkitHost, ctx: ExtensionCommandContext, token: string): Promise<void> {
	const a = await native.worktreeMergeApply(host.agentDir, ctx.cwd, token);
	if (!a.ok) return say(ctx, failure(a), "error");
	if (a.projectCommit === a.worktreeCommit) return say(ctx, `Nothing to merge: ${a.projectBranch} is already at ${short(a.worktreeCommit)}.`);
	say(ctx, `Merged: ${a.projectBranch} fast-forwarded ${short(a.projectCommit)} → ${short(a.worktreeCommit)} (${a.filesTotal} file(s)); the project's checkout is updated and its other uncommitted changes are kept.`);
}

async function deleteCommand(host: ToolkitHost, ctx: ExtensionCommandContext, id: string | undefined, force: boolean): Promise<void> {
	if (!id) return say(ctx, "Usage: /pct worktree delete <id> [force] (/pct worktree list shows the ids)", "warning");
	const here = native.worktreeCheck(host.agentDir, ctx.cwd);
	if (here?.id === id) return say(ctx, `This session works in worktree ${id}: /pct worktree leave first, then delete it from the project.`, "warning");
	const p = await projectOf(host, ctx);
	if (!p.ok) return say(ctx, p.text, "error");
	let r = await native.worktreeDelete(host.agentDir, p.root, id, force, process.pid);
	if (!r.ok && r.code === "WORKTREE_UNMERGED" && ctx.hasUI) {
		const yes = await ctx.ui.confirm(`Delete worktree ${id}?`, `${r.message}\n\nDelete it anyway? Its work is kept under refs/pct/snapshots/${id}.`);
		if (!yes) return say(ctx, `Worktree ${id} kept.`);
		r = await native.worktreeDelete(host.agentDir, p.root, id, true, process.pid);
	}
	if (!r.ok) return say(ctx, failure(r), r.code === "WORKTREE_UNMERGED" ? "warning" : "error");
	const folder = r.folder === "tree" ? "folder removed" : r.folder === "link" ? "only the link at its folder removed (its target is untouched)" : r.folder === "nothing" ? "folder was already gone" : `folder ${r.folder}`;
	const snap = r.snapshot ? `; its work is kept under ${r.snapshot} (git log ${r.snapshot})` : "";
	const sessions = r.sessionsRemoved ? `; ${r.sessionsRemoved} session file(s) the toolkit wrote for it removed` : "";
	say(ctx, `Deleted worktree ${id}: ${folder}, branch pct/${id} deleted${snap}${sessions}.`);
}

/** The line `/pct status` starts with in a worktree session (empty outside). */
export function worktreeStatusLine(host: Pick<ToolkitHost, "shared">): string {
	const w = currentWorktree(host);
	return w ? `Worktree: ${w.id} (${w.branch}) at ${w.path}; project ${w.project}${w.port !== undefined ? `; PI_PORT ${w.port}` : ""}\n` : "";
}

let sweptLeftovers = false;
let sweptSessions = false;

/** Once per process (not in a delegate): removes the session files the toolkit wrote for in-memory sessions that
 * nobody continued for a week and whose worktree is gone, never this session's own (docs/worktrees.md "How the
 * session moves"). Housekeeping only: a failure is ignored. */
function sweepSessions(host: ToolkitHost, ctx: ExtensionContext): void {
	if (sweptSessions || DELEGATE || !host.agentDir) return;
	sweptSessions = true;
	let own: string | undefined;
	try {
		own = ctx.sessionManager.getSessionFile();
	} catch {
		// an in-memory session has none
	}
	native.worktreeSessionsSweep(host.agentDir, own).catch(() => undefined);
}

/** The session lifecycle of worktrees (see the file header). */
export function register(host: ToolkitHost): void {
	let holder: string | undefined;
	let locked: { cwd: string } | undefined;
	const end = async () => {
		if (holder) native.worktreePortRelease(holder);
		holder = undefined;
		const l = locked;
		locked = undefined;
		host.shared.delete(WORKTREE_KEY);
		if (l && !DELEGATE) await native.worktreeLock(host.agentDir, l.cwd, false, process.pid).catch(() => undefined);
	};
	host.pi.on("session_start", async (_event, ctx) => {
		await end();
		// An embedder's context may carry no folder: then no session can be in a worktree.
		if (typeof ctx.cwd !== "string") return;
		sweepSessions(host, ctx);
		const check = native.worktreeCheck(host.agentDir, ctx.cwd);
		setFooter(ctx, check);
		if (!check) {
			void sweep(host, ctx);
			return;
		}
		if (!check.ok) {
			say(ctx, `This session's worktree is not usable: ${failure(check)}`, "warning");
			return;
		}
		const w: WorktreeSession = { id: check.id!, path: check.path!, branch: check.branch!, project: check.project!, baseBranch: check.baseBranch! };
		// A delegate shares its parent's block (the parent put PI_PORT in its environment).
		const inherited = DELEGATE ? Number(process.env.PI_PORT) : NaN;
		if (Number.isInteger(inherited) && inherited > 0) w.port = inherited;
		else {
			const lease = native.worktreePortLease(host.agentDir, w.path);
			if (lease.ok && lease.port) {
				w.port = lease.port;
				holder = w.path;
			} else say(ctx, `No PI_PORT for this worktree session: ${failure(lease)}`, "warning");
		}
		host.shared.set(WORKTREE_KEY, w);
		if (!DELEGATE) {
			locked = { cwd: ctx.cwd };
			const l = await native.worktreeLock(host.agentDir, ctx.cwd, true, process.pid);
			if (!l.ok) say(ctx, `The worktree could not be locked: ${failure(l)}`, "warning");
		}
	});
	// Registered first of all the toolkit's tool_call handlers (src/pi/features.ts): a refused call shows no card.
	host.pi.on("tool_call", async (_event, ctx) => {
		const refusal = worktreeRefusal(host.agentDir, ctx.cwd);
		return refusal ? { block: true, reason: refusal } : undefined;
	});
	// The person's own `!` and `!!` commands run in the session's folder too: refused the same way, nothing run.
	host.pi.on("user_bash", async (event) => {
		const refusal = worktreeRefusal(host.agentDir, event.cwd);
		return refusal ? { result: { output: refusal, exitCode: 1, cancelled: false, truncated: false } } : undefined;
	});
	host.lifecycle("worktrees", { shutdown: end });
}

function setFooter(ctx: ExtensionContext, check: WorktreeResult | null): void {
	try {
		if (!ctx.hasUI) return;
		if (!check) ctx.ui.setStatus(FOOTER, undefined);
		else if (!check.ok) ctx.ui.setStatus(FOOTER, `worktree ${check.id ?? ""}: missing`);
		else ctx.ui.setStatus(FOOTER, `worktree ${check.id} (${check.branch})`);
	} catch {
		// a replaced session's context
	}
}

/** Once per process, when worktrees are on: lists the project's leftover and missing worktrees (never deletes). */
async function sweep(host: ToolkitHost, ctx: ExtensionContext): Promise<void> {
	if (sweptLeftovers || DELEGATE || !host.config().worktrees?.enabled) return;
	sweptLeftovers = true;
	try {
		const p = await native.worktreeProject(ctx.cwd);
		if (!p.ok || !p.project) return;
		const l = await native.worktreeList(host.agentDir, p.project);
		const odd = (l.entries ?? []).filter((e) => e.state === "leftover" || e.state === "missing");
		if (odd.length === 0) return;
		say(ctx, [`Worktrees of ${p.project} left over from earlier sessions (kept; /pct worktree delete <id> removes one):`, ...odd.map((e) => entryRow(e))].join("\n"), "warning");
	} catch {
		// the sweep is advice only
	}
}
