/**
 * The delegate side of Task (docs/agents.md "How a delegate runs"): when this toolkit is loaded inside a delegate's
 * Pi process, the parent's Task tool put one `PCT_DELEGATE` record in its environment. It says who the delegate is
 * and which session it works for, so its calls are decided, audited and reviewed as the parent session's: the same
 * session id (audit file, scratch, review store), the delegate's effective permission mode, the parent's
 * allow-session grants, and cards whose first line names the delegate (the parent relays them to its own UI).
 * The record is read once at load and removed from the environment, so the delegate's own commands never see it.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ReviewTarget } from "../../index.js";

/** The environment variable the parent's Task sets for its delegate. */
export const DELEGATE_ENV = "PCT_DELEGATE";

/** What a delegate knows about itself. */
export interface DelegateInfo {
	/** The definition's name: cards and audit lines carry it. */
	name: string;
	/** The resolved tools; a call of any other tool is refused. */
	tools: string[];
	/** The delegate's effective permission mode. */
	mode: "ask" | "accept-edits" | "auto" | null;
	/** The parent session's id: audit, scratch and review go there. */
	sessionId: string;
	/** The parent session's review target (file changes appear in the parent's /pct review). */
	review?: ReviewTarget;
	/** Tools the parent session allowed for the session before the delegate started. */
	grants: string[];
}

function read(): DelegateInfo | null {
	const raw = process.env[DELEGATE_ENV];
	if (!raw) return null;
	delete process.env[DELEGATE_ENV];
	try {
		const v = JSON.parse(raw) as Partial<DelegateInfo>;
		if (typeof v.name !== "string" || typeof v.sessionId !== "string" || !Array.isArray(v.tools)) return null;
		return {
			name: v.name,
			tools: v.tools.filter((t): t is string => typeof t === "string"),
			mode: v.mode === "ask" || v.mode === "accept-edits" || v.mode === "auto" ? v.mode : null,
			sessionId: v.sessionId,
			review: v.review,
			grants: Array.isArray(v.grants) ? v.grants.filter((t): t is string => typeof t === "string") : [],
		};
	} catch {
		return null;
	}
}

/** This process's delegate record, or null in a session of its own. */
export const DELEGATE: DelegateInfo | null = read();

/** The first line of a delegate's card: names the delegate and the tool, so the parent can relay and remember it. */
export function delegateCardHead(name: string, tool: string): string {
	return `Delegate "${name}" asks (tool ${tool}):`;
}

/** Reads a relayed card's head back: the delegate and the tool, or null for any other dialog. */
export function parseCardHead(title: string): { name: string; tool: string } | null {
	const m = /^Delegate "([^"\n]+)" asks \(tool ([^)\n]+)\):\n/.exec(title);
	return m ? { name: m[1], tool: m[2] } : null;
}

/**
 * The title of the one dialog a delegate opens that no person sees: its question for the session's policy now. The
 * parent's Task answers it at once from its live state (src/pi/agents.ts), outside the card queue; the answer is a
 * {@link LivePolicy} as JSON (docs/agents.md "The live policy").
 */
export const POLICY_QUERY = "pct-delegate-policy";

/** The session's policy as a delegate must apply it now. */
export interface LivePolicy {
	/** The parent session's operation mode. */
	operationMode: "agent" | "plan";
	/** The delegate's effective permission mode (its definition's, or the parent session's with `inherit`). */
	mode: DelegateInfo["mode"];
	/** Every tool the parent session allowed for the session so far. */
	grants: string[];
}

/** Reads a policy answer; null for anything that is not one. */
export function parsePolicy(raw: unknown): LivePolicy | null {
	if (typeof raw !== "string") return null;
	try {
		const v = JSON.parse(raw) as Partial<LivePolicy>;
		if (v.operationMode !== "agent" && v.operationMode !== "plan") return null;
		if (!(v.mode === null || v.mode === "ask" || v.mode === "accept-edits" || v.mode === "auto")) return null;
		if (!Array.isArray(v.grants) || !v.grants.every((g) => typeof g === "string")) return null;
		return { operationMode: v.operationMode, mode: v.mode, grants: v.grants };
	} catch {
		return null;
	}
}

/** What the live policy sets in the delegate's permission state (HostPermissions). */
interface PolicyTarget {
	setOverride(mode?: "ask" | "accept-edits" | "auto" | null): void;
	setOperationMode(stored?: string | null): "agent" | "plan";
	allowSession(tool: string): void;
}

/**
 * In a delegate: asks the parent for the session's policy now and applies it to `permissions` before a call is
 * decided, so a Plan switch, a `/pct permission` change or a session grant made after the delegate started reaches
 * it. Fails closed: without an answer (the parent is gone or refused), the delegate decides as in Plan under `ask`
 * — nothing changes files and nothing runs without a card, which cannot be answered. Outside a delegate, nothing.
 */
export async function syncDelegatePolicy(permissions: PolicyTarget, ctx: ExtensionContext | undefined): Promise<void> {
	if (!DELEGATE) return;
	let policy: LivePolicy | null = null;
	try {
		if (ctx?.hasUI) policy = parsePolicy(await ctx.ui.input(POLICY_QUERY, ""));
	} catch {
		policy = null;
	}
	if (!policy) {
		permissions.setOperationMode("plan");
		permissions.setOverride("ask");
		return;
	}
	permissions.setOperationMode(policy.operationMode);
	permissions.setOverride(policy.mode);
	for (const g of policy.grants) permissions.allowSession(g);
}
