/**
 * The component every toolkit row draws into (docs/render.md "Drawing without stalls"). pi-tui's `Text` wraps its
 * whole text on every change, measuring each line; a line holding one character outside printable ASCII (a `…`, an
 * accented letter, CJK, an emoji) is measured by grapheme segmentation, about a thousand times slower than an ASCII
 * one, and Pi's own row box measures every line again. Hundreds of such lines held Pi's main thread for 100–300 ms.
 * So a row body here is a list of parts: short texts (headers, notes, errors) that pi-tui wraps, and blocks of rows
 * (diff rows, output lines, listings) that are never wrapped: each row is cut to the width it is drawn at (an ASCII
 * row by its length; others measured by pi-tui, within a budget per view) and ends with an ASCII marker that counts
 * what was cut. Each part keeps its lines per width, so a redraw (every frame, or every second for a running row's
 * timer) recomputes nothing that did not change.
 */
import type { Component } from "@earendil-works/pi-tui";
import { truncateToWidth, visibleWidth, wrapTextWithAnsi } from "@earendil-works/pi-tui";

/** A block of rows drawn one screen line each. */
export interface RowsPart {
	/** What the rows were made from (the view's text, the output, and how they were chosen): parts with the same key
	 * and width keep their lines. */
	key: string;
	/** The rows, unstyled, without newlines. */
	rows: string[];
	/** Styles the rows once they are cut (same count, same order). */
	style(cut: string[]): string[];
	/** Which rows stay when the budget runs out: the first ones (a diff, a listing) or the last (output). */
	keep: "head" | "tail";
	/** The line that says how many rows were not drawn because the budget ran out. */
	notDrawn(n: number): string;
	/** Spaces before each row (the rows are cut to the width less these). */
	indent?: number;
}

/** A part of a row body: a text pi-tui wraps (may hold newlines and colours), or a block of rows. */
export type Part = string | RowsPart;

/** Characters outside printable ASCII a view measures with pi-tui's grapheme-aware width (each also costs Pi's row
 * box a measure); an emoji counts as EMOJI_COST. Past the budget the remaining rows are counted, not drawn: 6,000
 * units take about 10 ms on an idle machine and stay under the 50 ms goal on a loaded one (bench/render-stall.mjs). */
export const WIDE_BUDGET = 6000;
const EMOJI_COST = 12;

// biome-ignore lint/suspicious/noControlCharactersInRegex: printable ASCII only
const ASCII = /^[\x20-\x7e]*$/;

/** The marker that ends a cut row: `...(+N)`, N the characters not shown. ASCII, so the row stays cheap to draw. */
function marker(hidden: number): string {
	return `...(+${hidden})`;
}

/** `row` (tabs as Pi draws them, three spaces) fitted to `width` columns, and what measuring it cost against the
 * budget (0 for ASCII). */
export function fitRow(row: string, width: number): { text: string; cost: number } {
	const t = row.includes("\t") ? row.replace(/\t/g, "   ") : row;
	if (ASCII.test(t)) {
		if (t.length <= width) return { text: t, cost: 0 };
		return { text: cutAscii(t, width), cost: 0 };
	}
	// Only what is kept is measured: a row whose first `width` characters are ASCII (the engine's 400-character
	// rows end with `…`) is cut by its length too.
	if (t.length > width && ASCII.test(t.slice(0, width))) return { text: cutAscii(t, width), cost: 0 };
	// Measured only as far as it can be drawn: past two code units a column the rest is cut whatever it holds (only
	// a row full of zero-width characters would have fitted).
	let s = t.length > width * 2 ? t.slice(0, width * 2) : t;
	if (s.length < t.length && /[\ud800-\udbff]$/.test(s)) s = s.slice(0, -1);
	let cost = s.length;
	for (let i = 0; i < s.length; i++) if ((s.charCodeAt(i) & 0xfc00) === 0xd800) cost += EMOJI_COST;
	if (s.length === t.length && visibleWidth(s) <= width) return { text: s, cost };
	let m = marker(t.length);
	if (m.length >= width) return { text: truncateToWidth(s, width, ""), cost };
	const kept = truncateToWidth(s, width - m.length, "");
	m = marker(t.length - kept.length);
	return { text: kept + m, cost };
}

