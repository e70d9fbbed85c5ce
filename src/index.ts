/**
 * pi-codex-toolkit: the Pi extension entry (default export) and the embedder factory.
 * Embedders import this file (`pi-codex-toolkit/src/index.ts`) and call createPiCodexToolkit({...}).
 */
import type { ExtensionAPI, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { registerPctCommand } from "./pi/commands.ts";
import { renderersFor } from "./pi/render/tools.ts";
import { say } from "./pi/messages.ts";
import { FEATURES } from "./pi/features.ts";
import type { ToolkitOptions } from "./pi/host.ts";
import { nativeLoad } from "./pi/native.ts";
import { afterToolCall, onDemandCatalog, rebuildOnDemand, resetSessionLoads } from "./pi/rules.ts";
import { traced } from "./pi/trace.ts";
import { Toolkit } from "./pi/toolkit.ts";
import { guardWorktree } from "./pi/worktree.ts";
import { registerUnavailable } from "./pi/unavailable.ts";

export type { InvocationCall, InvocationHooks, PolicyDecision, ToolkitOptions } from "./pi/host.ts";

/** Builds the extension factory Pi calls once per load. */
export function createPiCodexToolkit(options: ToolkitOptions = {}) {
	return function piCodexToolkit(pi: ExtensionAPI): void {
		// A missing or wrong binary never stops Pi: /pct explains it, no tool is registered (docs/release.md).
		if (!nativeLoad.ok) return registerUnavailable(pi, nativeLoad.diagnosis);
		const tk = new Toolkit(pi, options);
		// Feature modules declare their tools through a view of `pi` whose registerTool only records them: nothing
		// reaches Pi at load, so no name can collide there. Each sync registers the wanted, free ones (docs/rules.md).
		// Every toolkit tool is drawn by src/pi/render (docs/render.md); a definition's own renderers win. Every call
		// gets a trace id, in its result's details and its audit line (src/pi/trace.ts). In a worktree session every call
		// first checks the worktree folder (WORKTREE_MISSING, docs/worktrees.md).
		const declaringPi = Object.create(pi, {
			registerTool: { value: (def: ToolDefinition) => tk.offer(traced(guardWorktree(tk.agentDir, { ...renderersFor(def.name), ...def }))) },
		});
		const host = Object.create(tk, { pi: { value: declaringPi } });
		for (const register of FEATURES) register(host);
		registerPctCommand(tk, tk.registeredNames);

		tk.reload();
		pi.on("session_start", async (_event, ctx) => {
			const r = tk.reload();
			// Every session start (new, resumed, forked, startup) hides deferred names again; on-demand tools the
			// session's context proves it used come back (docs/rules.md "On-demand host tools").
			resetSessionLoads(tk);
			rebuildOnDemand(tk, ctx);
			tk.sync(ctx);
			// One warning with an interactive UI (TUI or RPC); print and json modes stay quiet.
			if (!r.ok && ctx.hasUI) say(ctx, r.message, "warning");
		});
		pi.on("model_select", async (event, ctx) => tk.sync(ctx, event.model));
		// Each user prompt starts with the on-demand loads its context proves, and the catalog of the rest.
		pi.on("before_agent_start", async (event, ctx) => {
			if (rebuildOnDemand(tk, ctx)) tk.sync(ctx);
			const catalog = onDemandCatalog(tk);
			if (catalog) event.systemPromptOptions.sections = { ...event.systemPromptOptions.sections, on_demand_tools: catalog };
		});
		pi.on("tool_execution_end", async (event) => afterToolCall(tk, event));
		const veto = async () => ((await tk.beforeSwitch()) ? undefined : { cancel: true });
		pi.on("session_before_switch", veto);
		pi.on("session_before_fork", veto);
		pi.on("session_shutdown", async () => tk.shutdown());
	};
}

export default createPiCodexToolkit();
