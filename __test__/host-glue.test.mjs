// The Pi glue of the host tools (src/pi/tools/host.ts) with a recording host: registration and the gate, the
// permission card (allow once / allow for this session / deny / abort), headless TOOL_DENIED, external paths and
// approvedPath, scratch writes, and the audit file (fields, redaction, modes).
import { failsAsData } from "./helpers/failure.mjs";
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, statSync, rmSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { register, hostTool, HOST_NOT_ENABLED, ALLOW_ONCE, ALLOW_SESSION, DENY } from "../src/pi/tools/host.ts";
import { Type } from "typebox";

const base = mkdtempSync(join(tmpdir(), "pct-host-glue-"));
after(() => rmSync(base, { recursive: true, force: true }));
let n = 0;

function fakeHost({ mode = "ask", admitted = true } = {}) {
	const dir = join(base, `case-${++n}`);
	const ws = join(dir, "ws");
	const agentDir = join(dir, "agent");
	mkdirSync(ws, { recursive: true });
	mkdirSync(agentDir, { recursive: true });
	writeFileSync(join(ws, "a.txt"), "one\ntwo\n");
	writeFileSync(join(dir, "outside.txt"), "secret stuff\n");
	const tools = new Map();
	const handlers = {};
	const host = {
		admitted,
		mode,
		agentDir,
		pi: { registerTool: (def) => tools.set(def.name, def), on: (ev, h) => (handlers[ev] = h) },
		hooks: {},
		shared: new Map(),
		isAdmitted: () => host.admitted,
		lifecycle: () => {},
		config: () => ({ hostTools: { enabled: true, permissionMode: host.mode } }),
	};
	register(host);
	const runs = [];
	// A high-risk tool through the same wrapper, recording what it was handed.
	hostTool(host, {
		name: "Write",
		label: "Write",
		description: "test writer",
		parameters: Type.Object({ path: Type.String(), content: Type.Optional(Type.String()), token: Type.Optional(Type.String()) }),
		risk: "edit",
		target: (p) => p.path,
		run: async (c) => (runs.push({ params: c.params, approvedPath: c.approvedPath, turn: c.turn }), { ok: true, text: "wrote", extra: 1 }),
	});
	const picks = [];
	const ui = { answer: undefined, select: async (title, options, opts) => (picks.push({ title, options, opts }), typeof ui.answer === "function" ? ui.answer(opts) : ui.answer) };
	const ctx = (hasUI = true) => ({ cwd: ws, hasUI, ui, sessionManager: { getSessionId: () => `sess-${n}` } });
	const call = (name, params, { hasUI = true, signal, id = "call-1" } = {}) => tools.get(name).execute(id, params, signal, undefined, ctx(hasUI));
	const auditLines = () => readFileSync(join(agentDir, "pi-codex-toolkit/audit", `sess-${n}.jsonl`), "utf8").trim().split("\n").map((l) => JSON.parse(l));
	return { host, tools, handlers, call, ui, picks, runs, ws, dir, agentDir, auditLines, ctx };
}

