/**
 * asktool's TUI dialog (docs/interactive.md "asktool"): every question in one component, one tab per question and a
 * Submit tab. Rows are the question's options, then "Other (type an answer)" (a free-text line; for a question
 * without options it is the only way to answer), then "Skip this question"; a multi-select question toggles options
 * with Space and ends with "Done". Esc closes the whole dialog (open questions read as skipped), and so does an
 * aborted turn. The dialog only collects replies; the AskSession in Rust validates and bounds them.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Input, Key, matchesKey, truncateToWidth, wrapTextWithAnsi } from "@earendil-works/pi-tui";
import { shownBlock, shownLine } from "../render/safe.ts";

/** One question as the AskSession validated it. */
export interface DialogQuestion {
	question: string;
	options: string[];
	multiSelect: boolean;
}

/** What the user did with one question (`undefined` = left open). */
export type DialogReply = { kind: "choices"; chosen: string[]; other?: string } | { kind: "text"; text: string } | { kind: "skip" };

/** The labels the dialog adds (from the engine: interactiveLimits()). */
export interface DialogLabels {
	otherLabel: string;
	skipLabel: string;
	doneLabel: string;
}

type Row = { kind: "option"; label: string } | { kind: "other" } | { kind: "skip" } | { kind: "done" };

function rowsOf(q: DialogQuestion): Row[] {
	const rows: Row[] = q.options.map((label) => ({ kind: "option" as const, label }));
	rows.push({ kind: "other" });
	if (q.multiSelect) rows.push({ kind: "done" });
	rows.push({ kind: "skip" });
	return rows;
}

/**
 * Shows the dialog; resolves the replies (one slot per question), or `undefined` when Pi has no custom UI here
 * (then the caller falls back to sequential dialogs).
 */