function cutAscii(t: string, width: number): string {
	let keep = width - marker(t.length).length;
	if (keep < 1) return t.slice(0, width);
	keep = width - marker(t.length - keep).length;
	return t.slice(0, keep) + marker(t.length - keep);
}

/** Lines of a rows part at `width`: cut, styled, within the budget; `budget` is what the view has left. */
function rowLines(p: RowsPart, full: number, budget: { left: number }): string[] {
	const pad = p.indent ? " ".repeat(p.indent) : "";
	const width = Math.max(1, full - pad.length);
	const order = p.keep === "head" ? p.rows : [...p.rows].reverse();
	const cut: string[] = [];
	for (const r of order) {
		if (budget.left <= 0 && !ASCII.test(r.replace(/\t/g, " "))) break;
		const f = fitRow(r, width);
		budget.left -= f.cost;
		cut.push(f.text);
	}
	if (p.keep === "tail") cut.reverse();
	const styled = pad ? p.style(cut).map((l) => pad + l) : p.style(cut);
	const missing = p.rows.length - cut.length;
	if (missing === 0) return styled;
	const note = pad + p.notDrawn(missing);
	return p.keep === "head" ? [...styled, note] : [note, ...styled];
}

interface Drawn {
	key: string;
	width: number;
	lines: string[];
}

const keyOf = (p: Part) => (typeof p === "string" ? `t\0${p}` : `r\0${p.key}`);

/**
 * A row body made of parts (see the file's comment). `render(width)` returns the same array until a part or the
 * width changes (Pi's row box keeps its own lines while the array is the same one); the array is never changed
 * after it is returned.
 */
export class RowView implements Component {
	private parts: Part[] = [];
	private drawn: (Drawn | undefined)[] = [];
	private lines?: { width: number; lines: string[] };

	/** Sets the parts; a part whose key is the previous one's at the same place keeps its lines. */
	set(parts: Part[]): void {
		const old = this.drawn;
		this.drawn = parts.map((p, i) => (old[i]?.key === keyOf(p) ? old[i] : undefined));
		if (parts.length !== this.parts.length || this.drawn.some((d) => !d)) this.lines = undefined;
		this.parts = parts;
	}

	invalidate(): void {
		this.drawn = this.parts.map(() => undefined);
		this.lines = undefined;
	}

	render(width: number): string[] {
		if (this.lines?.width === width) return this.lines.lines;
		const budget = { left: WIDE_BUDGET };
		const out: string[] = [];
		this.parts.forEach((p, i) => {
			let d = this.drawn[i];
			if (!d || d.width !== width) {
				const lines = typeof p === "string" ? (p === "" ? [""] : wrapTextWithAnsi(p.replace(/\t/g, "   "), width)) : rowLines(p, width, budget);
				d = { key: keyOf(p), width, lines };
				this.drawn[i] = d;
			}
			for (const l of d.lines) out.push(l);
		});
		// Every part empty: nothing to draw (as pi-tui's Text draws no line for blank text).
		const lines = out.every((l) => l === "") ? [] : out;
		this.lines = { width, lines };
		return lines;
	}
}

/** Reuses the slot's RowView (Pi hands the previous component back), else a new one. */
export function rowView(context: { lastComponent: Component | undefined }, parts: Part[]): RowView {
	const v = context.lastComponent instanceof RowView ? context.lastComponent : new RowView();
	v.set(parts);
	return v;
}

/** Joins bodies into parts, a blank line between each. */
export function joinParts(bodies: (Part[] | string | undefined)[], gap = true): Part[] {
	const out: Part[] = [];
	for (const b of bodies) {
		if (!b || (Array.isArray(b) && b.length === 0)) continue;
		if (out.length && gap) out.push("");
		if (typeof b === "string") out.push(b);
		else out.push(...b);
	}
	return out;
}
