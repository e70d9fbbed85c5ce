// The Pi glue of Code Mode (src/pi/tools/code.ts) with a recording host: registration and the freeform grammar,
// the gate, hooks for nested calls (identity, denial, re-check after async hooks), the approval dialog
// (confirm / always / no UI), progress through onUpdate, AbortSignal, and the lifecycle callbacks.
import { failsAsData } from "./helpers/failure.mjs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { withFileMutationQueue } from "@earendil-works/pi-coding-agent";
import { register as registerShell } from "../src/pi/tools/shell.ts";
import { register, CODE_NOT_ENABLED, EXEC_SOURCE_GRAMMAR } from "../src/pi/tools/code.ts";
import { tempDir } from "./helpers/tmp.mjs";
import { queuedAt } from "./helpers/queue.mjs";

function fakeHost({ hooks = {}, admitted = ["exec", "wait", "exec_command", "write_stdin", "apply_patch"], approvalMode = "confirm", mode = "auto", maxCellSeconds } = {}) {
	const tools = new Map();
	const life = {};
	const host = {
		admitted: new Set(admitted),
		approvalMode,
		mode,
		pi: { registerTool: (def) => tools.set(def.name, def) },
		hooks,
		shared: new Map(),
		isAdmitted: (n) => host.admitted.has(n),
		lifecycle: (feature, cb) => (life[feature] = cb),
		config: () => ({ codeMode: { enabled: true, approvalMode: host.approvalMode, maxCellSeconds }, permissions: { mode: host.mode, planSafeTools: [] } }),
	};
	register(host);
	const call = (name, params, { signal, onUpdate, ctx } = {}) =>
		tools.get(name).execute("id", params, signal, onUpdate, ctx ?? { cwd: "/tmp", hasUI: false });
	return { host, tools, life, call };
}

test("registers exec/wait; exec's only required field is code and it carries the freeform grammar", () => {
	const { tools, life } = fakeHost();
	assert.deepEqual([...tools.keys()], ["exec", "wait"]);
	const exec = tools.get("exec");
	assert.deepEqual(exec.parameters.required, ["code"]);
	assert.equal(exec.parameters.properties.code.type, "string");
	assert.deepEqual(exec.constrainedSampling, { type: "grammar", variants: { openai_lark: EXEC_SOURCE_GRAMMAR } });
	assert.equal(tools.get("wait").constrainedSampling, undefined);
	assert.equal(typeof life.codeMode.beforeSwitch, "function");
});

test("gate: not admitted -> the feature's message; refusals come back as errors with the code", async () => {
	const { host, call } = fakeHost();
	host.admitted.delete("exec");
	host.admitted.delete("wait");
	await assert.rejects(call("exec", { code: "return 1" }), { message: CODE_NOT_ENABLED });
	host.admitted.add("exec");
	await assert.rejects(call("wait", { cell_id: 12 }), { message: CODE_NOT_ENABLED });
	host.admitted.add("wait");
	await failsAsData(call("wait", { cell_id: 12 }), "invalid-input", /^invalid-input: /);
	await failsAsData(call("exec", { code: "1", uses: ["bash"] }), "invalid-uses", /^invalid-uses: /);
	const r = await call("exec", { code: "print('hi'); return 2" });
	assert.equal(r.content[0].text, `cell_id ${r.details.cellId}: completed\n[output]\nhi\n[result]\n2`);
	assert.equal(r.details.cell_id, r.details.cellId);
	assert.equal(r.details.text, undefined, "the text is the content, not repeated in details");
});

test("nested hooks: identity-only call, policy denial reason, re-check after an async hook", async () => {
	const seen = [];
	let deny = false;
	let beforeReturn = () => {};
	const hooks = {
		context: async (c) => (seen.push(["context", c]), { env: { X: "1" } }),
		policy: async (c) => {
			seen.push(["policy", c]);
			await beforeReturn();
			return deny ? { allow: false, reason: "not today" } : { allow: true };
		},
	};
	const { host, call } = fakeHost({ hooks });
	deny = true;
	let r = await call("exec", { code: "return await tools.write_stdin({session_id: 'pct-shell-9'}).catch((e) => e.code + ': ' + e.message)" }, { ctx: { cwd: "/work/here" } });
	assert.equal(r.details.result, "policy-denied: not today Nothing was started.");
	assert.deepEqual(seen[0], ["context", { tool: "write_stdin", path: "nested", cwd: "/work/here", cellId: r.details.cellId, sessionId: "pct-shell-9" }]);
	assert.deepEqual(seen[1][0], "policy");
	// The capability is disabled while the hook runs: the call is refused after it returns.
	deny = false;
	beforeReturn = () => host.admitted.delete("exec_command");
	r = await call("exec", { code: "return await tools.exec_command({cmd: 'true'}).catch((e) => e.code)" });
	assert.equal(r.details.result, "adapter-disabled");
	// A throwing hook denies instead of crashing.
	hooks.policy = async () => {
		throw new Error("boom");
	};
	host.admitted.add("exec_command");
	r = await call("exec", { code: "return await tools.exec_command({cmd: 'true'}).catch((e) => e.code + ': ' + e.message)" });
	assert.match(r.details.result, /^policy-denied: The invocation hook failed \(boom\)/);
});

