/**
 * The `/pct jobs` widget (docs/render.md "Running work"): the running background tasks, code cells and shell sessions,
 * redrawn every second and at once when a stop it asked for completes, so a job that ends leaves the list while the
 * person looks at it. Each job shows its age and the last output seen; a stop is confirmed on screen (`Stopped task
 * bg-1.` in the success colour, a failure in the warning colour) and the row says `stopping…` until it is. Drawn
 * with `ctx.ui.custom` in Pi's TUI; where custom UI is unavailable the caller falls back to its select menu.
 */
import type { ExtensionContext, Theme } from "@earendil-works/pi-coding-agent";
import { Key, matchesKey, truncateToWidth } from "@earendil-works/pi-tui";
import { jobRow, summary, type Job } from "../status.ts";

/** How often the widget looks at the running work again. */
export const JOBS_REFRESH_MS = 1000;

/** What the widget needs from the toolkit: the jobs now, and how to stop one (resolves a sentence). */
export interface JobsSource {
	list(): { tasks: number; cells: number; shells: number; list: Job[] };
	stop(j: Job): Promise<string>;
}

/** The widget's lines for `width` (exported for tests). */
export function jobsLines(theme: Theme, width: number, jobs: ReturnType<JobsSource["list"]>, cursor: number, stopping: ReadonlySet<string>, said: { text: string; ok: boolean } | undefined): string[] {
	const out: string[] = [];
	const fit = (s: string) => truncateToWidth(s, Math.max(10, width));
	const s = summary(jobs);
	out.push(fit(theme.fg("accent", theme.bold(s ? `Running: ${s}` : "Nothing is running (no background tasks, code cells or shell sessions)."))));
	out.push("");
	jobs.list.forEach((j, i) => {
		const here = i === cursor;
		const row = `${here ? theme.fg("accent", "> ") : "  "}${theme.fg(here ? "accent" : "text", jobRow({ ...j, last: undefined }))}${stopping.has(j.id) ? theme.fg("warning", "  stopping…") : ""}`;
		out.push(fit(row));
		if (j.last) out.push(fit(`    ${theme.fg("muted", j.last)}`));
	});
	if (said) out.push("", fit(theme.fg(said.ok ? "success" : "warning", said.text)));
	out.push("", fit(theme.fg("dim", jobs.list.length ? "↑↓ move · enter stop · a stop all · esc close" : "esc close")));
	return out;
}

/** Shows the widget until Esc; false when Pi has no custom UI here (the caller then uses its menu). */
export async function jobsWidget(ctx: ExtensionContext, source: JobsSource): Promise<boolean> {
	if (typeof ctx.ui.custom !== "function") return false;
	let drawn = false;
	try {
		await ctx.ui.custom<void>((tui, theme, _keys, done) => {
			drawn = true;
			let cursor = 0;
			let jobs = source.list();
			const stopping = new Set<string>();
			let said: { text: string; ok: boolean } | undefined;
			const look = () => {
				jobs = source.list();
				cursor = Math.max(0, Math.min(cursor, jobs.list.length - 1));
				tui.requestRender();
			};
			const timer = setInterval(look, JOBS_REFRESH_MS);
			timer.unref?.();
			const stop = (list: Job[]) => {
				for (const j of list) {
					if (stopping.has(j.id)) continue;
					stopping.add(j.id);
					void source.stop(j).then(
						(text) => {
							stopping.delete(j.id);
							said = { text, ok: /^Stopped /.test(text) };
							look();
						},
						(e: unknown) => {
							stopping.delete(j.id);
							said = { text: `Could not stop ${j.kind} ${j.id}: ${e instanceof Error ? e.message : String(e)}`, ok: false };
							look();
						},
					);
				}
				tui.requestRender();
			};
			return {
				render: (width: number) => jobsLines(theme, width, jobs, cursor, stopping, said),
				invalidate: () => undefined,
				handleInput(data: string) {
					if (matchesKey(data, Key.escape) || data === "q") {
						clearInterval(timer);
						return done(undefined);
					}
					if (matchesKey(data, Key.up)) cursor = Math.max(0, cursor - 1);
					else if (matchesKey(data, Key.down)) cursor = Math.min(Math.max(0, jobs.list.length - 1), cursor + 1);
					else if (matchesKey(data, Key.enter) && jobs.list[cursor]) stop([jobs.list[cursor]!]);
					else if (data === "a") stop(jobs.list);
					tui.requestRender();
				},
				dispose: () => clearInterval(timer),
			};
		});
		return drawn;
	} catch {
		return drawn;
	}
}
