/**
 * The one sanitiser every string the toolkit shows goes through (docs/permissions.md "What reaches the terminal"):
 * card titles and bodies, dialog questions and options, widgets, the status line, notifications, relayed delegate
 * cards and `/pct` listings. The rule is the engine's (src/display: every C0/C1 control, DEL, line separator and
 * direction override becomes a visible escape such as `\x1b` or `\n`); this file only skips the call for text that
 * holds none of them. `UNSAFE` below is the same class as Rust's `is_unsafe`, checked code point by code point in
 * __test__/display.test.mjs.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { native } from "../native.ts";

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
export const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const UNSAFE_IN_BLOCK = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** `text` as one line: every control escaped visibly, newlines and tabs too. */
export function shownLine(text: string): string {
	return UNSAFE.test(text) ? native.displayText(text, false) : text;
}

/** `text` as a block: newlines and tabs kept (CRLF folded), every other control escaped visibly. */
export function shownBlock(text: string): string {
	return UNSAFE_IN_BLOCK.test(text) ? native.displayText(text, true) : text;
}

type Ui = ExtensionContext["ui"];
type DialogOptions = Parameters<Ui["select"]>[2];

/**
 * `ctx.ui.select` with its title as a block and each option as a line; resolves the caller's own option (the one
 * whose shown form was picked), so callers compare against what they passed.
 */
export async function safeSelect(ui: Ui, title: string, options: string[], opts?: DialogOptions): Promise<string | undefined> {
	const shown = options.map(shownLine);
	const picked = await ui.select(shownBlock(title), shown, opts);
	if (picked === undefined) return undefined;
	const i = shown.indexOf(picked);
	return i >= 0 ? options[i] : undefined;
}

/** `ctx.ui.confirm` with a one-line title and a block message. */
export function safeConfirm(ui: Ui, title: string, message: string, opts?: Parameters<Ui["confirm"]>[2]): Promise<boolean> {
	return ui.confirm(shownLine(title), shownBlock(message), opts);
}

/** `ctx.ui.input` with its title as a block and a one-line placeholder. */
export function safeInput(ui: Ui, title: string, placeholder?: string, opts?: Parameters<Ui["input"]>[2]): Promise<string | undefined> {
	return ui.input(shownBlock(title), placeholder === undefined ? undefined : shownLine(placeholder), opts);
}

/** `ctx.ui.editor` with a one-line title and a block prefill. */
export function safeEditor(ui: Ui, title: string, prefill?: string): Promise<string | undefined> {
	return ui.editor(shownLine(title), prefill === undefined ? undefined : shownBlock(prefill));
}

/** `ctx.ui.notify` with the message as a block. */
export function safeNotify(ui: Ui, message: string, type?: Parameters<Ui["notify"]>[1]): void {
	ui.notify(shownBlock(message), type);
}

/** `ctx.ui.setStatus` with the text as one line. */
export function safeStatus(ui: Ui, key: string, text: string | undefined): void {
	ui.setStatus(key, text === undefined ? undefined : shownLine(text));
}

/** `ctx.ui.setWidget` with each row as one line. */
export function safeWidget(ui: Ui, key: string, rows: string[] | undefined): void {
	ui.setWidget(key, rows === undefined ? undefined : rows.map(shownLine));
}

/** A copy of `value` with every string in it (at any depth, up to 16 levels) made safe as a block: what a renderer
 * receives instead of the model's arguments and the tool's result, so no piece it draws carries a raw control. */
export function shownDeep<T>(value: T, depth = 0): T {
	if (typeof value === "string") return shownBlock(value) as T;
	if (depth >= 16 || value === null || typeof value !== "object") return value;
	if (Array.isArray(value)) return value.map((v) => shownDeep(v, depth + 1)) as T;
	if (Object.getPrototypeOf(value) !== Object.prototype) return value;
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = shownDeep(v, depth + 1);
	return out as T;
}
