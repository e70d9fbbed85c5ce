/**
 * `/pct status` text (docs/spec/toolkit.md §2), the running-work footer and `/pct jobs` (docs/render.md "Running
 * work"). The status text is composed by the rules engine (src/rules/status.rs) from the same snapshot a sync uses,
 * so status can never disagree with the active tools; this file puts the running-work summary in front of it.
 *
 * Running work = background Bash tasks, running code cells and shell sessions still running. The counts are the
 * engine's (`HostSession.taskCounts`, `CodeManager.runningCells`, `ShellManager.status`); the ids of cells and shell
 * sessions (which the engine does not list) are taken from the results Pi reports (`tool_result`), with the command
 * and the last output seen, and dropped when a later result says the work ended or the engine counts none.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { CodeManager, HostSession, HostTask, ShellManager } from "../../index.js";
import { observe, rulesStatus } from "./rules.ts";
import type { Toolkit } from "./toolkit.ts";
import type { HostRuntime } from "./tools/host.ts";
import { safeStatus, shownLine } from "./render/safe.ts";
import { loadAgents } from "./agents.ts";
import { configuredMode } from "./permission.ts";

/**
 * `/pct status`: one screen, the summary line first (docs/render.md "/pct"): the features grouped by state (a feature
 * that is not active names its reason code), Task subagents, the permission and operation modes, the config file
 * and its error, and how to see more. `/pct status all` (`all`): the summary line, then the engine's whole status —
 * every feature with its reason sentence and details, the model, the execution rules.
 */
export function statusText(tk: Toolkit, ctx: ExtensionContext, all = false): string {
	observe(tk, ctx);
	const features = tk.rules.last?.features ?? {};
	const head = summaryLine(features, jobsOf(tk));
	if (all) return `${head}\n\n${rulesStatus(tk)}\n\n${subagentsLine(tk, ctx)}`;
	return [head, "", ...featureLines(features), subagentsLine(tk, ctx), ...modeLines(tk), `Config: ${tk.configPath}`, ...(tk.lastError ? [`Config error: ${tk.lastError.code}${tk.lastError.detail ? ` (${tk.lastError.detail})` : ""}`] : []), "", STATUS_MORE].join("\n");
}

/** The last line of the short status. */
export const STATUS_MORE = "/pct status all: every feature's reason and details, the model, the execution rules.";

/** `webSearch` → `Web Search`: the feature keys are the engine's labels in camelCase. */
export function featureLabel(key: string): string {
	return key.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase());
}

/** One line per state that has features: `Active: Apply Patch, Host Tools`; not-active ones with their reason code. */
export function featureLines(features: Record<string, { effective: string; reason?: string }>): string[] {
	const out: string[] = [];
	for (const state of ["active", "deferred", "unavailable", "off"]) {
		const names = Object.entries(features)
			.filter(([, f]) => f.effective === state)
			.map(([k, f]) => (state === "active" || state === "off" || !f.reason ? featureLabel(k) : `${featureLabel(k)} [${f.reason}]`));
		if (names.length) out.push(`${state.charAt(0).toUpperCase()}${state.slice(1)}: ${names.join(", ")}${state === "off" ? " (/pct config turns them on)" : ""}`);
	}
	return out;
}

/** Task subagents: on or off, and how many definitions the session sees. */
function subagentsLine(tk: Toolkit, ctx: ExtensionContext): string {
	const on = tk.config().subagents?.enabled === true;
	if (!on) return "Task subagents: off (subagents.enabled in /pct config)";
	let n: number | undefined;
	try {
		n = loadAgents(tk, ctx.cwd).definitions.length;
	} catch {
		// A definition folder that cannot be read: /pct agents says why.
	}
	return `Task subagents: on${n === undefined ? "" : `, ${n} definition${n === 1 ? "" : "s"}`} (/pct agents lists them)`;
}

/** The permission mode in force and the operation mode, when the host runtime exists. */
function modeLines(tk: Toolkit): string[] {
	const rt = tk.shared.get("host.runtime") as HostRuntime | undefined;
	if (!rt) return [];
	const configured = configuredMode(tk.config()) ?? "ask";
	const o = rt.permissions.sessionOverride;
	const mode = o ? `${o} (this session)` : configured;
	return [`Permission mode: ${mode} · operation mode: ${rt.permissions.operationMode === "plan" ? "Plan" : "Agent"}`];
}

