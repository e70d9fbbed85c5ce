/**
 * Host tools glue (docs/spec/host-tools.md, docs/host.md): the generic permissioned, audited wrapper every host
 * tool goes through (`hostTool`), the per-Pi-session runtime (one `HostSession` + one `HostPermissions`), and the
 * Read / Glob / Grep / Write / Edit tools. Everything that decides is in Rust: argument folding and the tools themselves
 * (src/host), path classification (`resolvePath`), the permission table (src/host/permission.rs) and the audit
 * line with its redaction (src/host/audit.rs). This file only adapts Pi: schemas, `ctx.ui.select` for the card,
 * the abort signal, the session lifecycle, and which turn a call belongs to.
 *
 * Plugging in another host tool (Write, Edit, Bash, TaskList, ...):
 *
 * ```ts
 * import { hostTool } from "./host.ts";
 * hostTool(host, {
 *   name: "Bash", label: "Bash", description: "...", parameters: BashSchema,
 *   risk: "bash",                           // "read" | "edit" | "bash": the mode table's row
 *   target: (p) => p.workdir,               // optional: the path shown on the card and checked for escapes
 *   run: async ({ session, params, approvedPath, signal, turn, runtime }) =>
 *     session.bash(params, { approvedPath }),  // resolve {ok:true, text, ...} | {ok:false, code, message}
 * });
 * ```
 *
 * The wrapper: gate on admission (the rules engine's projection) → resolve `target` with `session.resolvePath`
 * (a failure there is the call's result) → permission decision → card (allow once / allow for this session /
 * deny; no timeout, dismissed only by the abort signal) or TOOL_DENIED without a UI → `run` with `approvedPath`
 * set to the canonical path of an approved external target (Rust resolves it again right before running) → one
 * audit line → the result text (ok) or the failure as data (src/pi/failure.ts: on Pi 1.x an error result with
 * `details.errorCode` and the failure's fields, on Pi 0.87 a thrown `CODE: message`); a failure with
 * `budgetExhausted: true` is returned as an error result with Pi's `terminate` on both, which ends the turn.
 * A tool with `precheck` is checked before the permission decision (docs/host.md "Before the card"): a call that
 * cannot succeed fails without a card. `details` of an ok result are every field but `ok`/`text`. Scratch writes
 * (risk "edit", target in the scratch root) never ask.
 */
