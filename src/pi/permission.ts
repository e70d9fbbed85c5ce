/**
 * The one permission gate every toolkit tool goes through (docs/permissions.md): host tools (through the wrapper in
 * src/pi/tools/host.ts), apply_patch, exec_command / write_stdin (direct and nested in a code cell), and other
 * extensions' tools (MCP tools included) through Pi's `tool_call` event. Everything that decides is in Rust
 * (src/host/permission.rs: the risk of a tool, the mode table, Plan's hard denials, the allow-session set); this
 * file only asks Pi: which mode is configured, `ctx.ui.select` for the card, and the audit line.
 *
 * Cards are shown one at a time, through one queue per extension instance: Pi runs the tool calls of one assistant
 * message concurrently, and on Pi 0.87 a second dialog opened while the first is up can leave the first one
 * unanswered forever. A queued call decides again when its turn comes, so "Allow for this session" on the first
 * card lets a second call of the same tool through without a second card.
 */
import type { ToolErrorCode } from "./failure.ts";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { EffectiveConfig, HostPathInfo, HostPermissionDecision } from "../../index.js";
import type { ToolkitHost } from "./host.ts";
import { native } from "./native.ts";
import { DELEGATE, delegateCardHead, syncDelegatePolicy } from "./delegate.ts";
import { currentTraceId } from "./trace.ts";
import { safeSelect, safeStatus, shownBlock, shownLine } from "./render/safe.ts";

/** The card's choices. An external path's card has no session choice: a session grant never covers one. */
export const ALLOW_ONCE = "Allow once";
export const ALLOW_SESSION = "Allow for this session";
export const DENY = "Deny";

/** The mode table's row of a tool (docs/permissions.md "The matrix"). */
export type PermissionRisk = "read" | "edit" | "bash" | "plugin";

/** How a decision ended, as the audit line records it. */
export type AuditDecision = "allow" | "allow-once" | "allow-session" | "deny" | "denied-headless" | "denied-plan" | "denied-sensitive";

type Permissions = InstanceType<typeof native.HostPermissions>;

/** What the gate needs of the session state (HostRuntime in src/pi/tools/host.ts). */
export interface PermissionState {
	permissions: Permissions;
	readonly sessionId: string;
	readonly turn: string;
}

/** One call to decide. */
export interface PermissionAsk {
	tool: string;
	/** The row; omitted = the row of the tool's name (Rust `risk_of`). */
	risk?: PermissionRisk;
	/** The resolved paths the call acts on (every path it writes). Empty or omitted = the workspace itself. */
	paths?: HostPathInfo[];
	/** What will run, shown on the card: a command, a patch, the arguments. Cut to a few lines there. */
	preview?: string;
	/** The card's own text for a host tool (src/pi/render/card.ts: the command, the diff, the path); replaces the
	 * generic head and the preview. A function is called only when a card is shown (a Write's diff is made then). */
	title?: string | (() => Promise<string>);
	/** Who asks when it is not the model directly, e.g. `code cell cell-3`. */
	via?: string;
	signal?: AbortSignal;
	/** The command text a command-risk call runs (a shell command, stdin input): scanned for sensitive paths
	 * (docs/permissions.md "Sensitive paths"); a command naming one always shows a card. */
	command?: string;
	/** Where relative words of `command` resolve (the call's working directory). */
	cwd?: string;
}

/** The code of a refusal by the permission table (TOOL_DENIED or a Plan-mode hard denial). */
export type PermissionCode = NonNullable<HostPermissionDecision["code"]>;

/** The gate's answer. `ok: false` = nothing may run; `code`/`message` are the model-facing failure. */
export interface PermissionOutcome {
	ok: boolean;
	code?: PermissionCode;
	message?: string;
	decision: AuditDecision;
	prompted: boolean;
	waitMs: number;
	/** The first external path's canonical form, when one was approved (Rust resolves it again before running). */
	approvedPath?: string;
	/** The external classification for the audit line. */
	external?: HostPathInfo["external"];
	/** The sensitive path the command names (docs/permissions.md "Sensitive paths"), for the card and the audit. */
	sensitive?: string;
}

/** The configured permission mode: `permissions.mode`, else the older `hostTools.permissionMode` (still read). */
export function configuredMode(config: EffectiveConfig | undefined): "ask" | "accept-edits" | "auto" | undefined {
	return config?.permissions?.mode ?? config?.hostTools?.permissionMode ?? undefined;
}