/**
 * `Pi Codex Toolkit: 3 active · 1 unavailable · 7 off · running: 2 tasks · 1 cell` — the features as the last sync
 * committed them (the same decision the active tools follow) and the running work.
 */
export function summaryLine(features: Record<string, { effective: string }>, jobs: { tasks: number; cells: number; shells: number }): string {
	const n: Record<string, number> = {};
	for (const f of Object.values(features)) n[f.effective] = (n[f.effective] ?? 0) + 1;
	const parts = ["active", "deferred", "unavailable", "off"].filter((k) => n[k]).map((k) => `${n[k]} ${k}`);
	const work = summary(jobs);
	return `Pi Codex Toolkit: ${parts.join(" · ") || "no features"} · running: ${work || "nothing"}`;
}

/** One piece of running work, as `/pct jobs` lists it. */
export interface Job {
	kind: "task" | "cell" | "shell";
	id: string;
	/** The command or the program's first line. */
	what: string;
	/** When it started (ms since the epoch), when known. */
	since?: number;
	/** The last output line seen, when known. */
	last?: string;
	/** The last output lines seen (at most JOB_LINES, oldest first, sanitised): the widget shows them under the row. */
	lines?: string[];
	/** `running`, or a task's final state. */
	status: string;
	/** A task's CPU time so far (ms): its process group's, read by the engine (`HostTask.cpuMs`); absent: unknown. */
	cpuMs?: number;
}

/** How many of a job's last output lines `/pct jobs` shows under its row. */
export const JOB_LINES = 3;

/** What the toolkit knows of the cells and shell sessions the model started (from Pi's tool results). */
interface Seen {
	what: string;
	since: number;
	lines?: string[];
	/** The output the results carried so far (each read brings only new text), its last SEEN_LOG_CHARS kept. */
	log: string;
	/** Characters of output dropped from the front of `log`. */
	cut: number;
}

/** How much of a cell's or shell session's output the toolkit keeps for `/pct jobs show` (characters). */
export const SEEN_LOG_CHARS = 64 * 1024;

function appendLog(prev: Seen | undefined, text: string): { log: string; cut: number } {
	const all = (prev?.log ?? "") + text;
	const over = Math.max(0, all.length - SEEN_LOG_CHARS);
	return { log: all.slice(over), cut: (prev?.cut ?? 0) + over };
}

const seenCells = new Map<string, Seen>();
const seenShells = new Map<string, Seen>();

const firstLine = (s: string) => s.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
/** The last JOB_LINES non-blank lines of `s`, sanitised for the terminal; undefined when there are none. */
const lastLines = (s: string | undefined): string[] | undefined => {
	const l = (s ?? "")
		.split("\n")
		.map((x) => x.split("\r").filter((p) => p.trim() !== "").pop() ?? "")
		.map((x) => x.trim())
		.filter(Boolean)
		.slice(-JOB_LINES)
		.map((x) => shownLine(x.length > 240 ? `${x.slice(0, 239)}…` : x));
	return l.length ? l : undefined;
};

/** Records what one tool result says about running work (exec/wait/exec_command/write_stdin). */
export function noteResult(toolName: string, input: Record<string, unknown>, details: unknown): void {
	const d = (details ?? {}) as Record<string, unknown>;
	if (toolName === "exec" || toolName === "wait") {
		const id = typeof d.cellId === "string" ? d.cellId : undefined;
		if (!id) return;
		if (d.status === "running") {
			const prev = seenCells.get(id);
			const what = prev?.what ?? (typeof input.code === "string" ? firstLine(input.code) : id);
			const out = typeof d.output === "string" ? d.output : "";
			seenCells.set(id, { what, since: prev?.since ?? Date.now(), lines: lastLines(out) ?? prev?.lines, ...appendLog(prev, out) });
		} else seenCells.delete(id);
		for (const s of Array.isArray(d.shellSessions) ? (d.shellSessions as string[]) : []) {
			if (!seenShells.has(s)) seenShells.set(s, { what: `(started by ${id})`, since: Date.now(), log: "", cut: 0 });
		}
		return;
	}
	if (toolName === "exec_command" || toolName === "write_stdin") {
		const id = [d.session_id, d.sessionId, input.session_id, input.sessionId].find((v) => typeof v === "string") as string | undefined;
		if (!id) return;
		if (d.status === "running") {
			const prev = seenShells.get(id);
			const cmd = [input.cmd, input.command].find((v) => typeof v === "string") as string | undefined;
			const out = [d.stdout, d.stderr].filter((x) => typeof x === "string" && x !== "").join("\n");
			const lines = lastLines(out);
			seenShells.set(id, { what: prev?.what ?? (cmd ? firstLine(cmd) : id), since: prev?.since ?? Date.now(), lines: lines ?? prev?.lines, ...appendLog(prev, out && !out.endsWith("\n") ? `${out}\n` : out) });
		} else seenShells.delete(id);
	}
}

