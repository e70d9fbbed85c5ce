// The apply_patch Pi tool definition (src/pi/tools/patch.ts) against a fake ToolkitHost: schema, grammar,
// description, the enable gate, the policy hook, the sorted mutation queue and the abort signal. Needs Node 22
// (type stripping) — run with node_modules/.bin/node.
import { failsAsData } from "./helpers/failure.mjs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { withFileMutationQueue } from "@earendil-works/pi-coding-agent";
import { register, APPLY_PATCH_LARK, NOT_ENABLED } from "../src/pi/tools/patch.ts";
import { tempDir } from "./helpers/tmp.mjs";
import { queuedAt } from "./helpers/queue.mjs";

function fakeHost({ admitted = true, policy, context } = {}) {
	const tools = [];
	const host = {
		pi: { registerTool: (def) => tools.push(def) },
		hooks: { ...(policy ? { policy } : {}), ...(context ? { context } : {}) },
		agentDir: "/nonexistent",
		admitted,
		// auto: these tests are about the tool itself; the permission gate has its own tests (permission-glue).
		config: () => ({ permissions: { mode: "auto", planSafeTools: [] } }),
		isAdmitted: (name) => name === "apply_patch" && host.admitted,
		lifecycle() {},
		shared: new Map(),
	};
	register(host);
	assert.equal(tools.length, 1);
	return { host, tool: tools[0] };
}

const ws = () => tempDir("pct-tool-");
const exec = (tool, cwd, patch, signal) => tool.execute("call-1", { patch }, signal, undefined, { cwd });

test("definition: one required string parameter, Lark grammar variant, literal minimal envelope", () => {
	const { tool } = fakeHost();
	assert.equal(tool.name, "apply_patch");
	assert.deepEqual(tool.parameters.required, ["patch"]);
	assert.equal(tool.parameters.properties.patch.type, "string");
	assert.deepEqual(Object.keys(tool.parameters.properties), ["patch"]);
	assert.deepEqual(tool.constrainedSampling, { type: "grammar", variants: { openai_lark: APPLY_PATCH_LARK } });
	assert.match(APPLY_PATCH_LARK, /^start: begin_patch hunk\+ end_patch$/m);
	assert.match(APPLY_PATCH_LARK, /^eof_line: "\*\*\* End of File" LF$/m);
	assert.ok(tool.description.includes("*** Begin Patch\n*** Add File: notes/todo.md\n+first line\n*** End Patch"));
});

test("success: result text and details", async () => {
	const { tool } = fakeHost();
	const cwd = ws();
	const r = await exec(tool, cwd, "*** Begin Patch\n*** Add File: notes/todo.md\n+first line\n*** End Patch");
	assert.deepEqual(r, {
		content: [{ type: "text", text: "Applied patch:\n- add notes/todo.md" }],
		details: {
			operations: [
				{
					operation: "add",
					path: "notes/todo.md",
					diff: { text: "+1 first line", added: 1, removed: 0, exact: true, omittedRows: 0, firstChangedLine: 1, beforeLines: 0, afterLines: 1 },
				},
			],
		},
	});
});

test("not admitted: 'Apply Patch is not enabled.' and nothing happens", async () => {
	const { tool } = fakeHost({ admitted: false });
	const cwd = ws();
	await assert.rejects(exec(tool, cwd, "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"), { message: NOT_ENABLED });
	assert.equal(NOT_ENABLED, "Apply Patch is not enabled.");
	assert.equal(existsSync(join(cwd, "a")), false);
});

test("hooks: context then policy, with identity only; a denial fails with its reason and starts nothing", async () => {
	const calls = [];
	const { tool } = fakeHost({
		context: async (call) => (calls.push(["context", call]), { env: { X: "1" } }),
		policy: async (call) => (calls.push(["policy", call]), { allow: false, reason: "patches are reviewed elsewhere" }),
	});
	const cwd = ws();
	await failsAsData(exec(tool, cwd, "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"), "policy-denied", "policy-denied: patches are reviewed elsewhere Nothing was changed.");
	const identity = { tool: "apply_patch", path: "direct", cwd };
	assert.deepEqual(calls, [["context", identity], ["policy", identity]]);
	assert.equal(existsSync(join(cwd, "a")), false);
});

