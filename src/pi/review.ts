/**
 * Review changes (docs/review.md): every toolkit file change (apply_patch direct and nested; host Write/Edit) is
 * recorded by the Rust engine (src/review) in `<agentDir>/pi-codex-toolkit/review/<sessionId>/`. This file only
 * adapts Pi: which session and message a call belongs to, `/pct review` (list, show one diff, roll back one or all
 * through ctx.ui.select; without a UI the list is printed), the start-up sweep and the removal of an in-memory
 * session's store at shutdown. Every decision (hash guard, conflicts, Move pairs, limits) is Rust's.
 */
import type { ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ReviewChange, ReviewListOk, ReviewTarget } from "../../index.js";
import type { ToolkitHost } from "./host.ts";
import { say } from "./messages.ts";
import { native } from "./native.ts";
import { DELEGATE } from "./delegate.ts";
import { safeSelect } from "./render/safe.ts";

/** The review target of a tool call made in `ctx`'s session (undefined when Pi gives no session id). */
export function reviewTarget(agentDir: string, ctx: ExtensionContext | null | undefined): ReviewTarget | undefined {
	// A Task delegate's changes belong to its parent's session (docs/agents.md "Review").
	if (DELEGATE) return DELEGATE.review;
	const sm = ctx?.sessionManager;
	const sessionId = sm?.getSessionId?.();
	if (!sessionId) return undefined;
	const target: ReviewTarget = { agentDir, sessionId };
	const leaf = sm?.getLeafId?.();
	if (leaf) target.messageId = leaf;
	const file = sm?.getSessionFile?.();
	if (file) target.sessionFile = file;
	return target;
}


export const REVIEW_USAGE = "Usage: /pct review [show <n>|rollback <n>|rollback all]";
const ROLL_BACK_ALL = "Roll back all (newest first)";
const CLOSE = "Close";

/** A change as the person names it: `#3 Edit app.py`, `#4 writer (Task) app.py` for a delegate's change. */
export function changeName(c: ReviewChange): string {
	const n = /^#(\d+)/.exec(c.row)?.[1] ?? "?";
	return `#${n} ${c.by} ${c.path}`;
}

/** A listing row with its state in words (`rolled back`, not the engine's `rolledBack`). */
export function rowText(row: string): string {
	return row.replace(/\brolledBack\b/g, "rolled back");
}

/** The active changes made after `c` to the same file (its own Move partner excluded), newest first: what blocks
 * rolling `c` back when the file still holds their bytes. "After" is the listing's order (oldest first); a change's
 * `version` is its record format, not its place. */
export function laterChanges(changes: ReviewChange[], c: ReviewChange): ReviewChange[] {
	const same = (x: ReviewChange) => x.path === c.path || x.movedFrom === c.path || (c.movedTo !== undefined && x.path === c.movedTo);
	const at = changes.indexOf(c);
	return changes
		.slice(at + 1)
		.filter((x) => x.state === "active" && same(x) && (c.group === undefined || x.group !== c.group))
		.reverse();
}

/** Invalidation of the host tools' snapshot entries is done in Rust by the rollback itself (src/review/invalidate.rs).
 * A conflict caused by the toolkit's own later change names that change and, with a UI, offers to roll back from
 * the newest. */