test("nested calls get their direct twin's permission card: ask shows it, no UI is approval-unavailable, auto skips it", async () => {
	const { host, call } = fakeHost({ mode: "ask" });
	const asked = [];
	const ui = { select: async (title, options) => (asked.push([title, options]), "Deny") };
	const patch = "*** Begin Patch\n*** Add File: a.txt\n+" + "y".repeat(1000) + "\n*** End Patch";
	let r = await call("exec", { code: `return await tools.apply_patch(${JSON.stringify(patch)}).then(() => 'applied', (e) => e.code)` }, { ctx: { cwd: "/tmp", hasUI: true, ui } });
	assert.equal(r.details.result, "approval-denied");
	assert.equal(asked.length, 1);
	assert.deepEqual(asked[0][1], ["Allow once", "Allow for this session", "Deny"]);
	assert.ok(asked[0][0].startsWith(`Allow apply_patch to change the workspace?\n(asked by code cell ${r.details.cellId})\n*** Begin Patch\n*** Add File: a.txt\n+yyy`), asked[0][0]);
	// A nested command asks too, and a nested poll does not.
	r = await call("exec", { code: "return await tools.exec_command({cmd: 'echo hi'}).then(() => 'ran', (e) => e.code)" }, { ctx: { cwd: "/tmp", hasUI: true, ui } });
	assert.equal(r.details.result, "approval-denied");
	assert.match(asked[1][0], /^Allow exec_command to run a command in the workspace\?\n\(asked by code cell [^)]+\)\n\$ echo hi$/, "the command as the direct card shows it, not JSON");
	r = await call("exec", { code: "return await tools.write_stdin({session_id: 'pct-shell-none'}).then(() => 'ran', (e) => e.code)" }, { ctx: { cwd: "/tmp", hasUI: true, ui } });
	assert.notEqual(r.details.result, "approval-denied");
	assert.equal(asked.length, 2, "a poll is low risk: no card");
	r = await call("exec", { code: `return await tools.apply_patch(${JSON.stringify(patch)}).then(() => 'applied', (e) => e.code + ': ' + e.message)` }, { ctx: { cwd: "/tmp", hasUI: false } });
	assert.match(r.details.result, /^approval-unavailable: TOOL_DENIED: apply_patch needs the user's confirmation in permission mode ask/);
	host.mode = "auto";
	r = await call("exec", { code: `return await tools.apply_patch('*** Begin Patch\\n*** End Patch').then(() => 'applied', (e) => e.code)` }, { ctx: { cwd: "/nonexistent-dir", hasUI: true, ui } });
	assert.equal(asked.length, 2, "auto: no card");
	assert.notEqual(r.details.result, "approval-denied");
	assert.notEqual(r.details.result, "approval-unavailable");
});

test("progress goes through onUpdate with names and ids only", async () => {
	const { call } = fakeHost({ hooks: { policy: async () => ({ allow: false, reason: "no" }) } });
	const updates = [];
	const r = await call("exec", { code: "await tools.exec_command({cmd: 'secret'}).catch(() => {})" }, { onUpdate: (u) => updates.push(u) });
	// Progress callbacks are non-blocking: poll until both records arrived (bounded), never a fixed delay.
	for (const t = Date.now(); updates.length < 2 && Date.now() - t < 20000; ) await new Promise((res) => setTimeout(res, 2));
	await new Promise((res) => setImmediate(res));
	assert.deepEqual(updates.map((u) => u.content[0].text), [
		`cell ${r.details.cellId}: exec_command started`,
		`cell ${r.details.cellId}: exec_command failed (policy-denied)`,
	]);
	assert.ok(!JSON.stringify(updates).includes("secret"));
});

test("exec passes codeMode.maxCellSeconds to the engine (the limit that stops runaway cells)", async () => {
	// The engine checks the range: a value only the glue could have passed shows it arrived.
	await failsAsData(fakeHost({ maxCellSeconds: 5 }).call("exec", { code: "return 1" }), "invalid-limit", /maxCellSeconds must be a whole number from 10 to 86400/);
	const ok = await fakeHost({ maxCellSeconds: 10 }).call("exec", { code: "return 1" });
	assert.equal(ok.details.status, "completed");
	const dflt = await fakeHost().call("exec", { code: "return 2" });
	assert.equal(dflt.details.status, "completed", "no config value: the engine's default");
});

