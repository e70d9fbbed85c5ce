import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { RulesConfigError } from "../../index.js";
import { safeNotify } from "./render/safe.ts";

/** The exact user-facing strings of the toolkit core (docs/spec/toolkit.md §1–§2), in one place so tests can import them. */

export const USAGE =
	"Usage: /pct [config|status|reload|jobs [stop <id>|stop all]|review [show <n>|rollback <n>|rollback all]|permission [ask|accept-edits|auto|default]|mode [plan|agent]|agents]";
export const RELOADED = "Pi Codex Toolkit configuration reloaded.";
export const SAVED = "Pi Codex Toolkit configuration saved.";

/** `<code> (<detail>)`, or just the code when there is no detail. */
export function describeConfigError(code: RulesConfigError["code"], detail?: string): string {
	return detail ? `${code} (${detail})` : code;
}

/** The reload/start-up message for a failed read. */
export function configErrorMessage(code: RulesConfigError["code"], detail: string | undefined, hasLastKnownGood: boolean): string {
	const ending = hasLastKnownGood ? "using last known good settings." : "using all-off defaults.";
	return `Pi Codex Toolkit config error: ${describeConfigError(code, detail)}; ${ending}`;
}

/** The message of a caught value (an Error's message, anything else as text), for error strings shown to the model. */
export function errorText(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}

/** notify with a UI, else stderr. */
export function say(ctx: ExtensionContext, message: string, type: "info" | "warning" | "error" = "info"): void {
	if (ctx?.hasUI) safeNotify(ctx.ui, message, type);
	else process.stderr.write(message + "\n");
}
