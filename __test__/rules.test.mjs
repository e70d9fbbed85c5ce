// Addon tests of the rules / discovery surface: JSON in, JSON out, same decisions as the Rust unit tests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const addon = createRequire(import.meta.url)("../index.js");
// The addon takes and returns JSON text; these wrappers keep the tests readable.
const native = {
	rulesResolve: (i) => JSON.parse(addon.rulesResolve(JSON.stringify(i))),
	rulesStatusText: (i) => addon.rulesStatusText(JSON.stringify(i)),
	rulesPreviewText: (i) => addon.rulesPreviewText(JSON.stringify(i)),
	rulesEditorRules: (c) => JSON.parse(addon.rulesEditorRules(JSON.stringify(c))),
	rulesEditorRows: (r) => addon.rulesEditorRows(JSON.stringify(r)),
	discoveryFindTools: (i, r) => JSON.parse(addon.discoveryFindTools(JSON.stringify(i), JSON.stringify(r))),
	rulesGlobMatch: addon.rulesGlobMatch,
	rulesDiagnosticsChannel: addon.rulesDiagnosticsChannel,
};
const ME = "/pkg/src/index.ts";
const OURS = ["apply_patch", "exec_command", "write_stdin", "exec", "wait", "find_tools"];

function tools({ foreign = [], missing = [] } = {}) {
	const list = [
		...["read", "bash", "edit", "write", "grep", "find", "ls"].map((name) => ({ name, description: `builtin ${name}`, source: "builtin" })),
		...OURS.map((name) => ({ name, description: `toolkit ${name}`, source: ME })),
		...foreign.map((name) => ({ name, description: "theirs", source: "/third/party.ts" })),
	];
	return list.filter((t) => !missing.includes(t.name));
}

function snapshot(config, { model = { provider: "faux", id: "faux-1", api: "faux-api" }, ...rest } = {}) {
	const t = rest.tools ?? tools();
	return {
		config,
		model,
		tools: t,
		identity: ME,
		activeNow: t.filter((x) => !["grep", "find", "ls"].includes(x.name)).map((x) => x.name),
		hiddenByUs: [],
		loadedDeferred: [],
		platform: "linux",
		configPath: "/agent/extensions/pi-codex-toolkit.json",
		...rest,
	};
}

const rule = (patch, shell, code, match = "faux-*") => ({ execution: { version: 1, rules: [{ id: "r", match, patch, shell, code }] } });
const sorted = (a) => [...a].sort();

test("projection table of §4", () => {
	const table = [
		[[true, false, false], ["read", "bash", "apply_patch"]],
		[[false, true, false], ["read", "edit", "write", "exec_command", "write_stdin"]],
		[[false, false, true], ["read", "edit", "write", "exec", "wait"]],
		[[true, false, true], ["read", "exec", "wait"]],
		[[true, true, true], ["read", "exec_command", "write_stdin", "exec", "wait"]],
		[[false, false, false], ["read", "bash", "edit", "write"]],
	];
	for (const [[p, s, c], want] of table) {
		const out = native.rulesResolve(snapshot(rule(p, s, c)));
		assert.deepEqual(sorted(out.active), sorted(want), `P=${p} S=${s} C=${c}`);
		assert.equal(out.changed, true);
	}
});

test("a model matching no rule requests nothing", () => {
	const out = native.rulesResolve(snapshot(rule(true, true, true), { model: { provider: "faux", id: "other" } }));
	assert.deepEqual(sorted(out.active), ["bash", "edit", "read", "write"]);
	assert.equal(out.diagnostics.source, "unmatched");
	assert.equal(out.diagnostics.ruleId, undefined);
});

test("glob cases", () => {
	assert.equal(native.rulesGlobMatch("g?ok-4.6", null, "grok-4.6"), true);
	assert.equal(native.rulesGlobMatch("grok[0-9]*", null, "grok4"), false);
	assert.equal(native.rulesGlobMatch("grok[0-9]*", null, "grok[0-9]x"), true);
	assert.equal(native.rulesGlobMatch("openai/*", null, "gpt-5"), false);
	assert.equal(native.rulesGlobMatch("openai/*", "openai", "gpt-5"), true);
	assert.equal(native.rulesGlobMatch("GPT-*", "openai", "gpt-5"), false);
	// Pathological pattern still answers (no exponential backtracking).
	assert.equal(native.rulesGlobMatch("a*".repeat(200) + "b", null, "a".repeat(5000)), false);
});

test("third-party winners: groups go down together, their tools untouched", () => {
	const out = native.rulesResolve(snapshot(rule(true, true, true), { tools: tools({ foreign: ["apply_patch", "exec_command", "exec"] }) }));
	for (const theirs of ["apply_patch", "exec_command", "exec"]) assert.ok(out.active.includes(theirs));
	assert.ok(!out.active.includes("write_stdin") && !out.active.includes("wait"));
	assert.equal(out.features.codeMode.reason, "name-taken");
	assert.deepEqual(out.hiddenNatives, []);
});