/** Where the configured mode comes from, for `/pct status`. */
export function modeSource(config: EffectiveConfig | undefined): string {
	if (config?.permissions?.mode) return "permissions.mode";
	return "hostTools.permissionMode (the older key, still read; permissions.mode takes precedence when set)";
}

/** Whether the config declares `tool` plan-safe. */
export function planSafe(config: EffectiveConfig | undefined, tool: string): boolean {
	return (config?.permissions?.planSafeTools ?? []).includes(tool);
}

/** The configured extras last handed to the engine (`permissions.sensitivePaths`, as JSON). */
let sensitiveKey = "[]";

/** Hands `permissions.sensitivePaths` to the engine when it changed: it adds to the compiled-in seed list, which no
 * config can shrink (docs/permissions.md "Sensitive paths"). */
export function syncSensitive(config: EffectiveConfig | undefined): void {
	const list = config?.permissions?.sensitivePaths ?? [];
	const key = JSON.stringify(list);
	if (key === sensitiveKey) return;
	native.sensitiveConfigure(list);
	sensitiveKey = key;
}

/** The footer key of the queue line (docs/permissions.md "Cards"). */
export const CARD_QUEUE_STATUS = "pct-cards";

type Ui = ExtensionContext["ui"];

/** One toolkit instance's cards: whether one is being shown (or decided again), the calls parked behind it in
 * order, the UI the footer line goes to and the count it shows. */
interface CardQueue {
	open: boolean;
	waiting: Array<() => void>;
	ui?: Ui;
	shown: number;
}

const queues = new WeakMap<object, CardQueue>();

/** `1 more call waits for permission`: the footer line while calls are parked behind the open card; none when none
 * are. */
export function cardQueueLine(waiting: number): string | undefined {
	if (waiting <= 0) return undefined;
	return `${waiting} more ${waiting === 1 ? "call waits" : "calls wait"} for permission`;
}

/** Puts the number of parked calls in the footer when it changed. */
function showWaiting(q: CardQueue): void {
	const n = q.waiting.length;
	if (n === q.shown || !q.ui) return;
	q.shown = n;
	try {
		safeStatus(q.ui, CARD_QUEUE_STATUS, cardQueueLine(n));
	} catch {
		// A footer that cannot be set (a UI shutting down) never holds up a card.
	}
}

/** Runs `show` when every earlier card of this instance is closed; the next parked call runs when this one ends.
 * Task relays its delegates' dialogs through the same queue (src/pi/agents.ts). While calls are parked, the footer
 * of `ui` says how many. */
export async function inCardQueue<T>(key: object, show: () => Promise<T>, ui?: Ui): Promise<T> {
	let q = queues.get(key);
	if (!q) queues.set(key, (q = { open: false, waiting: [], shown: 0 }));
	if (ui) q.ui = ui;
	const queue = q;
	if (queue.open) {
		await new Promise<void>((resolve) => {
			queue.waiting.push(resolve);
			showWaiting(queue);
		});
	} else queue.open = true;
	try {
		return await show();
	} finally {
		// The next parked call takes the open slot as it is; with none, the slot is free.
		const next = queue.waiting.shift();
		showWaiting(queue);
		if (next) next();
		else queue.open = false;
	}
}

const MAX_PREVIEW_LINES = 12;
const MAX_PREVIEW_CHARS = 1200;

/** The preview as the card shows it: at most 12 lines and 1200 characters, control characters as visible escapes. */
export function cardPreview(text: string): string {
	// Lone carriage returns are line breaks here; every other control is a visible escape (src/display).
	const clean = shownBlock(text.replace(/\r\n?/g, "\n"));
	let lines = clean.split("\n");
	let cut = false;
	if (lines.length > MAX_PREVIEW_LINES) {
		lines = lines.slice(0, MAX_PREVIEW_LINES);
		cut = true;
	}
	let out = lines.join("\n");
	if (out.length > MAX_PREVIEW_CHARS) {
		out = out.slice(0, MAX_PREVIEW_CHARS);
		cut = true;
	}
	return cut ? `${out}\n[… cut; the call runs the whole text]` : out;
}

