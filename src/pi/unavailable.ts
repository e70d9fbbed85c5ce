/**
 * The extension when the native engine cannot be loaded (docs/release.md §Missing binary): Pi keeps running, `/pct`
 * is registered and every subcommand shows the diagnosis (platform triple, what was looked for, the fix), one warning
 * appears at start-up, and no tool is registered — a tool without its engine could only fail.
 */
import { diagnosisText, type NativeDiagnosis } from "./native.ts";

/** The slice of Pi's ExtensionAPI this path uses (present in Pi 0.87 and 1.x). */
interface MinimalPi {
	registerCommand(name: string, options: { description?: string; handler: (args: string, ctx: MinimalCtx) => Promise<void> }): void;
	on(event: "session_start", handler: (event: unknown, ctx: MinimalCtx) => Promise<void>): void;
}

interface MinimalCtx {
	hasUI?: boolean;
	ui?: { notify(message: string, type?: "info" | "warning" | "error"): void };
}

function say(ctx: MinimalCtx, message: string, type: "info" | "warning"): void {
	if (ctx?.hasUI && ctx.ui) ctx.ui.notify(message, type);
	else process.stderr.write(message + "\n");
}

/** Registers `/pct` (diagnosis only) and the one start-up warning. */
export function registerUnavailable(pi: MinimalPi, diagnosis: NativeDiagnosis): void {
	const text = diagnosisText(diagnosis);
	pi.registerCommand("pct", {
		description: "Pi Codex Toolkit (engine not loaded): /pct status shows why and how to fix it",
		handler: async (_args, ctx) => say(ctx, text, "warning"),
	});
	let warned = false;
	pi.on("session_start", async (_event, ctx) => {
		if (warned) return;
		warned = true;
		say(ctx, text, "warning");
	});
}