async function rollback(ctx: ExtensionContext, agentDir: string, sessionId: string, key?: string): Promise<void> {
	const r = await native.reviewRollback(agentDir, sessionId, key, ctx.cwd);
	if (r.ok) return say(ctx, r.text, r.stopped ? "warning" : "info");
	if (r.code === "conflict" && key !== undefined) {
		const listed = await native.reviewList(agentDir, sessionId);
		const target = listed.ok ? listed.changes.find((c) => c.snapshotId === key || /^#(\d+)/.exec(c.row)?.[1] === key.replace(/^#/, "")) : undefined;
		const later = listed.ok && target ? laterChanges(listed.changes, target) : [];
		if (target && later.length > 0) {
			const names = later.map(changeName);
			const msg = `Rollback of ${changeName(target)} refused: ${names.join(", ")} changed the file after it. Roll back from the newest: ${[...names, changeName(target)].join(" → ")}.`;
			if (!ctx.hasUI) return say(ctx, msg, "warning");
			const go = `Roll back ${[...later, target].map((c) => changeName(c).split(" ")[0]).join(", then ")}`;
			const answer = await safeSelect(ctx.ui, msg, [go, "Cancel"]);
			if (answer !== go) return;
			for (const c of [...later, target]) {
				const step = await native.reviewRollback(agentDir, sessionId, c.snapshotId, ctx.cwd);
				if (!step.ok) return say(ctx, `Rollback of ${changeName(c)} refused (${step.code}): ${step.message}`, "warning");
				say(ctx, step.text, step.stopped ? "warning" : "info");
			}
			return;
		}
	}
	say(ctx, `Rollback refused (${r.code}): ${r.message}`, "warning");
}

/** A unified diff coloured with Pi's diff colours when drawn on a terminal (RPC clients get plain text). */
export function colourDiff(ctx: ExtensionContext, text: string): string {
	const theme = process.stdout.isTTY ? ctx.ui?.theme : undefined;
	if (!theme) return text;
	return text
		.split("\n")
		.map((l) =>
			l.startsWith("+++") || l.startsWith("---")
				? theme.bold(l)
				: l.startsWith("+")
					? theme.fg("toolDiffAdded", l)
					: l.startsWith("-")
						? theme.fg("toolDiffRemoved", l)
						: l.startsWith("@@")
							? theme.fg("accent", l)
							: theme.fg("toolDiffContext", l),
		)
		.join("\n");
}

async function show(ctx: ExtensionContext, agentDir: string, sessionId: string, key: string): Promise<void> {
	const r = await native.reviewShow(agentDir, sessionId, key);
	if (!r.ok) return say(ctx, `${r.code}: ${r.message}`, "warning");
	say(ctx, colourDiff(ctx, rowText(r.text)));
}

/** `/pct review [show <n>|rollback <n|all>]`. */
export async function reviewCommand(agentDir: string, ctx: ExtensionCommandContext, args: string): Promise<void> {
	const sessionId = ctx.sessionManager?.getSessionId?.();
	if (!sessionId) return say(ctx, "Review is unavailable: Pi gave this session no id.", "warning");
	const [verb, ...rest] = args.split(/\s+/).filter(Boolean);
	const key = rest.join(" ");
	if (verb === "show" && key) return show(ctx, agentDir, sessionId, key);
	if (verb === "rollback" && key) return rollback(ctx, agentDir, sessionId, key === "all" ? undefined : key);
	if (verb !== undefined) return say(ctx, REVIEW_USAGE, "warning");
	const listed = await native.reviewList(agentDir, sessionId);
	if (!listed.ok) return say(ctx, `${listed.code}: ${listed.message}`, "warning");
	if (!ctx.hasUI || listed.changes.length === 0) return say(ctx, listed.text.split("\n").map(rowText).join("\n"));
	await browse(ctx, agentDir, sessionId, listed);
}

/** The interactive list: pick a change to show or roll back, or roll back all; loops until Close. */
async function browse(ctx: ExtensionCommandContext, agentDir: string, sessionId: string, first: ReviewListOk): Promise<void> {
	// The first pass shows the list the command just read; every later pass reads it again (an action changed it).
	for (let pass = 0; ; pass++) {
		const listed = pass === 0 ? first : await native.reviewList(agentDir, sessionId);
		if (!listed.ok) return say(ctx, `${listed.code}: ${listed.message}`, "warning");
		const rows = listed.changes.map((c: ReviewChange) => rowText(c.row));
		const active = listed.changes.filter((c: ReviewChange) => c.state === "active").length;
		const options = active > 0 ? [...rows, ROLL_BACK_ALL, CLOSE] : [...rows, CLOSE];
		const choice = await safeSelect(ctx.ui, listed.text.split("\n")[0], options);
		if (choice === undefined || choice === CLOSE) return;
		if (choice === ROLL_BACK_ALL) {
			const sure = await safeSelect(ctx.ui, `Roll back all ${active} active change(s), newest first? Files changed since are refused (conflict) and nothing is touched.`, ["Roll back all", "Cancel"]);
			if (sure === "Roll back all") await rollback(ctx, agentDir, sessionId);
			continue;
		}
		const i = rows.indexOf(choice);
		if (i < 0) continue;
		const c = listed.changes[i];
		const actions = c.state === "active" ? ["Show diff", "Roll back", "Back"] : ["Show diff", "Back"];
		const act = await safeSelect(ctx.ui, rowText(c.row), actions);
		if (act === "Show diff") await show(ctx, agentDir, sessionId, c.snapshotId);
		else if (act === "Roll back") await rollback(ctx, agentDir, sessionId, c.snapshotId);
	}
}

/** Start-up sweep (stores of deleted sessions, the total cap) and removal of an in-memory session's store. */
export function register(host: ToolkitHost): void {
	// A delegate writes into its parent's store and never sweeps or removes stores (its parent owns them).
	if (DELEGATE) return;
	// Pi awaits session_start handlers before the first prompt, so the sweep (a walk of every store on the blocking
	// pool) runs beside the session instead of ahead of it; it never touches the current session's store.
	host.pi.on("session_start", async (_event, ctx) => {
		let id: string | undefined;
		try {
			id = ctx?.sessionManager?.getSessionId?.();
		} catch {
			id = undefined;
		}
		// A sweep that cannot run leaves the stores for the next start; it never blocks the session.
		void native.reviewSweep(host.agentDir, id).catch(() => undefined);
	});
	host.pi.on("session_shutdown", async (_event, ctx) => {
		const sm = ctx?.sessionManager;
		const id = sm?.getSessionId?.();
		// A session with a file can be resumed later: its review stays until the file is gone.
		if (id && !sm?.getSessionFile?.()) {
			try {
				await native.reviewRemoveSession(host.agentDir, id);
			} catch {
				// Left for the start-up sweep (idle in-memory stores go after a day).
			}
		}
	});
}