import type { AgentToolUpdateCallback, ExtensionContext, TurnEndEvent } from "@earendil-works/pi-coding-agent";
import type { TSchema } from "typebox";
import { Type } from "typebox";
import type { HostEditFailure, HostFailure, HostPathInfo, HostPrecheckOk } from "../../../index.js";
import { failedWith } from "../failure.ts";
import { underQueues } from "../file-queue.ts";
import type { ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { auditCall, auditSettled, permissionGate, syncSensitive, type PermissionCode, type PermissionOutcome } from "../permission.ts";
import { reviewTarget } from "../review.ts";
import { sessionIds } from "../sessions.ts";
import { cardText } from "../render/card.ts";
import { clockEnd, clockStart, clockWaiting } from "../render/format.ts";
import { DELEGATE } from "../delegate.ts";

/** The gate message when the host tools are not admitted. */
export const HOST_NOT_ENABLED =
	"Host Tools are not enabled. Turn on hostTools.enabled with /pct config, then retry; until then use the tools that are active.";
/** A card answered after its Pi session was replaced (switch, fork, new session): the call never runs. */
export const SESSION_REPLACED =
	"The Pi session this call belonged to ended or was replaced while the permission card was open; nothing ran.";
/** The card's choices (src/pi/permission.ts). */
export { ALLOW_ONCE, ALLOW_SESSION, DENY } from "../permission.ts";

/** The mode table's row of a tool (docs/permissions.md "The matrix"). */
export type HostRisk = "read" | "edit" | "bash";

/** A host call's outcome as the Rust methods resolve it. */
export type HostOutcome = { ok: true; text: string } | HostFailure | HostEditFailure | HostDenied;

/** A call the permission gate refused before it ran (its code is the permission table's, never the engine's). */
export interface HostDenied {
	ok: false;
	code: PermissionCode;
	message: string;
	suggestion?: undefined;
}

type Session = InstanceType<typeof native.HostSession>;
type Permissions = InstanceType<typeof native.HostPermissions>;

/** What `run` receives. */
export interface HostCall<P> {
	params: P;
	session: Session;
	/** The canonical path the user (or mode `auto`) approved for an external target; undefined otherwise. */
	approvedPath?: string;
	signal?: AbortSignal;
	ctx: ExtensionContext;
	/** Changes with every user prompt (Edit's retry budget is per prompt). */
	turn: string;
	toolCallId: string;
	runtime: HostRuntime;
	/** Pi's partial-result callback (Bash streams its live output through it). */
	onUpdate?: AgentToolUpdateCallback<unknown>;
}

/** One host tool. */
export interface HostToolSpec<S extends TSchema> {
	name: string;
	label: string;
	description: string;
	promptSnippet?: string;
	parameters: S;
	risk: HostRisk;
	/** The raw path the call acts on (checked for escapes, shown on the card); undefined = the workspace root. */
	target?(params: Record<string, unknown>): string | undefined;
	/** Every raw path the call writes, when more than one (Edit: the file and its MV destination); wins over target. */
	targets?(params: Record<string, unknown>): string[];
	/** What will run, for the card (Bash: the command). */
	preview?(params: Record<string, unknown>): string | undefined;
	/** The command text the call runs, scanned for sensitive paths (docs/permissions.md "Sensitive paths"). */
	command?(params: Record<string, unknown>): string | undefined;
	/** The engine's checks before the card (docs/host.md "Before the card"): a failure here is the call's result and no
	 * permission is asked. */
	precheck?(call: { session: Session; params: Record<string, unknown>; turn: string }): Promise<HostPrecheckOk | HostFailure | HostEditFailure>;
	run(call: HostCall<Record<string, unknown>>): Promise<HostOutcome>;
}

/**
 * The state of the current Pi session: its HostSession (workspace = ctx.cwd at session start), its permission
 * state (override and allow-session set, memory only) and the prompt counter. Replaced on every session_start
 * (new, resume, fork, switch) and dropped on shutdown, like the shell sessions.
 */
export class HostRuntime {
	session: Session | null = null;
	permissions: Permissions = new native.HostPermissions();
	sessionId = "";
	private prompt = 0;
	/** An exhausted retry budget asked to end the turn after the current tool batch (see `register`). */
	stopAfterBatch = false;
	/** Set by `register`: called when a stop is requested (it subscribes the turn_end handler that carries it out). */
	onStopRequested: (() => void) | null = null;
	readonly agentDir: string;
	constructor(agentDir: string) {
		this.agentDir = agentDir;
	}

	/** Binds a fresh session to `ctx` (cwd, session id). */
	start(ctx: ExtensionContext): void {
		// The session being replaced (switch, fork, new) stops its background Bash tasks without waiting.
		this.session?.closeTasks();
		this.sessionId = sessionIdOf(ctx);
		this.session = new native.HostSession(ctx.cwd, this.agentDir, this.sessionId);
		this.permissions = new native.HostPermissions();
		this.prompt = 0;
	}

	/** The session for a call; bound lazily when a call arrives before session_start ran (SDK embedders). */
	for(ctx: ExtensionContext): Session {
		if (!this.session || this.sessionId !== sessionIdOf(ctx)) this.start(ctx);
		return this.session!;
	}

	nextPrompt(): void {
		this.prompt++;
	}

	/** Ends the run after the current tool batch (an exhausted retry budget, docs/host.md "Retry budget"). */
	requestStopAfterBatch(): void {
		this.stopAfterBatch = true;
		this.onStopRequested?.();
	}

	get turn(): string {
		return `${this.sessionId}:${this.prompt}`;
	}

	close(): void {
		this.session?.closeTasks();
		this.session = null;
		this.permissions = new native.HostPermissions();
	}
}

function sessionIdOf(ctx: ExtensionContext): string {
	// A Task delegate works for its parent's session: same audit file, scratch and review (docs/agents.md).
	if (DELEGATE) return DELEGATE.sessionId;
	try {
		const id = ctx.sessionManager?.getSessionId?.();
		// The engine's one session-id rule (src/session_id.rs), so the glue never keeps an id Rust would refuse.
		if (typeof id === "string" && native.sessionIdValid(id)) return id;
	} catch {
		// fall through: an in-memory session without an id
	}
	return `pid-${process.pid}`;
}

/** The runtime shared by every host tool of this factory (`host.shared["host.runtime"]`). */
export function hostRuntime(host: ToolkitHost): HostRuntime {
	let rt = host.shared.get("host.runtime") as HostRuntime | undefined;
	if (!rt) {
		rt = new HostRuntime(host.agentDir);
		host.shared.set("host.runtime", rt);
		// Every audit line started this session is on disk before Pi exits (the appends run off the main thread).
		host.lifecycle("audit", { shutdown: auditSettled });
	}
	return rt;
}

/** The path argument as Rust folds it (`path` wins over `file_path`), for the card only. */
export function pathArg(params: Record<string, unknown>): string | undefined {
	if (typeof params.path === "string") return params.path;
	if (typeof params.file_path === "string") return params.file_path;
	return undefined;
}

const now = () => performance.now();


/** Registers one host tool through the wrapper (see the file header). */
export function hostTool<S extends TSchema>(host: ToolkitHost, spec: HostToolSpec<S>): void {
	const rt = hostRuntime(host);
	host.pi.registerTool({
		name: spec.name,
		label: spec.label,
		description: spec.description,
		promptSnippet: spec.promptSnippet,
		parameters: spec.parameters,
		async execute(toolCallId: string, rawParams: unknown, signal: AbortSignal | undefined, onUpdate: AgentToolUpdateCallback<unknown> | undefined, ctx: ExtensionContext) {
			const t0 = now();
			// The row's timer counts the work from its approval, not the time the card waited (docs/render.md).
			clockWaiting(toolCallId);
			if (!host.isAdmitted(spec.name)) throw new Error(HOST_NOT_ENABLED);
			const params = (rawParams ?? {}) as Record<string, unknown>;
			let session: Session;
			try {
				session = rt.for(ctx);
			} catch (e) {
				const code = (e as { code?: string }).code ?? "TOOL_FAILED";
				throw new Error(`${code}: ${e instanceof Error ? e.message : String(e)}`);
			}
			const turn = rt.turn;
			let gate: PermissionOutcome = { ok: true, decision: "allow", prompted: false, waitMs: 0 };
			let runMs = 0;
			// Every path the call acts on (for Edit also its MV destination) is resolved and decided together, before
			// anything runs (docs/permissions.md "Every path a call writes").
			const paths: HostPathInfo[] = [];
			let refused: HostOutcome | undefined;
			try {
				// The configured sensitive paths are in force before any path resolves (docs/permissions.md).
				syncSensitive(host.config());
				const raws = spec.targets ? spec.targets(params) : [spec.target?.(params)].filter((r): r is string => r !== undefined);
				for (const raw of raws) {
					const r = session.resolvePath(raw);
					if (!r.ok) {
						refused = r;
						break;
					}
					paths.push(r);
				}
			} catch (e) {
				refused = { ok: false, code: "TOOL_FAILED", message: e instanceof Error ? e.message : String(e) };
			}
			// A sensitive path is refused in every mode, before any card; the audit line says so.
			if (refused && !refused.ok && refused.code === "SENSITIVE_PATH") gate = { ...gate, ok: false, decision: "denied-sensitive" };
			const decideAndRun = async (): Promise<HostOutcome> => {
				// A call that cannot succeed fails here, before the card: no decision is spent on it. Inside the file mutation
				// queue (Write, Edit), so it sees the file as the calls queued before it left it.
				if (spec.precheck) {
					const checked = await spec.precheck({ session, params, turn });
					if (!checked.ok) return checked;
				}
				gate = await permissionGate(host, rt, ctx, { tool: spec.name, risk: spec.risk, paths, signal, preview: spec.preview?.(params), command: spec.command?.(params), cwd: ctx.cwd, title: () => cardText(spec.name, params, paths[0] ?? null, ctx.cwd) });
				if (!gate.ok) return { ok: false, code: gate.code ?? "TOOL_DENIED", message: gate.message ?? "" };
				if (gate.prompted || spec.risk === "edit") {
					// The card or the queue may have waited long: the live config decides, and an abort meanwhile runs
					// nothing.
					if (!host.isAdmitted(spec.name)) return { ok: false, code: "TOOL_DENIED", message: HOST_NOT_ENABLED };
					if (rt.session !== session) return { ok: false, code: "TOOL_FAILED", message: SESSION_REPLACED };
				}
				if (signal?.aborted) return { ok: false, code: "TOOL_FAILED", message: "The call was cancelled before it started; nothing ran." };
				const approvedPath = paths[0]?.root === "external" ? paths[0].canonical : undefined;
				const r0 = now();
				clockStart(toolCallId);
				try {
					return await spec.run({ params, session, approvedPath, signal, ctx, turn, toolCallId, runtime: rt, onUpdate });
				} finally {
					runMs = now() - r0;
					clockEnd(toolCallId);
				}
			};
			// The outcome and its audit line: the line is written before the result returns (and, for Write and Edit,
			// before the file mutation queue is released, so another writer queued on the file starts exactly when it did
			// with a synchronous append).
			const settle = async (): Promise<HostOutcome> => {
				let outcome: HostOutcome;
				try {
					outcome = refused ?? (await decideAndRun());
				} catch (e) {
					outcome = { ok: false, code: "TOOL_FAILED", message: e instanceof Error ? e.message : String(e) };
				}
				await auditCall(host, rt, {
					toolCallId,
					tool: spec.name,
					args: params,
					gate,
					runMs,
					totalMs: now() - t0,
					ok: outcome.ok,
					errorCode: outcome.ok ? undefined : outcome.code,
					turn,
				});
				return outcome;
			};
			// Write and Edit join Pi's file mutation queue for every path they write, in the tick their paths resolved, and
			// decide their permission inside it (as apply_patch does): the calls of one message keep their order on a file
			// even while a card is open, and another extension's write to the same file is ordered with them.
			const outcome = refused === undefined && spec.risk === "edit" ? await underQueues(paths.map((p) => p.canonical), settle) : await settle();
			if (!outcome.ok) {
				// Failures are data (src/pi/failure.ts): the code and every structured field of the engine's failure (Bash's
				// exit code and streams, Read's Glob suggestion, Edit's live tag) go to `details`; the model reads the text.
				const { ok: _ok, code, message, text: _text, ...fields } = outcome as HostOutcome & { ok: false } & Record<string, unknown>;
				// A failure that ends the prompt's attempts (Edit's retry budget, docs/host.md "Retry budget"): returned on
				// both Pi versions with Pi's `terminate` (the agent stops after this tool batch).
				const exhausted = fields.budgetExhausted === true;
				if (exhausted) rt.requestStopAfterBatch();
				return failedWith(code, message, fields, exhausted, toolCallId);
			}
			const { ok: _ok, text, ...details } = outcome as { ok: true; text: string } & Record<string, unknown>;
			return { content: [{ type: "text" as const, text }], details };
		},
	});
}

// The model-facing texts are budgeted (docs/rules.md "What the tool list costs"): the schemas show one spelling of
// each field; the aliases `file_path` (Read/Write/Edit) and `query` (Glob/Grep) are still accepted, because Pi
// passes fields the schema does not list through to execute and Rust folds them (docs/spec/host-tools.md).
const pathField = (what: string) => Type.Optional(Type.String({ description: what }));

/** Read `{path | file_path, offset?, limit?}` (Pi's read names). */
export const readSchema = Type.Object({
	path: pathField("Workspace-relative or absolute."),
	offset: Type.Optional(Type.Number({ description: "First line, 1-based." })),
	limit: Type.Optional(Type.Number({ description: "Lines to show (default 2000)." })),
});

/** Glob `{pattern | query, path?, limit?}`. */
export const globSchema = Type.Object({
	pattern: Type.Optional(Type.String({ description: "Glob, e.g. `*.rs` (any depth) or `src/**/*.ts`." })),
	path: pathField("Directory to search (default: the workspace)."),
	limit: Type.Optional(Type.Number({ description: "Most files (default 1000)." })),
});

/** Grep: Pi's grep parameters plus `outputMode`. */
export const grepSchema = Type.Object({
	pattern: Type.Optional(Type.String({ description: "Regex (Rust syntax)." })),
	path: pathField("File or directory (default: the workspace)."),
	glob: Type.Optional(Type.String({ description: "Only files matching this glob." })),
	ignoreCase: Type.Optional(Type.Boolean()),
	literal: Type.Optional(Type.Boolean({ description: "Pattern is plain text." })),
	context: Type.Optional(Type.Number({ description: "Context lines, 0..100." })),
	limit: Type.Optional(Type.Number({ description: "Most matches (or files)." })),
	outputMode: Type.Optional(Type.String({ description: "content (default), filesWithMatches or count." })),
	total: Type.Optional(Type.Boolean({ description: "Count all matches past limit (searches every file)." })),
});

/** Write `{path | file_path, content}`. */
export const writeSchema = Type.Object({
	path: pathField("Workspace-relative or absolute."),
	content: Type.String({ description: "The whole new content." }),
});

/** Edit `{path | file_path, tag, ops}`. */
export const editSchema = Type.Object({
	path: pathField("An existing file."),
	tag: Type.Optional(Type.String({ description: "TAG of the [path#TAG] the numbers come from." })),
	ops: Type.String({ description: "The ops." }),
});

/** Edit's description: the operation language in brief (docs/host.md "The operation language"). */
export const EDIT_DESCRIPTION = `Change an existing file by the line numbers under its [path#TAG] (never guess); they refer to that tagged version. Ranges are inclusive; ops must not overlap or share an anchor.
Ops, one per line:
PUT N.=M: +rows  replace lines N..M (no rows deletes)
PUT <N: | PUT >N: | PUT >$: +rows  insert before N | after N | at the end
CUT N.=M [@name]  delete lines into a register
PUT <N @name | PUT >N @name | PUT N.=M @name  paste it (@ = this call's CUT)
REM  delete the file; MV DEST  move it after the other ops
Rows: "+text" is one line ("+" alone is empty; "++x"/"+-x" for a leading + or -). No "-old" or context rows.
Example:
PUT 12.=13:
+    return total;
A changed file: ops carry over when safe, else EDIT_TAG_MISMATCH shows the current lines. Unseen lines are shown once (EDIT_LINES_UNSEEN: send the same Edit again). Three failed Edits of a file per prompt end the turn.`;

/** Glob's and Grep's time budget (TOOL_TIMEOUT after it). */
export const SEARCH_TIMEOUT_MS = 60_000;
/** Read's time budget: a streamed large file stops with TOOL_TIMEOUT after it (docs/host.md "Large files"). */
export const READ_TIMEOUT_MS = 60_000;
/** Write's and Edit's time budget: TOOL_TIMEOUT after it, never a hung turn on a stalled disk (docs/host.md "Timeouts"). */
export const WRITE_TIMEOUT_MS = 60_000;

export function register(host: ToolkitHost): void {
	const rt = hostRuntime(host);

	hostTool(host, {
		name: "Read",
		label: "Read",
		description: "Read a text file: `[path#TAG]` (this version's TAG, for Edit), then `N:text` rows with 1-based line numbers.",
		promptSnippet: "Read a file as [path#TAG] + N:text rows",
		parameters: readSchema,
		risk: "read",
		target: pathArg,
		precheck: ({ session, params }) => session.precheck("Read", params),
		run: ({ session, params, approvedPath }) => session.read(params, { approvedPath, timeoutMs: READ_TIMEOUT_MS }),
	});

	hostTool(host, {
		name: "Glob",
		label: "Glob",
		description: "List files matching a glob under a directory, sorted; .gitignore honoured, `.git` skipped. `*.ts` matches at any depth, `src/**/*.ts` from path.",
		promptSnippet: "List files by glob pattern",
		parameters: globSchema,
		risk: "read",
		target: (p) => (typeof p.path === "string" ? p.path : "."),
		run: ({ session, params, approvedPath }) => session.glob(params, { approvedPath, timeoutMs: SEARCH_TIMEOUT_MS }),
	});

	hostTool(host, {
		name: "Grep",
		label: "Grep",
		description:
			"Search file contents by regex (ripgrep's engine; .gitignore honoured, binary files skipped). Content mode shows " +
			"`[path#TAG]` per file and matched `N:text` rows (context `N-text`); those lines count as read for Edit.",
		promptSnippet: "Search file contents by regex",
		parameters: grepSchema,
		risk: "read",
		target: (p) => (typeof p.path === "string" ? p.path : "."),
		run: ({ session, params, approvedPath }) => session.grep(params, { approvedPath, timeoutMs: SEARCH_TIMEOUT_MS }),
	});

	hostTool(host, {
		name: "Write",
		label: "Write",
		description: "Create or overwrite a file. Pasted `[path#TAG]` headers and `N:` prefixes are stripped. Returns the new `[path#TAG]`: Edit can follow at once.",
		promptSnippet: "Create or overwrite a file",
		parameters: writeSchema,
		risk: "edit",
		target: pathArg,
		precheck: ({ session, params }) => session.precheck("Write", params),
		run: ({ session, params, approvedPath, ctx }) => session.write(params, { approvedPath, review: reviewTarget(host.agentDir, ctx), timeoutMs: WRITE_TIMEOUT_MS }),
	});

	hostTool(host, {
		name: "Edit",
		label: "Edit",
		description: EDIT_DESCRIPTION,
		promptSnippet: "Change lines of a file by the numbers shown under its [path#TAG]",
		parameters: editSchema,
		risk: "edit",
		target: pathArg,
		targets: (p) => {
			const t = native.hostEditTargets(p);
			const path = pathArg(p);
			return t.length ? t : path !== undefined ? [path] : [];
		},
		precheck: ({ session, params, turn }) => session.precheck("Edit", params, turn),
		run: ({ session, params, approvedPath, turn, ctx }) => session.edit(params, { approvedPath, turn, review: reviewTarget(host.agentDir, ctx), timeoutMs: WRITE_TIMEOUT_MS }),
	});

	host.pi.on("session_start", async (_event, ctx) => {
		try {
			rt.start(ctx);
		} catch {
			// A cwd that is not a directory: calls bind lazily and report the failure as their result.
			rt.close();
		}
		void sweepScratch(host.agentDir, rt.sessionId);
	});
	// One user prompt = one agent run: the turn id Edit's retry budget counts in.
	host.pi.on("agent_start", async () => {
		rt.stopAfterBatch = false;
		rt.nextPrompt();
	});
	// Pi ends the run after a tool batch only when every result of the batch carries `terminate`; an exhausted Edit
	// batched with other calls (a Read, say) would not stop the turn. So at the end of such a batch the run is aborted
	// before the next model request (docs/host.md "Retry budget"). The handler is subscribed only while a stop is
	// pending and leaves at the turn end it runs in: while any extension handles turn_end, Pi rebuilds a preview of
	// the session's whole context at the end of every turn, which would cost every turn of every session.
	let offTurnEnd: (() => void) | null = null;
	const stopAtTurnEnd = async (event: TurnEndEvent, ctx: ExtensionContext) => {
		offTurnEnd?.();
		offTurnEnd = null;
		if (!rt.stopAfterBatch) return;
		rt.stopAfterBatch = false;
		if ((event.toolResults?.length ?? 0) > 1) ctx.abort();
	};
	rt.onStopRequested = () => {
		offTurnEnd ??= host.pi.on("turn_end", stopAtTurnEnd);
	};
	host.lifecycle("hostTools", {
		shutdown: async () => rt.close(),
	});
}

let swept = false;

/** Once per process: remove scratch folders of sessions Pi no longer has (and those idle 7 days). Best effort. */
async function sweepScratch(agentDir: string, current: string): Promise<void> {
	// A delegate leaves the sweep to its parent: it cannot see which in-memory sessions are live.
	if (swept || DELEGATE) return;
	swept = true;
	try {
		// The ids of Pi's session list, read from each file's header only (src/pi/sessions.ts says why).
		const live = await sessionIds(agentDir);
		await native.hostSweepScratch(agentDir, [...live, current]);
	} catch {
		// Listing sessions failed (sweeping without knowing them could delete a live session's scratch), or the sweep
		// itself rejected: the folders wait for the next start.
	}
}