/** The card's title: who wants to do what where, the outside-workspace flag, and what will run. */
export function cardTitle(ask: PermissionAsk & { sensitiveShown?: string }, d: HostPermissionDecision): string {
	const paths = ask.paths ?? [];
	// Every piece the model or a file supplies is one line on the card (docs/permissions.md "What reaches the
	// terminal"); the card as a whole is escaped again as a block when it is shown.
	const where = paths.length
		? paths.map((p) => shownLine(p.root === "external" ? `${p.canonical} (outside the workspace: ${p.external})` : p.path)).join(", ")
		: "the workspace";
	const tool = shownLine(ask.tool);
	const verb = d.risk === "read" ? "read" : d.risk === "edit" ? "change" : d.risk === "bash" ? "run a command in" : "run in";
	const own = typeof ask.title === "string" ? ask.title : undefined;
	const head = d.cardReason ? `${d.cardReason}: allow ${tool}?${own ? `\n${own}` : ""}` : (own ?? `Allow ${tool} to ${verb} ${where}?`);
	const via = ask.via ? `\n(asked by ${shownLine(ask.via)})` : "";
	const plan = d.opMode === "plan" && d.mode === "auto" && d.risk === "bash" ? "\nPlan mode with auto: this command may still change files." : "";
	const sensitive = ask.sensitiveShown ? `\nThis command names ${shownLine(ask.sensitiveShown)}, a sensitive path (credentials and keys): it always asks.` : "";
	const preview = ask.preview && !own ? `\n${cardPreview(ask.preview)}` : "";
	// Who asks and the Plan note follow the question's first line, above what will run.
	const nl = head.indexOf("\n");
	return nl < 0 ? `${head}${via}${plan}${sensitive}${preview}` : `${head.slice(0, nl)}${via}${plan}${head.slice(nl)}${sensitive}${preview}`;
}

/** Shows the card; resolves the choice (undefined when dismissed or aborted). No timeout (docs/permissions.md). */
async function askUser(ctx: ExtensionContext, title: string, onceOnly: boolean, signal?: AbortSignal): Promise<string | undefined> {
	if (signal?.aborted) return undefined;
	const options = onceOnly ? [ALLOW_ONCE, DENY] : [ALLOW_ONCE, ALLOW_SESSION, DENY];
	try {
		return await safeSelect(ctx.ui, title, options, signal ? { signal } : undefined);
	} catch {
		return undefined;
	}
}

const now = () => performance.now();

/**
 * Decides one call and, when the table says so, shows the card (one at a time). Never throws: a failure of the
 * decision itself denies (fail closed).
 */
export async function permissionGate(host: ToolkitHost, state: PermissionState, ctx: ExtensionContext | undefined, ask: PermissionAsk): Promise<PermissionOutcome> {
	const paths = ask.paths ?? [];
	const ext = paths.find((p) => p.root === "external");
	let sensitive: string | undefined;
	try {
		syncSensitive(host.config());
		if (ask.command !== undefined) sensitive = native.sensitiveInCommand(ask.command, ask.cwd ?? process.cwd(), host.agentDir || undefined) ?? undefined;
	} catch {
		// The scan failed: the command is treated as naming one (a card, never a silent allow).
		if (ask.command !== undefined) sensitive = "a path the toolkit could not check";
	}
	const base = { prompted: false, waitMs: 0, external: ext?.external, approvedPath: ext?.canonical, sensitive };
	const decide = (): HostPermissionDecision => {
		const config = host.config();
		return state.permissions.decide(
			{
				tool: ask.tool,
				risk: ask.risk,
				external: !!ext,
				scratch: paths.length > 0 && paths.every((p) => p.root === "scratch"),
				hasUi: !!ctx?.hasUI,
				planSafe: planSafe(config, ask.tool),
				sensitive,
			},
			configuredMode(config),
		);
	};
	// A delegate decides under the session's policy now, not the copy it started with (docs/agents.md).
	await syncDelegatePolicy(state.permissions, ctx);
	let d: HostPermissionDecision;
	try {
		d = decide();
	} catch (e) {
		return { ...base, ok: false, decision: "deny", code: "TOOL_DENIED", message: `The permission decision failed (${e instanceof Error ? e.message : String(e)}); nothing ran.` };
	}
	const settled = (dd: HostPermissionDecision): PermissionOutcome | null => {
		if (dd.action === "allow") return { ...base, ok: true, decision: dd.reason === "allow-session" ? "allow-session" : "allow" };
		if (dd.action === "deny") {
			const decision = dd.code === "TOOL_DENIED" ? "denied-headless" : dd.code === "SENSITIVE_PATH" ? "denied-sensitive" : "denied-plan";
			return { ...base, ok: false, decision, code: dd.code ?? "TOOL_DENIED", message: dd.message ?? dd.deniedMessage };
		}
		return null;
	};
	const first = settled(d);
	if (first) return first;
	const w0 = now();
	return inCardQueue(host, async () => {
		// The earlier card may have changed the answer (allow-session, a mode switch): decide again.
		await syncDelegatePolicy(state.permissions, ctx);
		const again = decide();
		const late = settled(again);
		if (late) return { ...late, waitMs: now() - w0 };
		// The host tool's own text is made only now that a card is shown (a Write's diff, off the main thread).
		const own = typeof ask.title === "function" ? await ask.title().catch(() => undefined) : ask.title;
		const shown = { ...ask, title: own, sensitiveShown: sensitive };
		// A delegate's card names it first (docs/agents.md "Cards"): the parent relays it to its own UI.
		const title = DELEGATE ? `${delegateCardHead(DELEGATE.name, ask.tool)}\n${cardTitle(shown, again)}` : cardTitle(shown, again);
		// A session grant covers neither an external path nor a command naming a sensitive path.
		const onceOnly = !!ext || sensitive !== undefined;
		const choice = await askUser(ctx as ExtensionContext, title, onceOnly, ask.signal);
		const waitMs = now() - w0;
		if (choice === ALLOW_SESSION && !onceOnly) {
			state.permissions.allowSession(ask.tool);
			return { ...base, ok: true, decision: "allow-session", prompted: true, waitMs };
		}
		if (choice === ALLOW_ONCE) return { ...base, ok: true, decision: "allow-once", prompted: true, waitMs };
		return { ...base, ok: false, decision: "deny", prompted: true, waitMs, code: "TOOL_DENIED", message: again.deniedMessage };
	}, ctx?.hasUI ? ctx.ui : undefined);
}

