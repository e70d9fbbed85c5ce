/**
 * Who registered the tool that a call names (docs/permissions.md "Whose tool is it"): this toolkit, Pi itself, or
 * someone else. A name proves nothing — another extension may register `find`, `bash` or `Write` — so the answer
 * comes from Pi's tool registry (`pi.getAllTools()`): the winner of the name, its schema object and its source.
 *
 * - ours: the winner's parameter schema is the very object this toolkit registered under that name;
 * - Pi's builtin: the winner's `sourceInfo` is Pi's synthetic builtin source for that same name (`source`
 *   `"builtin"` and path `builtin:<name>` on Pi 1.x, `<builtin:<name>>` on Pi 0.87) — a builtin *extension* of
 *   Pi 1.x (its MCP or code-mode extension, path `builtin:mcp`) does not qualify;
 * - foreign: everything else, and whatever cannot be proven (no registry entry, no source info).
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** The source info Pi attaches to a registry entry (both versions; optional where a version may omit it). */
export interface ToolSource {
	path?: string;
	source?: string;
}

/** Whether a registry entry named `name` with this source info is Pi's own builtin tool of that name. */
export function isPiBuiltinSource(name: string, info: ToolSource | undefined): boolean {
	if (!info || info.source !== "builtin" || typeof info.path !== "string") return false;
	return info.path === `builtin:${name}` || info.path === `<builtin:${name}>`;
}

/** The three owners a tool call can have. */
export type ToolOrigin = "ours" | "builtin" | "foreign";

/**
 * The owner of the tool Pi would run for `name` now. `ownSchemas` maps this toolkit's tool names to the schema
 * objects it registered. Never throws: an unreadable registry makes every tool foreign (the gated side).
 */
export function toolOrigin(pi: Pick<ExtensionAPI, "getAllTools">, ownSchemas: ReadonlyMap<string, unknown> | undefined, name: string): ToolOrigin {
	let entry: { name: string; parameters?: unknown; sourceInfo?: ToolSource } | undefined;
	try {
		entry = (pi.getAllTools() as { name: string; parameters?: unknown; sourceInfo?: ToolSource }[]).find((t) => t.name === name);
	} catch {
		return "foreign";
	}
	if (!entry) return "foreign";
	const mine = ownSchemas?.get(name);
	if (mine !== undefined && entry.parameters === mine) return "ours";
	return isPiBuiltinSource(name, entry.sourceInfo) ? "builtin" : "foreign";
}
