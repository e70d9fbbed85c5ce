// The plan tools' glue (src/pi/plan.ts) with a recording host: the checks behind the tool list — alone in the
// message, the mode each needs, admission — that the real Pi rarely reaches because the list hides a tool in the
// wrong mode (the e2e suite, __test__/e2e/permissions.e2e.test.mjs, covers the paths Pi takes).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { register, operationMode, PLAN_TOOL_CODES } from "../src/pi/plan.ts";
import { docTable } from "./helpers/doc.mjs";
import { tempDir } from "./helpers/tmp.mjs";

function fakeHost() {
	const ws = tempDir("pct-plan-glue-");
	const agentDir = join(ws, ".agent");
	mkdirSync(agentDir);
	const tools = new Map();
	const handlers = {};
	const entries = [];
	const syncs = [];
	const host = {
		admitted: true,
		agentDir,
		pi: { registerTool: (def) => tools.set(def.name, def), on: (ev, h) => (handlers[ev] = h), appendEntry: (t, d) => entries.push([t, d]) },
		hooks: {},
		shared: new Map(),
		isAdmitted: () => host.admitted,
		lifecycle: () => {},
		config: () => ({ hostTools: { enabled: true }, permissions: { mode: "ask", planSafeTools: [] } }),
		sync: () => syncs.push(operationMode(host)),
	};
	register(host);
	const ctx = { cwd: ws, hasUI: false, ui: {}, sessionManager: { getSessionId: () => "sess-1", getBranch: () => [] } };
	/** Pi ends the assistant message with these calls, then runs one of them. */
	const batch = (...ids) => handlers.message_end({ message: { role: "assistant", content: ids.map((id) => ({ type: "toolCall", id, name: "x", arguments: {} })) } });
	const call = (name, id, params = {}) => tools.get(name).execute(id, params, undefined, undefined, ctx);
	return { host, tools, handlers, entries, syncs, batch, call, ws };
}

test("EnterPlanMode: alone, in Agent, admitted; it persists the mode and re-syncs the tools", async () => {
	const h = fakeHost();
	assert.deepEqual([...h.tools.keys()], ["EnterPlanMode", "SubmitPlan"]);
	await assert.rejects(h.call("EnterPlanMode", "c0"), /^Error: PLAN_TOOL_NOT_ALONE: EnterPlanMode must be the only tool call of its assistant message \(its assistant message is not known\)/);
	h.batch("c1", "c2");
	await assert.rejects(h.call("EnterPlanMode", "c1"), /\(it came with 1 other call\(s\)\); nothing changed/);
	h.host.admitted = false;
	h.batch("c3");
	await assert.rejects(h.call("EnterPlanMode", "c3"), /^Error: EnterPlanMode comes with the Host Tools, which are not enabled/);
	h.host.admitted = true;
	assert.equal(operationMode(h.host), "agent", "no refusal changed the mode");
	assert.deepEqual(h.entries, []);
	const r = await h.call("EnterPlanMode", "c3");
	assert.match(r.content[0].text, /^Plan mode is on\./);
	assert.equal(operationMode(h.host), "plan");
	assert.deepEqual(h.entries, [["pct-operation-mode", { mode: "plan" }]]);
	assert.deepEqual(h.syncs, ["plan"]);
	h.batch("c4");
	await assert.rejects(h.call("EnterPlanMode", "c4"), /^Error: ALREADY_IN_PLAN_MODE: Plan mode is already on\./);
	assert.deepEqual(h.syncs, ["plan"]);
});

test("SubmitPlan: Plan only and alone; bad input stores nothing; headless it saves and says so, Plan stays", async () => {
	const h = fakeHost();
	h.batch("s1");
	await assert.rejects(h.call("SubmitPlan", "s1", { plan: "# p" }), /^Error: NOT_IN_PLAN_MODE: SubmitPlan works in Plan mode only/);
	assert.equal(existsSync(join(h.ws, ".pi")), false);
	h.batch("e1");
	await h.call("EnterPlanMode", "e1");
	h.batch("s2", "s3");
	await assert.rejects(h.call("SubmitPlan", "s2", { plan: "# p" }), /^Error: PLAN_TOOL_NOT_ALONE: SubmitPlan/);
	h.batch("s4");
	await assert.rejects(h.call("SubmitPlan", "s4", { plan: 42 }), /^Error: PLAN_EMPTY: /);
	assert.equal(existsSync(join(h.ws, ".pi")), false, "refused input creates nothing");
	await assert.rejects(h.call("SubmitPlan", "s4", { plan: "# p\n" }), /^Error: PLAN_APPROVAL_UNAVAILABLE: The plan was saved to \.pi\/plan\/\d+-[0-9a-f]{8}\.md, but this session has no interactive UI/);
	assert.equal(operationMode(h.host), "plan");
});

test("the plan tools' codes are docs/permissions.md's Tool codes table, in order", () => {
	assert.deepEqual([...PLAN_TOOL_CODES], docTable("permissions.md", "### Tool codes"));
});
