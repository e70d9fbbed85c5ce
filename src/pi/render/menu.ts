/**
 * A select menu whose cursor starts on a given row (docs/render.md "/pct config"): Pi's `ctx.ui.select` always
 * starts at the top, so a settings menu redrawn after each toggle would send the cursor back up every time. In Pi's
 * interactive TUI this draws pi-tui's SelectList through `ctx.ui.custom` (with a one-line description per row when
 * given); where custom UI is unavailable (RPC clients draw their own dialogs) it falls back to `ctx.ui.select`.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { getSelectListTheme } from "@earendil-works/pi-coding-agent";
import { Container, SelectList, Spacer, Text } from "@earendil-works/pi-tui";
import { safeSelect, shownBlock, shownLine } from "./safe.ts";

/** One row: the label returned when chosen, and an optional one-line explanation. */
export interface MenuItem {
	label: string;
	description?: string;
}

/** Rows shown at once before the list scrolls. */
export const MENU_ROWS = 15;

/** Shows the menu with the cursor on `initial` (clamped); resolves the chosen label, or undefined on Esc. */
export async function choose(ctx: ExtensionContext, title: string, items: MenuItem[], initial = 0): Promise<string | undefined> {
	let drawn = false;
	if (typeof ctx.ui.custom === "function") {
		try {
			const picked = await ctx.ui.custom<string | undefined>((_tui, theme, _keys, done) => {
				drawn = true;
				const box = new Container();
				box.addChild(new Text(theme.fg("accent", theme.bold(shownBlock(title))), 1, 0));
				box.addChild(new Spacer(1));
				const list = new SelectList(
					items.map((i) => ({ value: i.label, label: shownLine(i.label), description: i.description === undefined ? undefined : shownLine(i.description) })),
					Math.min(MENU_ROWS, Math.max(1, items.length)),
					getSelectListTheme(),
				);
				list.setSelectedIndex(Math.max(0, Math.min(items.length - 1, initial)));
				list.onSelect = (item) => done(item.value);
				list.onCancel = () => done(undefined);
				box.addChild(list);
				box.addChild(new Spacer(1));
				box.addChild(new Text(theme.fg("dim", "↑↓ move · enter choose · esc back"), 1, 0));
				return Object.assign(box, {
					handleInput: (data: string) => list.handleInput(data),
				});
			});
			if (drawn) return picked;
		} catch {
			if (drawn) return undefined;
		}
	}
	return safeSelect(ctx.ui, title, items.map((i) => i.label));
}
