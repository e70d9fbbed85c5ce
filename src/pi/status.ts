/**
 * `/pct status` text (docs/spec/toolkit.md §2). Composed by the rules engine (src/rules/status.rs) from the same snapshot
 * a sync uses, so status can never disagree with the active tools.
 */
import { observe, rulesStatus } from "./rules.ts";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Toolkit } from "./toolkit.ts";

/** The whole status text for the context's model. */
export function statusText(tk: Toolkit, ctx: ExtensionContext, _registered?: Set<string>): string {
	observe(tk, ctx);
	return rulesStatus(tk);
}
