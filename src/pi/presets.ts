/**
 * The preset rows of `/pct config` (docs/config.md §Presets): one row that picks a preset for the draft, and a
 * warning row per overlapping pair of tool families the draft turns on. What a preset writes, and which families
 * overlap, is decided by the addon (src/config/presets.rs); this file only builds the menu rows.
 */
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { EffectiveConfig } from "../../index.js";
import { native } from "./native.ts";
import { safeSelect } from "./render/safe.ts";

/** The answers of the question that follows a preset pick. */
export const EXTRAS_ON = "Yes, turn them on";
export const EXTRAS_KEEP = "No, leave them as they are";

/** A menu row: its label and what choosing it does. */
export type MenuRow = [string, () => Promise<void> | void];

/** The rows to put first in the settings menu. `replace` swaps the draft for the preset's result. */
export function presetRows(ctx: ExtensionCommandContext, effective: EffectiveConfig, draft: Record<string, unknown>, replace: (next: Record<string, unknown>) => void): MenuRow[] {
	const presets = native.configPresets();
	const current = native.configPresetCurrent(effective);
	const label = presets.find((p) => p.key === current)?.label ?? "custom";
	const choose = async (): Promise<void> => {
		// Each preset says what it turns on and what it leaves off (docs/config.md "Presets").
		const options = presets.map((p) => `${p.label} — ${p.summary}. Leaves: ${p.leavesOff}`);
		const picked = await safeSelect(ctx.ui, "Preset (one tool family per capability)", options);
		const preset = presets[options.indexOf(picked ?? "")];
		if (!preset) return;
		// No preset turns the tools that talk to the user or the subagents on unasked: the person decides here.
		const extras = await ctx.ui.select(`${preset.label}: also turn on Interactive Tools (asktool, TodoWrite, new_context) and Task subagents?`, [EXTRAS_ON, EXTRAS_KEEP]);
		if (extras === undefined) return;
		replace(native.configPresetApply(draft, preset.key, extras === EXTRAS_ON));
	};
	const rows: MenuRow[] = [[`Preset: ${label}`, choose]];
	for (const warning of native.configOverlaps(effective)) rows.push([`Warning: ${warning}`, choose]);
	return rows;
}