test("admission is re-checked after the policy hook returns", async () => {
	const made = fakeHost({ policy: async () => ((made.host.admitted = false), { allow: true }) });
	const cwd = ws();
	await assert.rejects(exec(made.tool, cwd, "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"), { message: NOT_ENABLED });
	assert.equal(existsSync(join(cwd, "a")), false);
});

test("parse errors come back as the exact text, before the hooks are asked", async () => {
	let asked = 0;
	const { tool } = fakeHost({ policy: async () => (asked++, { allow: true }) });
	const r = await failsAsData(exec(tool, ws(), "*** Begin Patch\n*** Add File: a\n+x\n"), "invalid-patch", "apply_patch failed (no-change): invalid patch: The last line of the patch must be '*** End Patch'");
	assert.equal(r.details.outcome, "no-change");
	assert.equal(asked, 0);
});

test("an aborted signal refuses with the exact text", async () => {
	const { tool } = fakeHost();
	const cwd = ws();
	const ac = new AbortController();
	ac.abort();
	await failsAsData(exec(tool, cwd, "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch", ac.signal), "aborted", "apply_patch failed (no-change): aborted");
	assert.equal(existsSync(join(cwd, "a")), false);
});

test("abort while waiting in the queue: the patch changes nothing", async () => {
	const { tool } = fakeHost();
	const cwd = ws();
	writeFileSync(join(cwd, "f.txt"), "one\n");
	const ac = new AbortController();
	let release;
	const held = withFileMutationQueue(join(cwd, "f.txt"), () => new Promise((r) => (release = r)));
	const queued = queuedAt("/f.txt", cwd);
	const pending = exec(tool, cwd, "*** Begin Patch\n*** Update File: f.txt\n-one\n+two\n*** End Patch", ac.signal);
	await queued;
	ac.abort();
	release();
	await held;
	await failsAsData(pending, "aborted", "apply_patch failed (no-change): aborted");
	assert.equal(readFileSync(join(cwd, "f.txt"), "utf8"), "one\n");
});

test("every touched path is held through Pi's mutation queue until the commit", async () => {
	const { tool } = fakeHost();
	const cwd = ws();
	writeFileSync(join(cwd, "b.txt"), "b\n");
	// Hold the queue of the move destination: the patch must wait for it.
	let release;
	const held = withFileMutationQueue(join(cwd, "z/dest.txt"), () => new Promise((r) => (release = r)));
	const queued = queuedAt("/z/dest.txt", cwd);
	const pending = exec(tool, cwd, "*** Begin Patch\n*** Update File: b.txt\n*** Move to: z/dest.txt\n-b\n+B\n*** End Patch");
	// The patch holds b.txt and is registered behind the destination's holder: it can go no further until release.
	await queued;
	assert.equal(readFileSync(join(cwd, "b.txt"), "utf8"), "b\n", "patch committed while the destination's queue was held");
	release();
	await held;
	const r = await pending;
	assert.equal(r.content[0].text, "Applied patch:\n- move b.txt -> z/dest.txt");
	assert.equal(readFileSync(join(cwd, "z/dest.txt"), "utf8"), "B\n");
});

test("two patches over the same two files in opposite order do not deadlock (sorted queue order)", async () => {
	const { tool } = fakeHost();
	const cwd = ws();
	writeFileSync(join(cwd, "a.txt"), "a\n");
	writeFileSync(join(cwd, "b.txt"), "b\n");
	const [r1, r2] = await Promise.all([
		exec(tool, cwd, "*** Begin Patch\n*** Update File: b.txt\n+b2\n*** Update File: a.txt\n+a2\n*** End Patch"),
		exec(tool, cwd, "*** Begin Patch\n*** Update File: a.txt\n+a3\n*** Update File: b.txt\n+b3\n*** End Patch"),
	]);
	assert.equal(r1.content[0].text, "Applied patch:\n- update b.txt\n- update a.txt");
	assert.equal(r2.content[0].text, "Applied patch:\n- update a.txt\n- update b.txt");
	assert.equal(readFileSync(join(cwd, "a.txt"), "utf8"), "a\na2\na3\n");
	assert.equal(readFileSync(join(cwd, "b.txt"), "utf8"), "b\nb2\nb3\n");
});