export async function showAskDialog(ctx: ExtensionContext, questions: DialogQuestion[], labels: DialogLabels, signal?: AbortSignal): Promise<Array<DialogReply | undefined> | undefined> {
	const out = await ctx.ui.custom<{ replies: Array<DialogReply | undefined> }>((tui, theme, _kb, done) => {
		const replies: Array<DialogReply | undefined> = questions.map(() => undefined);
		const toggled = questions.map(() => new Set<string>());
		const cursor = questions.map(() => 0);
		const single = questions.length === 1;
		let tab = 0;
		let editing = false;
		let finished = false;
		const input = new Input();
		const finish = () => {
			if (finished) return;
			finished = true;
			signal?.removeEventListener("abort", finish);
			done({ replies });
		};
		signal?.addEventListener("abort", finish, { once: true });
		const refresh = () => tui.requestRender();
		const advance = () => {
			editing = false;
			if (single) return finish();
			tab = Math.min(tab + 1, questions.length);
			refresh();
		};
		input.onSubmit = (value: string) => {
			const q = questions[tab]!;
			const text = value.trim();
			if (q.multiSelect) replies[tab] = { kind: "choices", chosen: [...toggled[tab]!], other: text || undefined };
			else replies[tab] = text ? { kind: "text", text } : { kind: "skip" };
			input.setValue("");
			advance();
		};
		input.onEscape = () => {
			editing = false;
			refresh();
		};

		function handleInput(data: string): void {
			if (editing) {
				input.handleInput(data);
				refresh();
				return;
			}
			if (matchesKey(data, Key.escape)) return finish();
			if (!single && (matchesKey(data, Key.tab) || matchesKey(data, Key.right))) {
				tab = (tab + 1) % (questions.length + 1);
				return refresh();
			}
			if (!single && (matchesKey(data, Key.shift("tab")) || matchesKey(data, Key.left))) {
				tab = (tab + questions.length) % (questions.length + 1);
				return refresh();
			}
			if (tab === questions.length) {
				if (matchesKey(data, Key.enter)) finish();
				return;
			}
			const q = questions[tab]!;
			const rows = rowsOf(q);
			if (matchesKey(data, Key.up)) cursor[tab] = Math.max(0, cursor[tab]! - 1);
			else if (matchesKey(data, Key.down)) cursor[tab] = Math.min(rows.length - 1, cursor[tab]! + 1);
			else if (matchesKey(data, Key.space) || matchesKey(data, Key.enter)) {
				const row = rows[cursor[tab]!]!;
				const enter = matchesKey(data, Key.enter);
				if (row.kind === "option" && q.multiSelect) {
					const set = toggled[tab]!;
					if (set.has(row.label)) set.delete(row.label);
					else set.add(row.label);
				} else if (!enter) {
					// Space only toggles.
				} else if (row.kind === "option") {
					replies[tab] = { kind: "choices", chosen: [row.label] };
					return advance();
				} else if (row.kind === "other") {
					editing = true;
				} else if (row.kind === "done") {
					replies[tab] = toggled[tab]!.size > 0 ? { kind: "choices", chosen: [...toggled[tab]!] } : { kind: "skip" };
					return advance();
				} else {
					replies[tab] = { kind: "skip" };
					return advance();
				}
			}
			refresh();
		}

		function summary(r: DialogReply | undefined): string {
			if (!r) return theme.fg("warning", "(open: reads as skipped)");
			if (r.kind === "skip") return theme.fg("muted", "(skipped)");
			if (r.kind === "text") return r.text;
			return [...r.chosen, ...(r.other ? [r.other] : [])].join(", ");
		}

		function render(width: number): string[] {
			const w = Math.max(10, width);
			input.focused = editing;
			const lines: string[] = [theme.fg("accent", "─".repeat(w))];
			const wrap = (s: string, indent = " ") => {
				for (const l of wrapTextWithAnsi(s, w - indent.length)) lines.push(indent + l);
			};
			if (!single) {
				const tabs = questions.map((_, i) => {
					const label = ` ${replies[i] ? "■" : "□"} Q${i + 1} `;
					return i === tab ? theme.bg("selectedBg", theme.fg("text", label)) : theme.fg(replies[i] ? "success" : "muted", label);
				});
				const submit = " ✓ Submit ";
				tabs.push(tab === questions.length ? theme.bg("selectedBg", theme.fg("text", submit)) : theme.fg("dim", submit));
				lines.push(truncateToWidth(" " + tabs.join(" "), w));
				lines.push("");
			}
			if (tab === questions.length) {
				wrap(theme.bold("Submit these answers?"));
				lines.push("");
				questions.forEach((q, i) => wrap(`${theme.fg("muted", `Q${i + 1}: ${shownLine(q.question)}`)} → ${shownLine(summary(replies[i]))}`));
				lines.push("");
				wrap(theme.fg("dim", "Enter submit • Tab/←→ back to a question • Esc close (open questions are skipped)"));
			} else {
				const q = questions[tab]!;
				wrap(theme.fg("text", shownBlock(q.question)));
				lines.push("");
				rowsOf(q).forEach((row, i) => {
					const here = i === cursor[tab];
					const pointer = here ? theme.fg("accent", "> ") : "  ";
					let label: string;
					if (row.kind === "option") label = q.multiSelect ? `${toggled[tab]!.has(row.label) ? "[x]" : "[ ]"} ${shownLine(row.label)}` : shownLine(row.label);
					else if (row.kind === "other") label = labels.otherLabel;
					else if (row.kind === "done") label = labels.doneLabel;
					else label = labels.skipLabel;
					lines.push(truncateToWidth(pointer + theme.fg(here ? "accent" : "text", label), w));
				});
				if (editing) {
					lines.push("");
					wrap(theme.fg("muted", "Your answer:"));
					for (const l of input.render(w - 2)) lines.push(" " + l);
					wrap(theme.fg("dim", "Enter save • Esc back"));
				} else {
					lines.push("");
					const keys = q.multiSelect ? "↑↓ move • Space toggle • Enter choose" : "↑↓ move • Enter choose";
					wrap(theme.fg("dim", single ? `${keys} • Esc close (skipped)` : `${keys} • Tab/←→ questions • Esc close (open questions are skipped)`));
				}
			}
			lines.push(theme.fg("accent", "─".repeat(w)));
			return lines;
		}

		return {
			render,
			invalidate: () => undefined,
			handleInput,
			dispose: () => signal?.removeEventListener("abort", finish),
		};
	});
	return out?.replies;
}
