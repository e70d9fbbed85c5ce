/**
 * The embedder's invocation hooks (docs/spec/toolkit.md §9), run the same way for direct tools and nested adapters:
 * `context` first (its env overlay is for that one spawn), then `policy`. Callers re-check admission afterwards,
 * because async hooks may outlive the admission that let the call through.
 */
import type { InvocationCall, InvocationHooks } from "./host.ts";

/** Allowed (with the env overlay for this call), or denied with the reason the model sees. */
export type HookOutcome = { ok: true; env?: Record<string, string> } | { ok: false; reason: string };

const DEFAULT_DENIAL = "The invocation policy denied this call.";

/** Runs both hooks for one call; hooks receive a copy of the identity so they cannot change it. */
export async function runInvocationHooks(hooks: InvocationHooks, call: InvocationCall): Promise<HookOutcome> {
	let env: Record<string, string> | undefined;
	if (hooks.context) env = (await hooks.context({ ...call }))?.env;
	if (hooks.policy) {
		const d = await hooks.policy({ ...call });
		if (!d?.allow) return { ok: false, reason: d?.reason ?? DEFAULT_DENIAL };
	}
	return { ok: true, env };
}
