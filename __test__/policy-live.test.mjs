// The glue that decides where the policy reaches (docs/permissions.md "Whose tool is it", docs/agents.md "The live
// policy"): a tool's owner from Pi's registry (never its name), the delegate's policy answer, which delegates Plan
// stops, and the hidden-tool refusal's wording. The real-Pi side is __test__/e2e/policy-live.e2e.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isPiBuiltinSource, toolOrigin } from "../src/pi/origin.ts";
import { parsePolicy } from "../src/pi/delegate.ts";
import { actingDelegate } from "../src/pi/agents.ts";

const schema = { type: "object" };
const registry = (entries) => ({ getAllTools: () => entries });

test("Pi's builtin is its synthetic source for that very name, on both Pi versions", () => {
	assert.equal(isPiBuiltinSource("find", { source: "builtin", path: "builtin:find" }), true, "Pi 1.x");
	assert.equal(isPiBuiltinSource("find", { source: "builtin", path: "<builtin:find>" }), true, "Pi 0.87");
	assert.equal(isPiBuiltinSource("find", { source: "builtin", path: "builtin:ls" }), false, "another builtin's path");
	assert.equal(isPiBuiltinSource("mcp__docs__search", { source: "builtin", path: "builtin:mcp" }), false, "a Pi 1.x builtin extension's tool");
	assert.equal(isPiBuiltinSource("find", { source: "local", path: "/ext/find.ts" }), false, "another extension");
	assert.equal(isPiBuiltinSource("find", { path: "builtin:find" }), false, "no source");
	assert.equal(isPiBuiltinSource("find", undefined), false, "no source info at all");
});

test("toolOrigin: ours by schema identity, builtin by source, anything else (or unprovable) foreign", () => {
	const own = new Map([["Write", schema]]);
	assert.equal(toolOrigin(registry([{ name: "Write", parameters: schema, sourceInfo: { path: "/pct/index.ts" } }]), own, "Write"), "ours");
	// Another extension won the name `Write`: an equal-looking schema is not ours.
	assert.equal(toolOrigin(registry([{ name: "Write", parameters: { type: "object" }, sourceInfo: { path: "/other.ts" } }]), own, "Write"), "foreign");
	assert.equal(toolOrigin(registry([{ name: "find", parameters: {}, sourceInfo: { source: "builtin", path: "builtin:find" } }]), own, "find"), "builtin");
	assert.equal(toolOrigin(registry([{ name: "find", parameters: {}, sourceInfo: { source: "local", path: "/squat.ts" } }]), own, "find"), "foreign");
	assert.equal(toolOrigin(registry([{ name: "find", parameters: {} }]), own, "find"), "foreign", "no source info: not provably Pi's");
	assert.equal(toolOrigin(registry([]), own, "bash"), "foreign", "not in the registry");
	assert.equal(toolOrigin({ getAllTools: () => { throw new Error("stale"); } }, own, "bash"), "foreign", "an unreadable registry is the gated side");
});

test("parsePolicy: only a complete answer is a policy", () => {
	assert.deepEqual(parsePolicy(JSON.stringify({ operationMode: "plan", mode: null, grants: ["Write"] })), { operationMode: "plan", mode: null, grants: ["Write"] });
	assert.deepEqual(parsePolicy(JSON.stringify({ operationMode: "agent", mode: "auto", grants: [] })), { operationMode: "agent", mode: "auto", grants: [] });
	for (const bad of [undefined, "", "nope", "{}", JSON.stringify({ operationMode: "contract", mode: null, grants: [] }), JSON.stringify({ operationMode: "agent", mode: "yolo", grants: [] }), JSON.stringify({ operationMode: "agent", mode: null, grants: [1] }), JSON.stringify({ operationMode: "agent", mode: null })]) {
		assert.equal(parsePolicy(bad), null, String(bad));
	}
});

test("actingDelegate: a delegate that only reads keeps running in Plan; any other tool makes it stop", () => {
	assert.equal(actingDelegate(["Read", "Glob", "Grep"]), false);
	assert.equal(actingDelegate(["read", "grep", "find", "ls", "TaskList", "TaskWait"]), false);
	for (const t of ["Write", "Edit", "Bash", "apply_patch", "exec_command", "write_stdin", "bash", "edit", "write", "mcp__docs__search"]) {
		assert.equal(actingDelegate(["Read", t]), true, t);
	}
});
