/**
 * Computer Use glue (docs/computer.md). macOS only: off macOS (as the rules see it: `computerUsePlatform()`, which
 * the test seam may set) nothing is registered, nothing is spawned, and /pct status says `unsupported-platform`.
 * Checks, approvals state and the `codex app-server --stdio` client are in Rust (src/computer/); this file registers
 * the six tools, asks the user in `confirm` mode, and resets approvals and stops the child at session switch,
 * shutdown and when the feature is turned off.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type, type TSchema } from "typebox";
import type { ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { operationMode } from "../plan.ts";
import { safeConfirm } from "../render/safe.ts";

const APP = Type.String({ description: 'The target app: its name (e.g. "Safari") or bundle id (e.g. "com.apple.Safari") as computer_use_list_apps shows it. Never a path.' });

/** What the glue adds to each tool name the engine lists (`computerUseTools()`, the rules' own list). */
interface ToolSpec {
	label: string;
	description: string;
	parameters: TSchema;
}

export const SPECS: Record<string, ToolSpec> = {
	computer_use_list_apps: { label: "Computer Use: list apps", description: "List the running macOS apps Computer Use can operate (names and bundle ids).", parameters: Type.Object({}, { additionalProperties: false }) },
	computer_use_get_app_state: { label: "Computer Use: app state", description: "Get an app's current window state (accessibility tree and screenshot) before acting on it.", parameters: Type.Object({ app: APP }, { additionalProperties: false }) },
	computer_use_click: { label: "Computer Use: click", description: "Click at window coordinates (x, y >= 0) in an app.", parameters: Type.Object({ app: APP, x: Type.Number({ minimum: 0 }), y: Type.Number({ minimum: 0 }) }, { additionalProperties: false }) },
	computer_use_type_text: { label: "Computer Use: type text", description: "Type text (at most 10,000 characters) into the focused element of an app.", parameters: Type.Object({ app: APP, text: Type.String() }, { additionalProperties: false }) },
	computer_use_press_key: { label: "Computer Use: press key", description: 'Press a key or chord in an app (e.g. "Return", "cmd+c").', parameters: Type.Object({ app: APP, key: Type.String() }, { additionalProperties: false }) },
	computer_use_scroll: { label: "Computer Use: scroll", description: "Scroll an app's window by dx/dy lines.", parameters: Type.Object({ app: APP, dx: Type.Optional(Type.Number()), dy: Type.Optional(Type.Number()) }, { additionalProperties: false }) },
};

export function register(host: ToolkitHost): void {
	if (native.computerUsePlatform() !== "darwin") return;
	let cu = new native.ComputerUse(null);
	const stop = async () => {
		const old = cu;
		cu = new native.ComputerUse(null);
		await old.shutdown();
	};
	for (const name of native.computerUseTools()) {
		const spec = SPECS[name];
		if (!spec) throw new Error(`Computer Use: no definition for the engine's tool ${name}`);
		const tool = { name, ...spec };
		host.pi.registerTool({
			name: tool.name,
			label: tool.label,
			description: tool.description,
			promptSnippet: tool.description,
			parameters: tool.parameters,
			async execute(_id: string, params: Record<string, unknown>, _signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
				if (!host.isAdmitted(tool.name)) throw new Error("Computer Use is not enabled: turn it on with /pct config; /pct status shows why it is unavailable.");
				// Plan refuses desktop control before any card (docs/permissions.md "What Plan hides").
				if (operationMode(host) === "plan") throw new Error("COMPUTER_DISABLED_IN_PLAN: Computer Use is disabled in Plan mode: Plan reads and plans. Submit the plan with SubmitPlan; once it is approved, the session is back in Agent mode.");
				const mode = host.config().computerUse.approvalMode;
				const gate = cu.authorize(tool.name, params ?? {}, mode, !!ctx?.hasUI);
				if (!gate.ok) throw new Error(`${gate.code}: ${gate.message}`);
				if (gate.ask) {
					const yes = await safeConfirm(ctx.ui, "Computer Use", `Allow Computer Use to control ${gate.ask} for the rest of this session?`);
					if (!yes) {
						const d = cu.denied(gate.ask);
						throw new Error(`${d.code}: ${d.message}`);
					}
					cu.approve(gate.ask);
				}
				const r = await cu.call(tool.name, params ?? {});
				if (!r.ok) throw new Error(`${r.code}: ${r.message}`);
				const images = (r.content as Array<{ type?: string; data?: string; mimeType?: string }>)
					.filter((c) => c?.type === "image" && typeof c.data === "string")
					.map((c) => ({ type: "image" as const, data: c.data!, mimeType: c.mimeType ?? "image/png" }));
				return { content: [{ type: "text" as const, text: r.text || "(no text)" }, ...images], details: { structuredContent: r.structuredContent ?? null } };
			},
		});
	}
	// Every session start (startup, Pi's /reload, new, resume, fork) begins with no approvals.
	host.pi.on("session_start", async () => {
		cu.resetApprovals();
	});
	host.lifecycle("computerUse", {
		// A session switch or shutdown forgets every approval and stops the app-server child.
		beforeSwitch: async () => {
			await stop();
			return true;
		},
		shutdown: stop,
		disabled: stop,
	});
}
