/**
 * The `apply_patch` Pi tool: adapts Pi's tool API to the Rust executor (src/patch). The executor does all the
 * work (parse, preflight, staging, commit, reporting); this file only gates on admission, the permission policy
 * (edit risk, src/pi/permission.ts) and the invocation policy hook, serializes every touched path through Pi's file mutation queue (sorted, so two patches never
 * deadlock and Pi's own edit/write never race us), and forwards Pi's abort signal.
 */
import type { AgentToolResult, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { runInvocationHooks } from "../hooks.ts";
import { reviewTarget } from "../review.ts";
import { auditCall, permissionGate, syncSensitive } from "../permission.ts";
import { hostRuntime, type HostRuntime } from "./host.ts";
import { failed, failedWith, type ToolErrorCode } from "../failure.ts";
import { cardText } from "../render/card.ts";
import { underQueues } from "../file-queue.ts";

export const TOOL_NAME = "apply_patch";
export const NOT_ENABLED = "Apply Patch is not enabled.";

/** Codex-compatible Lark grammar, sent to models that support grammar tools (constrained sampling). */
export const APPLY_PATCH_LARK = `start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
`;

/** The JSON-function description; it contains the literal minimal envelope for models without the grammar. */
export const APPLY_PATCH_DESCRIPTION = `Add, update, delete or move files with one patch in the Codex apply_patch format. A patch that fails changes nothing.

Minimal envelope:
*** Begin Patch
*** Add File: notes/todo.md
+first line
*** End Patch

First line exactly "*** Begin Patch", last exactly "*** End Patch", LF endings. Sections:
- "*** Add File: <path>", then each line of the file prefixed "+".
- "*** Delete File: <path>".
- "*** Update File: <path>", optionally "*** Move to: <new path>", then chunks: "@@" (or "@@ <line above the change>") and lines prefixed " " (context: about 3 around each change, copied exactly), "-" (removed), "+" (added); the old lines must match exactly once. "*** End of File" after a chunk that ends the file.
Paths are relative to the workspace; one section per file.`;

/** TypeBox schema: exactly one required string property (what Pi's grammar transport needs). */
const PARAMETERS = Type.Object({
	patch: Type.String({ description: "The whole patch, '*** Begin Patch' to '*** End Patch'." }),
});

/**
 * With the host Edit active, a failed patch counts against Edit's retry budget for each path it names and a landed
 * one clears their counts (docs/spec/host-tools.md "Retry budget": failed patch commands share the counter), so a
 * model alternating Edit and apply_patch on one file still stops after three counted failures. Never throws.
 */
async function shareRetryBudget(host: ToolkitHost, ctx: ExtensionContext, paths: string[], ok: boolean): Promise<void> {
	const rt = host.shared.get("host.runtime") as HostRuntime | undefined;
	if (!rt || !host.isAdmitted("Edit")) return;
	try {
		// Resolves a failure object rather than rejecting; either way the count is advisory.
		await rt.for(ctx).notePatchResult(rt.turn, paths, ok);
	} catch {
		// The budget is advisory for the next Edit; a failure here must not change the patch's result.
	}
}

export function register(host: ToolkitHost): void {
	host.pi.registerTool({
		name: TOOL_NAME,
		label: "Apply Patch",
		description: APPLY_PATCH_DESCRIPTION,
		promptSnippet: "Add, update, delete or move files with one Codex-style patch (*** Begin Patch ... *** End Patch)",
		parameters: PARAMETERS,
		constrainedSampling: { type: "grammar", variants: { openai_lark: APPLY_PATCH_LARK } },
		async execute(toolCallId: string, params: { patch: string }, signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext): Promise<AgentToolResult<Record<string, unknown>>> {
			if (!host.isAdmitted(TOOL_NAME)) throw new Error(NOT_ENABLED);
			const cwd: string = ctx?.cwd ?? process.cwd();
			if (signal?.aborted) return failed("aborted", "apply_patch failed (no-change): aborted", { outcome: "no-change" }, false, toolCallId);
			// Normalization first (parse + path syntax, no filesystem access): a malformed patch never reaches the hooks.
			const touched = native.patchPaths(cwd, params.patch);
			if (!touched.ok) return failed(touched.code ?? "invalid-patch", touched.error ?? "apply_patch failed (no-change)", { outcome: "no-change" }, false, toolCallId);
			// Invocation hooks (identity only, never the patch text), as for every toolkit tool; a patch spawns
			// nothing, so the context hook's env is not used.
			const call = { tool: TOOL_NAME, path: "direct", cwd } as const;
			if (host.hooks.context || host.hooks.policy) {
				const hooked = await runInvocationHooks(host.hooks, call);
				if (!hooked.ok) return failedWith("policy-denied", `${hooked.reason} Nothing was changed.`, { outcome: "no-change" }, false, toolCallId);
				if (!host.isAdmitted(TOOL_NAME)) throw new Error(NOT_ENABLED);
			}
			// The permission gate (docs/permissions.md): edit risk, decided over every path the patch touches (Move
			// targets included: patchPaths lists them), before anything is written; the card shows the patch.
			const t0 = performance.now();
			const rt = hostRuntime(host);
			try {
				rt.for(ctx);
			} catch {
				// A cwd that is not a directory: the decision and audit still work; the patch reports the cwd itself.
			}
			// The gate is decided inside the file mutation queue, so the calls of one message keep their order on a
			// file even while a card is open (another writer of these files waits for the card). The audit line is written
			// before the queue is released (as Write's and Edit's), so another writer queued on these files starts when it
			// did with a synchronous append.
			// A path under a sensitive path (docs/permissions.md "Sensitive paths") refuses the whole patch in every
			// mode, before any card; the audit line says so.
			syncSensitive(host.config());
			const sensitive = touched.paths.map((p) => native.sensitivePathOf(p, host.agentDir || undefined)).find((s) => s != null);
			if (sensitive) {
				const message = `the patch touches ${sensitive}, a sensitive path (credentials and keys) that the toolkit's tools never write, in any permission mode. Nothing was changed. Do not look for another way to it; tell the user what to change there themselves.`;
				const denied = { ok: false, decision: "denied-sensitive", prompted: false, waitMs: 0, sensitive } as const;
				await auditCall(host, rt, { toolCallId, tool: TOOL_NAME, args: { patch: params.patch }, gate: denied, runMs: 0, totalMs: performance.now() - t0, ok: false, errorCode: "SENSITIVE_PATH" });
				throw new Error(`SENSITIVE_PATH: ${message}`);
			}
			let gate: Awaited<ReturnType<typeof permissionGate>> | undefined;
			const result = await underQueues(touched.paths, async () => {
				const decided = await permissionGate(host, rt, ctx, { tool: TOOL_NAME, risk: "edit", preview: params.patch, title: () => cardText(TOOL_NAME, params, null, cwd), signal });
				gate = decided;
				const audit = (ok: boolean, runMs: number, errorCode?: ToolErrorCode) =>
					auditCall(host, rt, { toolCallId, tool: TOOL_NAME, args: { patch: params.patch }, gate: decided, runMs, totalMs: performance.now() - t0, ok, errorCode });
				if (!decided.ok) {
					await audit(false, 0, decided.code);
					return undefined;
				}
				const r0 = performance.now();
				// The queue may have waited: the live config decides, and an abort meanwhile changes nothing.
				if (!host.isAdmitted(TOOL_NAME)) throw new Error(NOT_ENABLED);
				const abort = new native.PatchAbort();
				const onAbort = () => abort.abort();
				signal?.addEventListener("abort", onAbort, { once: true });
				if (signal?.aborted) abort.abort();
				let applied: Awaited<ReturnType<typeof native.applyPatch>>;
				try {
					// The session's review records each change before it lands (docs/review.md); Rust takes the
					// session's mutation permit first, so Write/Edit/apply_patch of one session never interleave.
					applied = await native.applyPatch(cwd, params.patch, abort, reviewTarget(host.agentDir, ctx));
				} finally {
					signal?.removeEventListener("abort", onAbort);
				}
				await audit(applied.ok, performance.now() - r0, applied.ok ? undefined : (applied.code ?? "TOOL_FAILED"));
				return applied;
			});
			if (result === undefined) {
				const decided = gate!;
				return failedWith(decided.code ?? "TOOL_DENIED", decided.message ?? "", { outcome: "no-change" }, false, toolCallId);
			}
			await shareRetryBudget(host, ctx, touched.paths, result.ok);
			// The engine's code and outcome (no-change, partial, unknown) and the operations that did land are data.
			if (!result.ok) return failed(result.code ?? "commit-failed", result.text, { outcome: result.outcome, operations: result.operations }, false, toolCallId);
			return {
				content: [{ type: "text" as const, text: result.text }],
				details: { operations: result.operations },
			};
		},
	});
}
