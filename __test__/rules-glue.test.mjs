// The TypeScript glue of the rules engine (src/pi/rules.ts) against a fake Pi: when setActiveTools is called,
// what is emitted on the diagnostics channel, a rejected apply, find_tools loads and session resets.
// Needs Node >= 22.6 (type stripping) — the project's test runner uses the Node 22 devDependency.
import { test } from "node:test";
import assert from "node:assert/strict";
import { afterToolCall, findTools, newRulesState, onDemandCatalog, rebuildOnDemand, resetSessionLoads, rulesPreview, rulesStatus, syncRules, DIAGNOSTICS_CHANNEL } from "../src/pi/rules.ts";

const ME = "/pkg/src/index.ts";
const PINNED = "/embedder/ext.ts";

function fakePi({ owner = ME } = {}) {
	const tools = [
		...["read", "bash", "edit", "write"].map((name) => ({ name, description: name, sourceInfo: { source: "builtin", path: `builtin:${name}` } })),
		...["apply_patch", "exec_command", "write_stdin", "exec", "wait", "find_tools"].map((name) => ({ name, description: `toolkit ${name}`, sourceInfo: { source: "cli", path: owner } })),
	];
	let active = tools.map((t) => t.name);
	const pi = {
		sets: [],
		emitted: [],
		failNext: false,
		getAllTools: () => tools,
		getActiveTools: () => [...active],
		setActiveTools(names) {
			if (pi.failNext) throw new Error("setActiveTools exploded");
			pi.sets.push([...names]);
			active = [...names];
		},
		events: { emit: (channel, data) => pi.emitted.push({ channel, data }) },
	};
	return pi;
}

function host(pi, config) {
	const h = {
		pi,
		identities: new Set([ME, PINNED]),
		cfg: config,
		config: () => h.cfg,
		configPath: "/agent/extensions/pi-codex-toolkit.json",
		revision: "rev-1",
		lastError: null,
		applyError: null,
		rules: newRulesState(),
	};
	h.rules.model = { provider: "faux", id: "faux-1", api: "x" };
	h.rules.hasUI = true;
	return h;
}

const rulesCfg = (p, s, c) => ({ execution: { version: 1, rules: [{ id: "r", match: "faux-*", patch: p, shell: s, code: c }] } });

test("a sync applies, commits and emits; an unchanged sync emits without calling setActiveTools", () => {
	const pi = fakePi();
	const h = host(pi, rulesCfg(true, false, false));
	syncRules(h);
	assert.equal(pi.sets.length, 1);
	assert.deepEqual(pi.sets[0].sort(), ["apply_patch", "bash", "read"]);
	assert.deepEqual([...h.rules.hiddenByUs], ["edit", "write"]);
	assert.deepEqual([...h.rules.admitted], ["apply_patch"]);
	assert.deepEqual([...h.rules.nested], []);
	assert.equal(pi.emitted.length, 1);
	assert.equal(pi.emitted[0].channel, "pi-codex-toolkit.execution-diagnostics");
	assert.equal(DIAGNOSTICS_CHANNEL, "pi-codex-toolkit.execution-diagnostics");
	assert.equal(pi.emitted[0].data.configRevision, "rev-1");
	syncRules(h);
	assert.equal(pi.sets.length, 1, "nothing changed: no setActiveTools call");
	assert.equal(pi.emitted.length, 2, "every committed sync emits");
	// Back to no rule: only what we hid comes back.
	h.cfg = { execution: { version: 1, rules: [] } };
	syncRules(h);
	assert.deepEqual(pi.sets.at(-1).sort(), ["bash", "edit", "read", "write"]);
	assert.deepEqual([...h.rules.hiddenByUs], []);
});

test("a rejected apply keeps the committed route and re-emits it with cleanupPending", () => {
	const pi = fakePi();
	const h = host(pi, rulesCfg(false, true, false));
	syncRules(h);
	const committed = pi.emitted.at(-1).data;
	pi.failNext = true;
	h.cfg = rulesCfg(true, false, false);
	syncRules(h);
	assert.equal(h.applyError, "setActiveTools exploded");
	assert.deepEqual([...h.rules.admitted], ["exec_command", "write_stdin"], "the committed admission stays");
	const rec = pi.emitted.at(-1).data;
	assert.equal(rec.cleanupPending, true);
	assert.deepEqual(rec.effective, committed.effective, "describes the still-committed route");
	assert.match(rulesStatus(h), /\nApply error: setActiveTools exploded\n/);
	pi.failNext = false;
	syncRules(h);
	assert.equal(h.applyError, null);
	assert.equal(pi.emitted.at(-1).data.cleanupPending, false);
});