test("--tools allowlist: missing is not conflict under rules", () => {
	const t = tools({ missing: ["exec_command", "write_stdin", "apply_patch", "find_tools"] });
	const out = native.rulesResolve(snapshot(rule(false, true, false), { tools: t }));
	assert.equal(out.features.shellSessions.reason, "shell-pair-unavailable");
	assert.deepEqual(out.notes, ["shell-pair-unavailable"]);
	const legacy = native.rulesResolve(snapshot({ shellSessions: { enabled: true } }, { tools: t }));
	assert.equal(legacy.features.shellSessions.reason, "conflicting-tool-name");
});

test("hidden builtins are restored only when we hid them", () => {
	const first = native.rulesResolve(snapshot(rule(true, true, false)));
	assert.deepEqual(first.hiddenNatives, ["bash", "edit", "write"]);
	const back = native.rulesResolve(snapshot({ execution: { version: 1, rules: [] } }, { activeNow: first.active, hiddenByUs: first.hiddenNatives }));
	assert.deepEqual(back.restoredNatives, ["bash", "edit", "write"]);
	assert.ok(["bash", "edit", "write"].every((n) => back.active.includes(n)));
});

test("diagnostics record carries names and flags only", () => {
	const out = native.rulesResolve(snapshot(rule(true, false, true), { hasUi: true, configRevision: "rev1" }));
	assert.equal(native.rulesDiagnosticsChannel(), "pi-codex-toolkit.execution-diagnostics");
	const d = out.diagnostics;
	assert.equal(d.version, 1);
	assert.deepEqual(Object.keys(d), [
		"version", "model", "source", "ruleId", "requested", "effective", "admittedNames", "visibleNames", "nestedNames",
		"hiddenNatives", "notes", "approvalTransport", "cleanupPending", "configRevision", "toolkit",
	]);
	assert.deepEqual(d.effective, { directPatch: false, nestedPatch: true, directShell: false, code: true });
	assert.equal(d.approvalTransport, "dialog");
	assert.equal(d.configRevision, "rev1");
	assert.equal(d.toolkit.name, "pi-codex-toolkit");
});

test("status text", () => {
	const text = native.rulesStatusText(snapshot(rule(true, false, false), { configError: { code: "invalid-config", detail: "applyPatch.enabled must be true or false" } }));
	const lines = text.split("\n");
	assert.deepEqual(lines.slice(0, 4), [
		"Pi Codex Toolkit status",
		"model: faux-1  provider: faux  api: faux-api",
		"config: /agent/extensions/pi-codex-toolkit.json",
		"Config error: invalid-config (applyPatch.enabled must be true or false)",
	]);
	assert.match(text, /\nApply Patch\n {2}configured: on\n {2}effective: active\n(?! {2}reason)/);
	assert.match(text, /\nExecution rules:\n {2}matched rule: r \(match faux-\*\)\n {2}requested: patch\n {2}effective: direct patch\n {2}bash hidden: no\n {2}edit\/write hidden: yes\n {2}notes: none$/);
	assert.match(native.rulesStatusText(snapshot({}, { model: null })), /\nmodel: none \(current-model-missing\)\n/);
});

test("editor helpers and preview", () => {
	const rules = native.rulesEditorRules({ shellSessions: { enabled: true } });
	assert.deepEqual(rules, [{ id: "rule-1", match: "*", patch: false, shell: true, code: false }]);
	assert.deepEqual(native.rulesEditorRows(rules), ["1. rule-1  *  S"]);
	assert.deepEqual(native.rulesEditorRules({}), []);
	const preview = native.rulesPreviewText(snapshot({ execution: { version: 1, rules } }));
	assert.equal(preview.split("\n")[0], "Preview for faux/faux-1:");
	assert.match(preview, /requested: shell\n {2}effective: direct shell\n {2}bash hidden: yes/);
});

test("find_tools: validation, query, load", () => {
	const cfg = { ...rule(true, true, false), toolDiscovery: { enabled: true, deferred: ["apply_patch", "exec_command"] } };
	const input = snapshot(cfg);
	assert.equal(native.discoveryFindTools(input, {}).error.message, "find_tools requires a query or a non-empty load list.");
	assert.equal(native.discoveryFindTools(input, { load: [] }).error.message, "find_tools requires a query or a non-empty load list.");
	const q = native.discoveryFindTools(input, { query: "PATCH" });
	assert.deepEqual(q.matches.map((m) => [m.name, m.state]), [["apply_patch", "eligible"]]);
	assert.equal(native.discoveryFindTools(input, { query: "zzz" }).text, "No matching managed tools.");
	const l = native.discoveryFindTools(input, { load: ["apply_patch", "bash"] });
	assert.deepEqual(l.loaded, ["apply_patch"]);
	assert.deepEqual(l.loadedDeferred, ["apply_patch"]);
	assert.deepEqual(l.rejected, [{ name: "bash", reason: "not-managed" }]);
	const after = native.rulesResolve({ ...input, loadedDeferred: l.loadedDeferred });
	assert.ok(after.active.includes("apply_patch"));
	assert.ok(!after.active.includes("exec_command"));
	assert.deepEqual(after.deferredNames, ["exec_command"]);
});

test("a malformed snapshot is refused with a clear message", () => {
	assert.throws(() => native.rulesResolve({ tools: "nope" }), /invalid-input/);
	assert.throws(() => addon.rulesResolve("{not json"), /invalid-input/);
});
