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
import { safeStatus } from "./render/safe.ts";

/** The whole status text for the context's model: one summary line first, then the engine's status. */
export function statusText(tk: Toolkit, ctx: ExtensionContext, _registered?: Set<string>): string {
	observe(tk, ctx);
	const body = rulesStatus(tk);
	return `${summaryLine(tk.rules.last?.features ?? {}, jobsOf(tk))}\n\n${body}`;
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
	/** `running`, or a task's final state. */
	status: string;
}

/** What the toolkit knows of the cells and shell sessions the model started (from Pi's tool results). */
interface Seen {
	what: string;
	since: number;
	last?: string;
}

const seenCells = new Map<string, Seen>();
const seenShells = new Map<string, Seen>();

const firstLine = (s: string) => s.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
const lastLine = (s: string | undefined) =>
	(s ?? "")
		.split("\n")
		.map((l) => l.trim())
		.filter(Boolean)
		.pop();

/** Records what one tool result says about running work (exec/wait/exec_command/write_stdin). */
export function noteResult(toolName: string, input: Record<string, unknown>, details: unknown): void {
	const d = (details ?? {}) as Record<string, unknown>;
	if (toolName === "exec" || toolName === "wait") {
		const id = typeof d.cellId === "string" ? d.cellId : undefined;
		if (!id) return;
		if (d.status === "running") {
			const prev = seenCells.get(id);
			const what = prev?.what ?? (typeof input.code === "string" ? firstLine(input.code) : id);
			seenCells.set(id, { what, since: prev?.since ?? Date.now(), last: lastLine(d.output as string) ?? prev?.last });
		} else seenCells.delete(id);
		for (const s of Array.isArray(d.shellSessions) ? (d.shellSessions as string[]) : []) {
			if (!seenShells.has(s)) seenShells.set(s, { what: `(started by ${id})`, since: Date.now() });
		}
		return;
	}
	if (toolName === "exec_command" || toolName === "write_stdin") {
		const id = [d.session_id, d.sessionId, input.session_id, input.sessionId].find((v) => typeof v === "string") as string | undefined;
		if (!id) return;
		if (d.status === "running") {
			const prev = seenShells.get(id);
			const cmd = [input.cmd, input.command].find((v) => typeof v === "string") as string | undefined;
			const last = lastLine(d.stderr as string) ?? lastLine(d.stdout as string);
			seenShells.set(id, { what: prev?.what ?? (cmd ? firstLine(cmd) : id), since: prev?.since ?? Date.now(), last: last ?? prev?.last });
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
		const l = o.session?.taskList();
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
		...tasks.map((t) => ({ kind: "task" as const, id: t.backgroundTaskId, what: t.description ? `${t.command} (${t.description})` : t.command, since: Date.now() - t.durationMs, status: t.status, last: `${t.stdoutBytes + t.stderrBytes} bytes of output` })),
		...[...seenCells].map(([id, s]) => ({ kind: "cell" as const, id, what: s.what, since: s.since, last: s.last, status: "running" })),
		...[...seenShells].map(([id, s]) => ({ kind: "shell" as const, id, what: s.what, since: s.since, last: s.last, status: "running" })),
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

/** How often the footer is refreshed while something runs. */
export const FOOTER_MS = 2000;

/**
 * The footer status `pct: 2 tasks · 1 cell · 1 shell` while anything runs (cleared when nothing does), refreshed after
 * every tool result and every FOOTER_MS while work runs; and the result watcher behind `/pct jobs`.
 */
export function registerFooter(pi: ExtensionAPI, tk: Pick<Toolkit, "shared">): void {
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
		const s = summary(jobsOf(tk));
		const text = s ? `pct: ${s}` : "";
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