test("Pi's AbortSignal terminates the cell; an already aborted signal starts nothing", async () => {
	const { call, life } = fakeHost({ hooks: { policy: async () => ({ allow: false, reason: "no" }) } });
	const ac = new AbortController();
	// The cell reports its (denied) nested call, then spins: the first progress record proves it runs, and the abort
	// comes then, not after a guessed delay.
	const p = call("exec", { code: "await tools.exec_command({cmd: 'x'}).catch(() => {}); while (true) {}", yield_time_ms: 60000 }, { signal: ac.signal, onUpdate: () => ac.abort() });
	const running = await failsAsData(p, "aborted", /^aborted: /);
	assert.doesNotMatch(running.content[0].text, /before it started/, "the abort reached a running cell");
	await failsAsData(call("exec", { code: "return 1" }, { signal: AbortSignal.abort() }), "aborted", /^aborted: The call was cancelled before it started/);
	assert.equal(await life.codeMode.beforeSwitch(), true);
});

test("lifecycle: switch preflight terminates cells; shutdown closes and a fresh manager serves the next call", async () => {
	const { call, life } = fakeHost();
	const r = await call("exec", { code: "while (true) {}", yield_time_ms: 0 });
	assert.equal(r.details.status, "running");
	assert.equal(await life.codeMode.beforeSwitch(), true);
	await failsAsData(call("wait", { cell_id: r.details.cellId }), "stale-cell", /^stale-cell: /);
	await life.codeMode.disabled();
	await life.codeMode.shutdown();
	const again = await call("exec", { code: "return 'fresh'" });
	assert.equal(again.details.result, "fresh");
	await life.codeMode.shutdown();
});

test("a nested patch waits for Pi's file mutation queue of the paths it touches (same ordering as edit/write)", async () => {
	const { call, host } = fakeHost({ approvalMode: "always" });
	host.approvalMode = "always";
	const dir = tempDir("pct-code-queue-");
	const target = join(dir, "queued.txt");
	let releaseHold;
	const holding = new Promise((r) => (releaseHold = r));
	const hold = withFileMutationQueue(target, () => holding);
	const queued = queuedAt("/queued.txt", dir);
	const run = call("exec", { code: 'return (await tools.apply_patch("*** Begin Patch\\n*** Add File: queued.txt\\n+late\\n*** End Patch")).text' }, { ctx: { cwd: dir, hasUI: false } });
	// The nested patch asked for the file's queue and is registered behind Pi's holder: it cannot run until release.
	await queued;
	assert.equal(existsSync(target), false, "the patch must not run while Pi holds the file");
	releaseHold();
	await hold;
	const r = await run;
	assert.equal(r.details.result, "Applied patch:\n- add queued.txt");
	assert.equal(readFileSync(target, "utf8"), "late\n");
});