test("nested admission follows the code route", () => {
	const h = host(fakePi(), rulesCfg(true, false, true));
	syncRules(h);
	assert.deepEqual([...h.rules.nested], ["apply_patch", "exec_command", "write_stdin"]);
	assert.ok(!h.pi.getActiveTools().includes("apply_patch"), "apply_patch only inside cells");
});

test("a pinned sourcePath identity owns the names", () => {
	const pi = fakePi({ owner: PINNED });
	const h = host(pi, rulesCfg(false, true, false));
	syncRules(h);
	assert.deepEqual([...h.rules.admitted], ["exec_command", "write_stdin"]);
});

test("find_tools: validation throws, a load syncs at once, a new session forgets", () => {
	const pi = fakePi();
	const h = host(pi, { ...rulesCfg(true, false, false), toolDiscovery: { enabled: true, deferred: ["apply_patch"] } });
	syncRules(h);
	assert.ok(!pi.getActiveTools().includes("apply_patch"));
	assert.throws(() => findTools(h, {}), { message: "find_tools requires a query or a non-empty load list." });
	const out = findTools(h, { load: ["apply_patch"] });
	assert.equal(out.text, "Loaded for the next turn: apply_patch");
	assert.deepEqual(out.details.loaded, ["apply_patch"]);
	assert.ok(pi.getActiveTools().includes("apply_patch"), "visible for the next turn");
	assert.deepEqual(h.rules.loadedDeferred, ["apply_patch"]);
	resetSessionLoads(h);
	syncRules(h);
	assert.ok(!pi.getActiveTools().includes("apply_patch"));
});

test("preview uses the draft rules, not the saved ones", () => {
	const h = host(fakePi(), rulesCfg(true, false, false));
	const text = rulesPreview(h, [{ id: "draft", match: "faux-1", patch: false, shell: false, code: true }]);
	assert.match(text, /^Preview for faux\/faux-1:\n {2}matched rule: draft \(match faux-1\)\n {2}requested: code\n/);
});

test("on-demand host tools: held back with find_tools, rebuilt from the context's evidence, loaded by a background task or a call by name", () => {
	const pi = fakePi();
	const all = pi.getAllTools();
	for (const name of ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop"]) all.push({ name, description: name, sourceInfo: { source: "cli", path: ME } });
	const h = host(pi, { hostTools: { enabled: true }, toolDiscovery: { enabled: true } });
	const host9 = (active) => ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop"].filter((n) => active.includes(n));
	syncRules(h);
	assert.deepEqual(host9(pi.getActiveTools()), ["Read", "Write", "Edit", "Bash"]);
	assert.match(onDemandCatalog(h), /^# On-demand tools\n/);

	// Evidence: a successful find_tools result counts, a failed Glob call and assistant text do not.
	const entries = [
		{ type: "message", message: { role: "assistant", content: [{ type: "text", text: "Glob" }] } },
		{ type: "message", message: { role: "toolResult", toolName: "find_tools", isError: false, details: { addedToolNames: ["Grep"] } } },
		{ type: "message", message: { role: "toolResult", toolName: "Glob", isError: true, details: {} } },
	];
	const ctx = { sessionManager: { buildContextEntries: () => entries } };
	assert.equal(rebuildOnDemand(h, ctx), true, "the loads changed");
	assert.deepEqual(h.rules.loadedOnDemand, ["Grep"]);
	assert.equal(rebuildOnDemand(h, ctx), false, "the same evidence: no sync needed");
	syncRules(h);
	assert.deepEqual(host9(pi.getActiveTools()), ["Read", "Grep", "Write", "Edit", "Bash"]);
	assert.doesNotMatch(onDemandCatalog(h), /- Grep:/);

	// A call by name of a held-back tool loads it for the next turn; a background Bash task brings the Task tools.
	afterToolCall(h, { toolName: "Glob", isError: true, result: { content: [] } });
	assert.deepEqual(host9(pi.getActiveTools()), ["Read", "Glob", "Grep", "Write", "Edit", "Bash"]);
	afterToolCall(h, { toolName: "Bash", isError: false, result: { details: { backgroundTaskId: "bg-1" } } });
	assert.deepEqual(host9(pi.getActiveTools()), ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop"]);

	// A new session: no loads, no background task, an empty context proves nothing.
	resetSessionLoads(h);
	assert.equal(rebuildOnDemand(h, { sessionManager: { buildContextEntries: () => [] } }), false);
	syncRules(h);
	assert.deepEqual(host9(pi.getActiveTools()), ["Read", "Write", "Edit", "Bash"]);
});