test("registers Read, Glob, Grep; the gate refuses when not admitted; Read runs in the workspace with details", async () => {
	const h = fakeHost();
	assert.deepEqual([...h.tools.keys()], ["Read", "Glob", "Grep", "Write", "Edit"]);
	const r = await h.call("Read", { file_path: "a.txt" });
	assert.match(r.content[0].text, /^\[a\.txt#[0-9A-F]{4}\]\n1:one\n2:two/);
	assert.equal(r.details.root, "workspace");
	assert.equal(r.details.totalLines, 2);
	assert.equal(r.details.ok, undefined);
	const g = await h.call("Grep", { pattern: "two" });
	assert.deepEqual(g.details.matches, [{ path: "a.txt", line: 2, text: "two" }]);
	// `total` is in Grep's schema (the model learns it exists there, not only from the "100+" notice) and reaches the engine.
	assert.equal(h.tools.get("Grep").parameters.properties.total.type, "boolean");
	const gt = await h.call("Grep", { pattern: "o", limit: 1, total: true });
	assert.match(gt.content[0].text, /\[Showing the first 1 of 2 matches in 1 files\./);
	const gl = await h.call("Glob", { query: "*.txt" });
	assert.deepEqual(gl.details.files, ["a.txt"]);
	assert.equal(h.picks.length, 0, "low risk inside the roots never asks");
	h.host.admitted = false;
	await assert.rejects(h.call("Read", { path: "a.txt" }), { message: HOST_NOT_ENABLED });
	h.host.admitted = true;
	await failsAsData(h.call("Read", {}), "INVALID_ARGUMENT", /^INVALID_ARGUMENT: /);
	await failsAsData(h.call("Read", { path: "missing.txt" }), "NOT_FOUND", /^NOT_FOUND: /);
});

test("ask mode: headless is TOOL_DENIED naming accept-edits; the card's three answers; allow-session is remembered", async () => {
	const h = fakeHost();
	const headless = await failsAsData(h.call("Write", { path: "b.txt" }, { hasUI: false }), "TOOL_DENIED", /^TOOL_DENIED: Write needs the user's confirmation in permission mode ask/);
	assert.match(headless.content[0].text, /Permission mode accept-edits would allow it/);
	assert.equal(h.runs.length, 0);
	h.ui.answer = DENY;
	await failsAsData(h.call("Write", { path: "b.txt" }), "TOOL_DENIED", /^TOOL_DENIED: The user denied permission for this Write call/);
	assert.deepEqual(h.picks[0].options, [ALLOW_ONCE, ALLOW_SESSION, DENY]);
	assert.equal(h.picks[0].opts?.timeout, undefined, "no automatic timeout");
	h.ui.answer = undefined; // dismissed
	await failsAsData(h.call("Write", { path: "b.txt" }), "TOOL_DENIED", /The user denied permission/);
	h.ui.answer = ALLOW_ONCE;
	assert.equal((await h.call("Write", { path: "b.txt" })).content[0].text, "wrote");
	h.ui.answer = ALLOW_SESSION;
	await h.call("Write", { path: "b.txt" });
	const before = h.picks.length;
	h.ui.answer = DENY;
	await h.call("Write", { path: "b.txt" }, { hasUI: false });
	assert.equal(h.picks.length, before, "allowed for the session: no card, even headless");
	assert.equal(h.runs.length, 3);
	const lines = h.auditLines();
	assert.deepEqual(lines.map((l) => [l.decision, l.prompted, l.ok, l.errorCode]), [
		["denied-headless", false, false, "TOOL_DENIED"],
		["deny", true, false, "TOOL_DENIED"],
		["deny", true, false, "TOOL_DENIED"],
		["allow-once", true, true, null],
		["allow-session", true, true, null],
		["allow-session", false, true, null],
	]);
	// A new session forgets the allow-session set.
	await h.handlers.session_start({}, h.ctx());
	await failsAsData(h.call("Write", { path: "b.txt" }, { hasUI: false }), "TOOL_DENIED", /TOOL_DENIED/);
});

test("an abort while the card is open denies and runs nothing", async () => {
	const h = fakeHost();
	const ac = new AbortController();
	h.ui.answer = (opts) => new Promise((resolve) => opts.signal.addEventListener("abort", () => resolve(undefined)));
	const p = h.call("Write", { path: "b.txt" }, { signal: ac.signal });
	setImmediate(() => ac.abort());
	await failsAsData(p, "TOOL_DENIED", /TOOL_DENIED/);
	assert.equal(h.runs.length, 0);
});

test("modes: accept-edits and auto allow Write without a card; scratch writes never ask", async () => {
	const h = fakeHost({ mode: "accept-edits" });
	await h.call("Write", { path: "b.txt" }, { hasUI: false });
	h.host.mode = "ask";
	const scratch = join(h.agentDir, "pi-codex-toolkit/scratch", `sess-${n}`, "notes.md");
	await h.call("Write", { path: scratch }, { hasUI: false });
	assert.equal(h.runs.length, 2);
	assert.equal(h.runs[1].approvedPath, undefined);
	// The session override beats the config.
	const rt = h.host.shared.get("host.runtime");
	rt.permissions.setOverride("accept-edits");
	await h.call("Write", { path: "c.txt" }, { hasUI: false });
	assert.equal(h.runs.length, 3);
});

test("external paths: a card below auto, the canonical path is passed as approvedPath; auto needs none", async () => {
	const h = fakeHost({ mode: "accept-edits" });
	await failsAsData(h.call("Read", { path: "../outside.txt" }, { hasUI: false }), "TOOL_DENIED", /^TOOL_DENIED: Read on a path outside the workspace .*Permission mode auto would allow it/);
	h.ui.answer = ALLOW_ONCE;
	const r = await h.call("Read", { path: "../outside.txt" });
	assert.equal(r.details.root, "external");
	assert.match(h.picks[0].title, /outside the workspace: dotdot-escape/);
	await h.call("Write", { path: "../outside.txt" });
	assert.equal(h.runs[0].approvedPath, realpathSync(join(h.dir, "outside.txt")));
	h.host.mode = "auto";
	const before = h.picks.length;
	await h.call("Read", { path: "../outside.txt" }, { hasUI: false });
	assert.equal(h.picks.length, before);
	assert.equal(h.auditLines().at(-1).external, "dotdot-escape");
});

test("the audit file: one line per call, the spec's fields, secrets redacted, 0600 in a 0700 folder", async () => {
	const h = fakeHost({ mode: "auto" });
	await h.call("Write", { path: "b.txt", content: "key sk-live-ABCDEFGHIJKLMNOP", token: "hunter2" }, { id: "tc-9" });
	const [l] = h.auditLines();
	assert.deepEqual(Object.keys(l), ["ts", "sessionId", "turn", "toolCallId", "traceId", "tool", "argsHash", "argsPreview", "external", "decision", "prompted", "permissionWaitMs", "durationMs", "overheadMs", "totalMs", "ok", "errorCode"]);
	assert.equal(l.sessionId, `sess-${n}`);
	assert.equal(l.toolCallId, "tc-9");
	assert.equal(l.traceId, null, "this fake registers the tool directly, not through src/pi/trace.ts");
	assert.equal(l.tool, "Write");
	assert.equal(l.decision, "allow");
	const file = readFileSync(join(h.agentDir, "pi-codex-toolkit/audit", `sess-${n}.jsonl`), "utf8");
	assert.equal(file.includes("hunter2"), false);
	assert.equal(file.includes("sk-live-ABCDEFGHIJKLMNOP"), false);
	assert.match(l.argsPreview, /\[REDACTED\]/);
	assert.equal(h.runs[0].params.token, "hunter2", "the tool itself gets the real arguments");
	assert.equal(statSync(join(h.agentDir, "pi-codex-toolkit/audit", `sess-${n}.jsonl`)).mode & 0o777, 0o600);
	assert.equal(statSync(join(h.agentDir, "pi-codex-toolkit/audit")).mode & 0o777, 0o700);
	assert.ok(l.totalMs >= l.durationMs);
});

test("turn ids change with every prompt (agent_start)", async () => {
	const h = fakeHost({ mode: "auto" });
	await h.call("Write", { path: "b.txt" });
	await h.handlers.agent_start({}, h.ctx());
	await h.call("Write", { path: "b.txt" });
	assert.notEqual(h.runs[0].turn, h.runs[1].turn);
	assert.deepEqual(h.auditLines().map((l) => l.turn), [h.runs[0].turn, h.runs[1].turn]);
});

test("a failure is an error result with details.errorCode (Pi 1.x); with budgetExhausted it also terminates the turn", async () => {
	const h = fakeHost({ mode: "auto" });
	let budget = false;
	hostTool(h.host, {
		name: "Edit",
		label: "Edit",
		description: "test editor",
		parameters: Type.Object({ path: Type.String() }),
		risk: "edit",
		target: (p) => p.path,
		run: async () => ({ ok: false, code: "EDIT_RANGE_INVALID", message: "line 9 is past the end", budgetExhausted: budget, failures: 3 }),
	});
	await failsAsData(h.tools.get("Edit").execute("e1", { path: "a.txt" }, undefined, undefined, h.ctx()), "EDIT_RANGE_INVALID", /^EDIT_RANGE_INVALID: line 9/);
	budget = true;
	const r = await h.tools.get("Edit").execute("e2", { path: "a.txt" }, undefined, undefined, h.ctx());
	assert.deepEqual(r, {
		content: [{ type: "text", text: "EDIT_RANGE_INVALID: line 9 is past the end" }],
		details: { errorCode: "EDIT_RANGE_INVALID", budgetExhausted: true, failures: 3 },
		isError: true,
		terminate: true,
	});
	assert.deepEqual(h.auditLines().map((l) => [l.tool, l.ok, l.errorCode]), [["Edit", false, "EDIT_RANGE_INVALID"], ["Edit", false, "EDIT_RANGE_INVALID"]]);
});

test("a card answered after the Pi session was replaced runs nothing", async () => {
	const h = fakeHost();
	let release;
	h.ui.answer = () => new Promise((r) => (release = r));
	const p = h.call("Write", { path: "b.txt" });
	// The card opens once the call holds Pi's file mutation queue (its registration is asynchronous).
	while (!release) await new Promise((r) => setImmediate(r));
	await h.handlers.session_start({}, h.ctx());
	release(ALLOW_ONCE);
	await failsAsData(p, "TOOL_FAILED", /^TOOL_FAILED: The Pi session this call belonged to ended or was replaced/);
	assert.equal(h.runs.length, 0);
});