test("a nested patch fails closed when Pi's file mutation queue cannot be taken (nothing changed)", async () => {
	const { call, host, life } = fakeHost({ approvalMode: "always" });
	host.approvalMode = "always";
	const dir = tempDir("pct-code-queue-fail-");
	// realpath of a path under a self-referencing symlink fails with ELOOP: Pi's queue rejects.
	symlinkSync("loop", join(dir, "loop"));
	const code = 'return await tools.apply_patch("*** Begin Patch\\n*** Add File: loop/x.txt\\n+x\\n*** Add File: ok.txt\\n+ok\\n*** End Patch").then(() => "ran", e => e.code + ": " + e.message)';
	const r = await call("exec", { code }, { ctx: { cwd: dir, hasUI: false } });
	assert.match(r.details.result, /^unavailable: apply_patch failed: Pi's file mutation queue could not be taken/);
	assert.equal(existsSync(join(dir, "ok.txt")), false, "nothing was written");
	// The queue of the other path is free again: Pi's own mutation of it runs.
	assert.equal(await withFileMutationQueue(join(dir, "ok.txt"), async () => "free"), "free");
	await life.codeMode.shutdown();
});

test("leases a nested patch still holds are released by the codeMode lifecycle (disabled, beforeSwitch, shutdown)", { timeout: 60000 }, async () => {
	// The glue's view of the addon (a mutable copy: index.js is an ES module, its namespace is read-only).
	const { native: addon } = await import("../src/pi/native.ts");
	const Original = addon.CodeManager;
	let gate;
	addon.CodeManager = class extends Original {
		constructor(g) {
			super(g);
			gate = g;
		}
	};
	try {
		for (const phase of ["disabled", "beforeSwitch", "shutdown"]) {
			const { call, life, host } = fakeHost();
			await call("exec", { code: "return 1" }); // creates the manager, capturing its gate
			const dir = tempDir("pct-code-lease-");
			const file = join(dir, "held.txt");
			// A lock whose unlock never arrives (failed callback, dropped task).
			const ans = await gate({ phase: "lock", tool: "apply_patch", cellId: "1", cwd: dir, paths: [file] });
			assert.equal(ans.allow, true);
			assert.match(ans.lease, /^lease-/);
			assert.equal(host.shared.get("code.heldLeases")(), 1);
			await life.codeMode[phase]();
			assert.equal(host.shared.get("code.heldLeases")(), 0, phase);
			// Pi's own mutation of the path runs (it would wait forever on a leaked lease).
			assert.equal(await withFileMutationQueue(file, async () => "ran"), "ran", phase);
			await life.codeMode.shutdown();
		}
	} finally {
		addon.CodeManager = Original;
	}
});

test("nested shell calls go to the shell manager the Shell glue published", async () => {
	const tools = new Map();
	const host = {
		pi: { registerTool: (def) => tools.set(def.name, def) },
		hooks: {},
		shared: new Map(),
		isAdmitted: () => true,
		lifecycle: () => {},
		config: () => ({ codeMode: { enabled: true, approvalMode: "confirm" }, permissions: { mode: "auto", planSafeTools: [] } }),
	};
	registerShell(host);
	register(host);
	const ctx = { cwd: process.cwd(), hasUI: false };
	const r = await tools.get("exec").execute("id", { code: "const a = await tools.exec_command({cmd: 'sleep 30', yield_time_ms: 0}); return a.sessionId" }, undefined, undefined, ctx);
	const sid = r.details.result;
	assert.match(sid, /^pct-shell-/);
	// The direct write_stdin reaches the same session.
	const w = await tools.get("write_stdin").execute("id", { session_id: sid, terminate: true }, undefined, undefined, ctx);
	assert.match(w.content[0].text, new RegExp(`^session_id ${sid}: terminated`));
});

// A cell stuck in one native operation (no interrupt check) for longer than the 5 s stop window: a substring search
// of a wide needle in a narrow haystack (~5e9 character comparisons, well over 5 s; it then ends on its own). It
// prints first, so the test knows the program runs before it asks for a stop.
const STUCK = "print('entered'); const h = 'a'.repeat(5e5); return h.indexOf('a'.repeat(1e4) + '\\u0100')";

test("cleanup-incomplete: new cells are refused, the Apply error is published, and retry recovers once the cell ends", { timeout: 180000 }, async () => {
	const { call, life, host } = fakeHost();
	const applyError = host.shared.get("code.applyError");
	assert.equal(applyError(), null);
	// The stop must arrive while the cell is inside the native search. A stop that lands between the print and the
	// search is honoured at once (the interrupt check runs there), so such an attempt is started again (bounded).
	let r;
	let vetoed = false;
	for (let attempt = 0; attempt < 5 && !vetoed; attempt++) {
		r = await call("exec", { code: STUCK, yield_time_ms: 0 });
		assert.equal(r.details.status, "running");
		let seen = r.content[0].text;
		const t0 = Date.now();
		while (!seen.includes("entered")) {
			assert.ok(Date.now() - t0 < 60000, "the cell never started");
			seen += (await call("wait", { cell_id: r.details.cellId, yield_time_ms: 100 })).content[0].text;
		}
		// Before: the veto was all; a new cell started and nothing was reported on the Apply error line.
		vetoed = (await life.codeMode.beforeSwitch()) === false;
	}
	assert.ok(vetoed, "the stuck cell was never caught inside its native search in 5 attempts");
	assert.match(applyError(), new RegExp(`^cleanup-incomplete \\(Cells ${r.details.cellId} did not confirm that they stopped`));
	assert.equal(host.shared.get("code.cleanupPending")(), true);
	await failsAsData(call("exec", { code: "return 1" }), "cleanup-incomplete", /^cleanup-incomplete: Code Mode cleanup is incomplete: cells cell-[0-9a-f]+ .*\/pct reload/);
	// The kept cell is still reachable with wait.
	const kept = await call("wait", { cell_id: r.details.cellId, yield_time_ms: 0 });
	assert.equal(kept.details.cellId, r.details.cellId);
	// Reload / model change run the retry callback; once the thread ended the cleanup succeeds (bounded polling).
	const t = Date.now();
	while (applyError() !== null) {
		assert.ok(Date.now() - t < 170000, "the stuck cell never ended");
		await life.codeMode.retry();
		if (applyError() !== null) await new Promise((res) => setTimeout(res, 200));
	}
	assert.equal(host.shared.get("code.cleanupPending")(), false);
	const again = await call("exec", { code: "return 'again'" });
	assert.equal(again.details.result, "again");
	await life.codeMode.shutdown();
});
