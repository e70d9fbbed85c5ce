/**
 * The preset rows of `/pct config` (docs/config.md §Presets): one row that picks a preset for the draft, and a
 * warning row per overlapping pair of tool families the draft turns on. What a preset writes, and which families
 * overlap, is decided by the addon (src/config/presets.rs); this file only builds the menu rows.
 */
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { EffectiveConfig } from "../../index.js";
import { native } from "./native.ts";
import { safeSelect } from "./render/safe.ts";

/** A menu row: its label and what choosing it does. */
export type MenuRow = [string, () => Promise<void> | void];

/** The rows to put first in the settings menu. `replace` swaps the draft for the preset's result. */
export function presetRows(ctx: ExtensionCommandContext, effective: EffectiveConfig, draft: Record<string, unknown>, replace: (next: Record<string, unknown>) => void): MenuRow[] {
	const presets = native.configPresets();
	const current = native.configPresetCurrent(effective);
	const label = presets.find((p) => p.key === current)?.label ?? "custom";
	const choose = async (): Promise<void> => {
		const options = presets.map((p) => `${p.label} — ${p.summary}`);
		const picked = await safeSelect(ctx.ui, "Preset (one tool family per capability)", options);
		const preset = presets[options.indexOf(picked ?? "")];
		if (preset) replace(native.configPresetApply(draft, preset.key));
	};
	const rows: MenuRow[] = [[`Preset: ${label}`, choose]];
	for (const warning of native.configOverlaps(effective)) rows.push([`Warning: ${warning}`, choose]);
	return rows;
}