/** Forgets every recorded id (a new Pi session). */
export function forgetJobs(): void {
	seenCells.clear();
	seenShells.clear();
}

interface Owners {
	session?: HostSession | null;
	code?: CodeManager;
	shell?: ShellManager;
}

function owners(tk: Pick<Toolkit, "shared">): Owners {
	const rt = tk.shared.get("host.runtime") as HostRuntime | undefined;
	return { session: rt?.session, code: tk.shared.get("code") as CodeManager | undefined, shell: tk.shared.get("shell") as ShellManager | undefined };
}

/** The running work now: the engine's counts, with the ids the toolkit saw. */
export function jobsOf(tk: Pick<Toolkit, "shared">): { tasks: number; cells: number; shells: number; list: Job[] } {
	const o = owners(tk);
	let tasks: HostTask[] = [];
	try {
		const l = o.session?.taskList({ tailLines: JOB_LINES });
		if (l?.ok) tasks = l.tasks.filter((t) => t.status === "running");
	} catch {
		// a closed session lists nothing
	}
	const cells = safe(() => o.code?.runningCells() ?? 0);
	const shells = safe(() => o.shell?.status().running ?? 0);
	// The engine says none runs: every id seen has ended (a result Pi never reported, e.g. a stop at shutdown).
	if (cells === 0) seenCells.clear();
	if (shells === 0) seenShells.clear();
	const list: Job[] = [
		...tasks.map((t) => {
			// The engine sends each stream's last lines sanitised; which stream wrote last is not known, so stderr's
			// (marked) follow stdout's and the last JOB_LINES of the two are shown.
			const lines = [...(t.stdoutTail ?? []), ...(t.stderrTail ?? []).map((l) => `stderr: ${l}`)].slice(-JOB_LINES);
			return {
				kind: "task" as const,
				id: t.backgroundTaskId,
				cpuMs: t.cpuMs ?? undefined,
				what: t.description ? `${t.command} (${t.description})` : t.command,
				since: Date.now() - t.durationMs,
				status: t.status,
				last: lines.at(-1) ?? `${t.stdoutBytes + t.stderrBytes} bytes of output`,
				lines: lines.length ? lines : undefined,
			};
		}),
		...[...seenCells].map(([id, s]) => ({ kind: "cell" as const, id, what: s.what, since: s.since, last: s.lines?.at(-1), lines: s.lines, status: "running" })),
		...[...seenShells].map(([id, s]) => ({ kind: "shell" as const, id, what: s.what, since: s.since, last: s.lines?.at(-1), lines: s.lines, status: "running" })),
	];
	return { tasks: tasks.length, cells, shells, list };
}

