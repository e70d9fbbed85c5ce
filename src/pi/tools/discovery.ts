/**
 * `find_tools` (docs/spec/toolkit.md §8): search the managed deferred set and load names for the next model turn.
 * The query ranking, states, limits and load rules live in Rust (src/discovery); this file only registers the
 * tool and hands the call to the core's rules glue (shared as "rules.findTools").
 */
import { Type } from "typebox";
import type { ToolkitHost } from "../host.ts";

export const NOT_ENABLED = "find_tools is not enabled: turn on Tool Discovery with /pct config (and make sure no other extension owns find_tools).";

export function register(host: ToolkitHost): void {
	host.pi.registerTool({
		name: "find_tools",
		label: "Find tools",
		// The model-facing texts are budgeted (docs/rules.md "What the tool list costs").
		description:
			"Load the tools held back from this request (see # On-demand tools): `query` searches names and descriptions (at most 8 results); `load` takes exact names, callable from the next turn. Never runs a tool.",
		parameters: Type.Object({
			query: Type.Optional(Type.String({ description: "Words to search for." })),
			load: Type.Optional(Type.Array(Type.String(), { description: "Exact names to load." })),
		}),
		async execute(_id, params) {
			if (!host.isAdmitted("find_tools")) throw new Error(NOT_ENABLED);
			const find = host.shared.get("rules.findTools") as (p: Record<string, unknown>) => { text: string; details: unknown };
			const { text, details } = find(params);
			return { content: [{ type: "text" as const, text }], details };
		},
	});
}