/**
 * The last audit line started: each call's promise settles after the one before it, so the calls that await their
 * line resume in the order they were audited, as they did when the append was synchronous (parallel calls of one
 * message end in the order they finished).
 */
let lastAudit: Promise<void> = Promise.resolve();

/**
 * One audit line for a decided call (the same fields for every tool, docs/host.md "Audit"). The line takes its place
 * in the session's log when this is called (the engine keeps that order) and is written off the main thread; the
 * promise settles once it is on disk (or the failure was reported on stderr) and every earlier line's has. Never
 * rejects.
 */
export function auditCall(
	host: ToolkitHost,
	state: PermissionState,
	line: {
		toolCallId: string;
		tool: string;
		args: Record<string, unknown>;
		gate: Pick<PermissionOutcome, "decision" | "prompted" | "waitMs" | "external" | "sensitive">;
		runMs: number;
		totalMs: number;
		ok: boolean;
		errorCode?: ToolErrorCode;
		turn?: string;
	},
): Promise<void> {
	// No agent dir (a unit test's stand-in host): there is no audit folder to write to.
	if (!host.agentDir) return Promise.resolve();
	const report = (e: unknown) => {
		process.stderr.write(`pi-codex-toolkit: audit failed: ${e instanceof Error ? e.message : String(e)}\n`);
	};
	let appended: Promise<void>;
	try {
		appended = native.hostAuditAppend(host.agentDir, {
			sessionId: state.sessionId,
			turn: line.turn ?? state.turn,
			toolCallId: line.toolCallId,
			traceId: currentTraceId(),
			tool: line.tool,
			args: line.args,
			external: line.gate.external,
			decision: line.gate.decision,
			prompted: line.gate.prompted,
			permissionWaitMs: line.gate.waitMs,
			durationMs: line.runMs,
			overheadMs: Math.max(0, line.totalMs - line.runMs - line.gate.waitMs),
			totalMs: line.totalMs,
			ok: line.ok,
			errorCode: line.ok ? undefined : line.errorCode,
			agent: DELEGATE?.name,
			sensitive: line.gate.sensitive,
		}).then((r) => {
			if (!r.ok) process.stderr.write(`pi-codex-toolkit: ${r.code}: ${r.message}\n`);
		}, report);
	} catch (e) {
		report(e);
		return lastAudit;
	}
	const written = lastAudit.then(() => appended);
	lastAudit = written;
	return written;
}

/** Resolves once every audit line started so far is written: the session's shutdown waits for it before Pi exits. */
export async function auditSettled(): Promise<void> {
	let last: Promise<void>;
	do {
		last = lastAudit;
		await last;
	} while (last !== lastAudit);
}