function safe(f: () => number): number {
	try {
		return f();
	} catch {
		return 0;
	}
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** `2 tasks · 1 cell · 1 shell`, or "" when nothing runs. */
export function summary(j: { tasks: number; cells: number; shells: number }): string {
	return [j.tasks && plural(j.tasks, "task"), j.cells && plural(j.cells, "cell"), j.shells && plural(j.shells, "shell")].filter(Boolean).join(" · ");
}

/** `12s`, `3m 4s`, `1h 2m`. */
export function age(ms: number): string {
	const s = Math.max(0, Math.floor(ms / 1000));
	if (s < 60) return `${s}s`;
	if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
	return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** One `/pct jobs` row: `task bg-1  npm run dev  2m 3s  last: listening on :3000`. */
export function jobRow(j: Job, now = Date.now()): string {
	const what = j.what.length > 60 ? `${j.what.slice(0, 57)}...` : j.what;
	const parts = [`${j.kind} ${j.id}`, what, j.since !== undefined ? age(now - j.since) : "", j.last ? `last: ${j.last.length > 60 ? `${j.last.slice(0, 57)}...` : j.last}` : ""];
	return parts.filter(Boolean).join("  ");
}

/** Stops one job; resolves a sentence saying what happened. */
export async function stopJob(tk: Pick<Toolkit, "shared">, j: Job, cwd: string): Promise<string> {
	const o = owners(tk);
	try {
		if (j.kind === "task") {
			const r = await o.session!.taskStop({ backgroundTaskId: j.id });
			return r.ok ? `Stopped task ${j.id}.` : `Task ${j.id}: ${r.message}`;
		}
		if (j.kind === "cell") {
			const r = await o.code!.wait({ cell_id: j.id, terminate: true, yield_time_ms: 1000 }, { cwd });
			seenCells.delete(j.id);
			return r.ok ? `Stopped cell ${j.id}.` : `Cell ${j.id}: ${r.message}`;
		}
		const r = await o.shell!.writeStdin({ session_id: j.id, terminate: true, yield_time_ms: 1000 }, { cwd, stopOnCancel: true });
		seenShells.delete(j.id);
		return r.ok ? `Stopped shell session ${j.id}.` : `Shell session ${j.id}: ${r.message}`;
	} catch (e) {
		return `Could not stop ${j.kind} ${j.id}: ${e instanceof Error ? e.message : String(e)}`;
	}
}

/** The most lines a job's full output view holds (its last ones; the rest is named with where to find it). */
export const JOB_OUTPUT_LINES = 2000;

/** A job's output as `/pct jobs show <id>` and the widget's output view show it: sanitised lines, the last JOB_OUTPUT_LINES. */
export interface JobOutput {
	title: string;
	lines: string[];
}

/** Sanitised lines of `text`, at most JOB_OUTPUT_LINES (the last ones), with a first line saying what was left out. */
export function outputLines(text: string, earlier: string | undefined): string[] {
	const all = text.replace(/\n$/, "").split("\n");
	const cut = Math.max(0, all.length - JOB_OUTPUT_LINES);
	const lines = all.slice(cut).map((l) => shownLine(l.replace(/\r$/, "")));
	const head = [cut > 0 ? `… ${cut} earlier lines not shown` : "", earlier ?? ""].filter(Boolean).join("; ");
	return head ? [head, ...lines] : lines;
}

/**
 * The full output of job `id` (a running one, or a task that ended and is still listed): a background task's as the
 * engine keeps it (the last 256 KiB of each stream, and the recovery file with the rest: `HostSession.taskOutput`,
 * which neither waits nor stops it); a cell's or shell session's as the results Pi reported carried it (the last
 * 64 KiB). Undefined for an id that is not known.
 */
export async function jobOutput(tk: Pick<Toolkit, "shared">, id: string): Promise<JobOutput | undefined> {
	const o = owners(tk);
	if (o.session) {
		try {
			const r = await o.session.taskOutput({ backgroundTaskId: id });
			if (r.ok) return { title: `task ${id}: ${r.task.status}`, lines: outputLines(r.text, undefined) };
		} catch {
			// a closed session: not a task here
		}
	}
	for (const [kind, seen] of [["cell", seenCells], ["shell", seenShells]] as const) {
		const s = seen.get(id);
		if (!s) continue;
		const earlier = s.cut > 0 ? `${s.cut} earlier characters not kept (the model's results have them)` : undefined;
		return { title: `${kind} ${id}: ${s.what}`, lines: s.log === "" ? ["(no output seen yet)"] : outputLines(s.log, earlier) };
	}
	return undefined;
}

/** `codeMode.longRunningSeconds` when the config has no value (the engine's default, src/config/schema.rs). */
export const LONG_RUNNING_DEFAULT_S = 300;

function longRunningMs(tk: Pick<Toolkit, "config">): number {
	let s: number | undefined;
	try {
		s = tk.config().codeMode?.longRunningSeconds;
	} catch {
		// no readable config: the default
	}
	return (typeof s === "number" && s > 0 ? s : LONG_RUNNING_DEFAULT_S) * 1000;
}

/** A job running past the threshold, with its CPU use over the last sample (`null`: not measurable here). */
export interface LongJob {
	kind: Job["kind"];
	id: string;
	elapsedMs: number;
	cpuPercent: number | null;
}

/** The previous CPU sample of each job (`kind:id` → CPU ms and when it was read), for a rate over the last interval. */
const cpuSamples = new Map<string, { cpuMs: number; at: number }>();

/** CPU percent over the time since the previous sample of `key`, else over the whole run (`elapsedMs`). */
export function cpuPercent(key: string, cpuMs: number | null, elapsedMs: number, now = Date.now()): number | null {
	if (cpuMs === null) {
		cpuSamples.delete(key);
		return null;
	}
	const prev = cpuSamples.get(key);
	cpuSamples.set(key, { cpuMs, at: now });
	if (prev && now - prev.at >= 500) return Math.max(0, ((cpuMs - prev.cpuMs) * 100) / (now - prev.at));
	return elapsedMs > 0 ? (cpuMs * 100) / elapsedMs : null;
}

/** The tasks and cells running past `thresholdMs`, longest first, with their CPU use. */
export function longRunning(tk: Pick<Toolkit, "shared">, list: Job[], thresholdMs: number, now = Date.now()): LongJob[] {
	const long = list.filter((j) => j.kind !== "shell" && j.status === "running" && j.since !== undefined && now - j.since >= thresholdMs);
	for (const key of cpuSamples.keys()) if (!long.some((j) => `${j.kind}:${j.id}` === key)) cpuSamples.delete(key);
	if (!long.length) return [];
	let cellCpu = new Map<string, number | null>();
	if (long.some((j) => j.kind === "cell")) {
		try {
			const code = tk.shared.get("code") as CodeManager | undefined;
			cellCpu = new Map((code?.cellCpu() ?? []).map((c) => [c.cellId, c.cpuMs ?? null]));
		} catch {
			// a closed manager: CPU n/a
		}
	}
	return long
		.map((j) => {
			const elapsedMs = now - j.since!;
			// A task's CPU comes with the task list (one scan of /proc in Rust for every running task).
			const cpuMs = j.kind === "task" ? (j.cpuMs ?? null) : (cellCpu.get(j.id) ?? null);
			return { kind: j.kind, id: j.id, elapsedMs, cpuPercent: cpuPercent(`${j.kind}:${j.id}`, cpuMs, elapsedMs, now) };
		})
		.sort((a, b) => b.elapsedMs - a.elapsedMs);
}

/**
 * The footer: `pct: 1 cell · cell-3 running 19m 4s at 94% CPU` — the counts, then the longest job past the
 * threshold (`CPU n/a` where CPU time cannot be read), and how many more are past it.
 */
export function footerText(counts: string, long: LongJob[]): string {
	if (!long.length) return `pct: ${counts}`;
	const j = long[0];
	const cpu = j.cpuPercent === null ? "CPU n/a" : `at ${Math.round(j.cpuPercent)}% CPU`;
	const more = long.length > 1 ? ` (+${long.length - 1} more running long)` : "";
	return `pct: ${counts} · ${j.id} running ${age(j.elapsedMs)} ${cpu}${more}`;
}

/** How often the footer is refreshed while something runs. */
export const FOOTER_MS = 2000;

/**
 * The footer status `pct: 2 tasks · 1 cell · 1 shell` while anything runs (cleared when nothing does), refreshed after
 * every tool result and every FOOTER_MS while work runs; and the result watcher behind `/pct jobs`.
 */
export function registerFooter(pi: ExtensionAPI, tk: Pick<Toolkit, "shared" | "config">): void {
	let ctx: ExtensionContext | undefined;
	let timer: ReturnType<typeof setInterval> | undefined;
	let shown = "";
	const stop = () => {
		if (timer) clearInterval(timer);
		timer = undefined;
	};
	const refresh = () => {
		let live: boolean;
		try {
			live = !!ctx?.hasUI;
		} catch {
			// A ctx from a replaced or ended session throws on every read: forget it until the next event brings one.
			ctx = undefined;
			live = false;
		}
		if (!live) return stop();
		const jobs = jobsOf(tk);
		const s = summary(jobs);
		const text = s ? footerText(s, longRunning(tk, jobs.list, longRunningMs(tk))) : "";
		if (text !== shown) {
			shown = text;
			try {
				if (ctx?.ui) safeStatus(ctx.ui, "pct", text || undefined);
			} catch {
				// a replaced session's ctx: the next event brings a live one
			}
		}
		if (s && !timer) {
			timer = setInterval(refresh, FOOTER_MS);
			timer.unref?.();
		} else if (!s && timer) {
			clearInterval(timer);
			timer = undefined;
		}
	};
	pi.on("session_start", async (_e, c) => {
		ctx = c;
		forgetJobs();
		shown = "";
		refresh();
	});
	pi.on("tool_result", async (e, c) => {
		ctx = c;
		noteResult(e.toolName, (e.input ?? {}) as Record<string, unknown>, e.details);
		// The result's own work is counted once the tool returned: look again just after.
		setTimeout(refresh, 0).unref?.();
	});
	pi.on("agent_end", async (_e, c) => {
		ctx = c;
		refresh();
	});
	pi.on("session_shutdown", async () => {
		stop();
		ctx = undefined;
	});
}
