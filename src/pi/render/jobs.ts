/**
 * The `/pct jobs` widget (docs/render.md "Running work"): the running background tasks, code cells and shell sessions,
 * redrawn every second and at once when a stop it asked for completes, so a job that ends leaves the list while the
 * person looks at it. Each job shows its age and the last output seen; a stop is confirmed on screen (`Stopped task
 * bg-1.` in the success colour, a failure in the warning colour) and the row says `stopping…` until it is. Under each
 * row are the job's last output lines (JOB_LINES); `o` opens the selected job's full output in the same widget,
 * scrolled with ↑↓ and PgUp/PgDn. Drawn with `ctx.ui.custom` in Pi's TUI; where custom UI is unavailable the
 * caller falls back to its select menu.
 */
import type { ExtensionContext, Theme } from "@earendil-works/pi-coding-agent";
import { Key, matchesKey, truncateToWidth } from "@earendil-works/pi-tui";
import { jobRow, summary, type Job, type JobOutput } from "../status.ts";

/** How often the widget looks at the running work again. */
export const JOBS_REFRESH_MS = 1000;

/** Rows of output the output view shows at once. */
export const OUTPUT_ROWS = 20;

/** What the widget needs from the toolkit: the jobs now, how to stop one (resolves a sentence), its full output. */
export interface JobsSource {
	list(): { tasks: number; cells: number; shells: number; list: Job[] };
	stop(j: Job): Promise<string>;
	output(j: Job): Promise<JobOutput | undefined>;
}

/** The output view's lines: the title, OUTPUT_ROWS rows from `top`, where they are in the whole, the keys. */
export function outputViewLines(theme: Theme, width: number, out: JobOutput, top: number): string[] {
	const fit = (s: string) => truncateToWidth(s, Math.max(10, width));
	const rows = out.lines.slice(top, top + OUTPUT_ROWS);
	const end = Math.min(out.lines.length, top + OUTPUT_ROWS);
	return [
		fit(theme.fg("accent", theme.bold(out.title))),
		"",
		...rows.map((l) => fit(`  ${theme.fg("text", l)}`)),
		"",
		fit(theme.fg("dim", `lines ${out.lines.length ? top + 1 : 0}-${end} of ${out.lines.length} · ↑↓ scroll · PgUp/PgDn page · o/esc back`)),
	];
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
		for (const l of j.lines ?? (j.last ? [j.last] : [])) out.push(fit(`    ${theme.fg("muted", l)}`));
	});
	if (said) out.push("", fit(theme.fg(said.ok ? "success" : "warning", said.text)));
	out.push("", fit(theme.fg("dim", jobs.list.length ? "↑↓ move · enter stop · o output · a stop all · esc close" : "esc close")));
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
			// The output view of one job (o), and its first row shown.
			let viewing: JobOutput | undefined;
			let top = 0;
			const open = (j: Job) => {
				void source.output(j).then(
					(out) => {
						if (out) {
							viewing = out;
							// Opened at its end: the newest output is what a person looks for first.
							top = Math.max(0, out.lines.length - OUTPUT_ROWS);
						} else said = { text: `No output of ${j.kind} ${j.id} is known (it may have ended).`, ok: false };
						tui.requestRender();
					},
					(e: unknown) => {
						said = { text: `Could not read the output of ${j.kind} ${j.id}: ${e instanceof Error ? e.message : String(e)}`, ok: false };
						tui.requestRender();
					},
				);
			};
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
				render: (width: number) => (viewing ? outputViewLines(theme, width, viewing, top) : jobsLines(theme, width, jobs, cursor, stopping, said)),
				invalidate: () => undefined,
				handleInput(data: string) {
					if (viewing) {
						const last = Math.max(0, viewing.lines.length - OUTPUT_ROWS);
						if (matchesKey(data, Key.escape) || data === "o" || data === "q") viewing = undefined;
						else if (matchesKey(data, Key.up)) top = Math.max(0, top - 1);
						else if (matchesKey(data, Key.down)) top = Math.min(last, top + 1);
						else if (matchesKey(data, Key.pageUp)) top = Math.max(0, top - OUTPUT_ROWS);
						else if (matchesKey(data, Key.pageDown)) top = Math.min(last, top + OUTPUT_ROWS);
						return tui.requestRender();
					}
					if (matchesKey(data, Key.escape) || data === "q") {
						clearInterval(timer);
						return done(undefined);
					}
					if (matchesKey(data, Key.up)) cursor = Math.max(0, cursor - 1);
					else if (matchesKey(data, Key.down)) cursor = Math.min(Math.max(0, jobs.list.length - 1), cursor + 1);
					else if (matchesKey(data, Key.enter) && jobs.list[cursor]) stop([jobs.list[cursor]!]);
					else if (data === "a") stop(jobs.list);
					else if (data === "o" && jobs.list[cursor]) open(jobs.list[cursor]!);
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
