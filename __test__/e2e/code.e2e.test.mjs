// Code Mode (exec / wait) in the real Pi, both supported versions, offline with the scripted faux model.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";

// Permission mode auto: these tests are about cells; nested calls under ask are tested below and in
// permissions.e2e.test.mjs (docs/permissions.md "Code cells").
const CONFIG = { codeMode: { enabled: true, approvalMode: "confirm" }, shellSessions: { enabled: true }, applyPatch: { enabled: true }, permissions: { mode: "auto", planSafeTools: [] } };
const ASK = { ...CONFIG, permissions: { mode: "ask", planSafeTools: [] } };

function setup(script, config = CONFIG) {
	const box = sandbox("pct-code-e2e-");
	writeConfig(box, config);
	return { box, script: writeScript(box, script) };
}

const PATCH = (name, line) => `*** Begin Patch\n*** Add File: ${name}\n+${line}\n*** End Patch`;

for (const version of PI_VERSIONS) {
	test(`${version.name}: a cell prints and returns`, async () => {
		const { box, script } = setup(`export default [
			{ tools: [{ name: "exec", args: { code: "print('hello from', 'cell'); text('t'); return {answer: 6 * 7}" } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.toolEnds.length, 1);
		const end = r.toolEnds[0];
		assert.equal(end.isError, false);
		const id = end.result.details.cellId;
		assert.equal(toolText(end), `cell_id ${id}: completed\n[output]\nhello from cell\nt\n[result]\n{"answer":42}`);
	});

	test(`${version.name}: a yielded cell continues with wait`, async () => {
		const { box, script } = setup(`export default [
			// The cell cannot finish before the next step creates "go" (a held gate, not a race against a timer).
			{ tools: [{ name: "exec", args: { code: "print('start'); await tools.exec_command({cmd: 'while [ ! -f go ]; do sleep 0.05; done', yield_time_ms: 60000}); print('end'); return 'finished'", yield_time_ms: 20 } }] },
			(ctx) => ((cellId = ctx.lastToolResults[0].details.cellId), { tools: [{ name: "exec_command", args: { cmd: "touch go" } }] }),
			() => ({ tools: [{ name: "wait", args: { cell_id: cellId, yield_time_ms: 60000 } }] }),
			{ text: "done" },
		];
		let cellId;`);
		const r = await runJson({ version, box, script });
		assert.equal(r.code, 0, r.stderr);
		const [first, touch, second] = r.toolEnds;
		assert.equal(touch.toolName, "exec_command");
		const id = first.result.details.cellId;
		assert.ok(toolText(first).startsWith(`Script running with cell ID ${id}.\ncell_id ${id}: running`), toolText(first));
		assert.equal(second.toolName, "wait");
		assert.equal(second.result.details.status, "completed");
		// "start" is in whichever read came first after it was printed (load decides); "end" only after the gate.
		assert.match(toolText(second), /\[output\]\n(start\n)?end\n\[result\]\nfinished$/);
		assert.equal(`${toolText(first)}\n${toolText(second)}`.split("start\n").length, 2, "start is shown exactly once");
	});

	test(`${version.name}: wait terminate stops a busy loop`, async () => {
		const { box, script } = setup(`export default [
			{ tools: [{ name: "exec", args: { code: "while (true) {}", yieldTimeMs: 50 } }] },
			(ctx) => ({ tools: [{ name: "wait", args: { cellId: ctx.lastToolResults[0].details.cellId, terminate: true } }] }),
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.toolEnds[0].result.details.status, "running");
		const w = r.toolEnds[1];
		assert.equal(w.result.details.status, "terminated");
		assert.match(toolText(w), /^cell_id cell-[0-9a-f]+: terminated/);
	});

	test(`${version.name}: aborting the turn (Pi's signal) terminates a busy cell`, { timeout: 120000 }, async () => {
		const { box, script } = setup(`export default [
			// The nested call's progress proves the cell is running before the abort (tool_execution_start comes
			// before execute, so an abort right after it could land before the cell exists).
			{ tools: [{ name: "exec", args: { code: "await tools.exec_command({cmd: 'true'}); print('spinning'); while (true) {}", yield_time_ms: 60000 } }] },
			{ text: "after abort" },
			{ text: "after abort" },
		];`);
		const pi = new RpcPi({ version, box, script });
		try {
			const started = pi.waitFor((r) => r.type === "tool_execution_update", 60000);
			const ended = pi.waitFor((r) => r.type === "tool_execution_end", 60000);
			await pi.command("prompt", { message: "run it" });
			await started;
			await pi.command("abort");
			const end = await ended;
			assert.equal(end.isError, true);
			assert.match(toolText(end), /^aborted: The call was cancelled; cell cell-[0-9a-f]+ was terminated/);
		} finally {
			await pi.close();
		}
	});

	test(`${version.name}: nested exec_command + write_stdin + apply_patch from one cell (permission mode auto)`, async () => {
		const box = sandbox("pct-code-e2e-");
		writeConfig(box, { ...CONFIG, codeMode: { enabled: true, approvalMode: "always" } });
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec", args: { code: ${JSON.stringify(`
				const a = await tools.exec_command({cmd: "read line; echo got:$line", yield_time_ms: 50});
				const b = await tools.write_stdin({session_id: a.sessionId, chars: "ping\\n", yield_time_ms: 5000});
				const p = await tools.apply_patch(${JSON.stringify(PATCH("made.txt", "from the cell"))});
				return {first: a.status, second: b.status, out: b.stdout, patched: p.text ?? p};
			`)} } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script });
		assert.equal(r.code, 0, r.stderr);
		const end = r.toolEnds[0];
		assert.equal(end.result.details.status, "completed", toolText(end));
		const res = JSON.parse(end.result.details.result);
		assert.equal(res.first, "running");
		assert.equal(res.second, "completed");
		assert.equal(res.out, "got:ping\n");
		assert.match(String(res.patched), /add made\.txt/);
		assert.equal(readFileSync(join(box.cwd, "made.txt"), "utf8"), "from the cell\n");
		assert.match(toolText(end), /nested calls: 3 completed, 0 failed, 0 cancelled before dispatch, 0 unsettled/);
		// Progress went through onUpdate: names and ids only.
		const progress = r.events.filter((e) => e.type === "tool_execution_update").map((e) => e.partialResult?.details?.progress).filter(Boolean);
		assert.deepEqual(progress.map((p) => `${p.event}:${p.tool}`), ["start:exec_command", "end:exec_command", "start:write_stdin", "end:write_stdin", "start:apply_patch", "end:apply_patch"]);
		assert.ok(progress.every((p) => p.cellId === end.result.details.cellId));
		assert.ok(!JSON.stringify(progress).includes("ping"), "never arguments");
	});

	test(`${version.name}: embedder hooks see nested calls (identity only) and may deny them`, async () => {
		const box = sandbox("pct-code-e2e-");
		writeConfig(box, CONFIG);
		const hookLog = join(box.base, "hooks.jsonl");
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec", args: { code: ${JSON.stringify(`
				const denied = await tools.exec_command({cmd: "echo hi"}).then(() => "ran", (e) => e.code + ": " + e.message);
				return denied;
			`)} } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script, extensions: [join(ROOT, "__test__/fixtures/code-hooks-ext.ts")], env: { PCT_HOOK_LOG: hookLog, PCT_DENY_NESTED_SHELL: "1" } });
		assert.equal(r.code, 0, r.stderr);
		const end = r.toolEnds[0];
		assert.equal(end.result.details.result, "policy-denied: nested shells are off in this embedder Nothing was started.", toolText(end));
		const calls = readFileSync(hookLog, "utf8").trim().split("\n").map((l) => JSON.parse(l));
		assert.deepEqual(calls.map((c) => c.kind), ["context", "policy"]);
		assert.deepEqual(calls[1].call, { tool: "exec_command", path: "nested", cwd: box.cwd, cellId: end.result.details.cellId });
	});

	test(`${version.name}: nested apply_patch without a UI is approval-unavailable and changes nothing`, async () => {
		const { box, script } = setup(`export default [
			{ tools: [{ name: "exec", args: { code: ${JSON.stringify(`return await tools.apply_patch(${JSON.stringify(PATCH("nope.txt", "x"))}).then(() => 'applied', (e) => e.code)`)} } }] },
			{ text: "done" },
		];`, ASK);
		const r = await runJson({ version, box, script });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.toolEnds[0].result.details.result, "approval-unavailable", toolText(r.toolEnds[0]));
		assert.equal(existsSync(join(box.cwd, "nope.txt")), false);
	});

	test(`${version.name}: nested apply_patch approval in RPC mode (yes, then no)`, async () => {
		const { box, script } = setup(`export default [
			{ tools: [{ name: "exec", args: { code: ${JSON.stringify(`
				const yes = await tools.apply_patch(${JSON.stringify(PATCH("yes.txt", "approved"))}).then(() => 'applied', (e) => e.code);
				const no = await tools.apply_patch({patch: ${JSON.stringify(PATCH("no.txt", "declined"))}}).then(() => 'applied', (e) => e.code);
				return [yes, no];
			`)} } }] },
			{ text: "done" },
		];`, ASK);
		const answers = ["Allow once", "Deny"];
		const pi = new RpcPi({ version, box, script, ui: (req) => (req.method === "select" ? { value: answers.shift() } : { cancelled: true }) });
		try {
			const out = await pi.prompt("go", 120000);
			const end = out.events.find((e) => e.type === "tool_execution_end");
			assert.ok(end, "exec ran");
			assert.equal(end.result.details.result, '["applied","approval-denied"]', toolText(end));
			const cards = pi.uiRequests.filter((q) => q.method === "select");
			assert.equal(cards.length, 2);
			assert.ok(cards[0].title.startsWith(`Allow apply_patch to change yes.txt? (+1 -0)\n(asked by code cell ${end.result.details.cellId})\nA yes.txt +1 -0\n  + approved`), cards[0].title);
			assert.equal(readFileSync(join(box.cwd, "yes.txt"), "utf8"), "approved\n");
			assert.equal(existsSync(join(box.cwd, "no.txt")), false);
		} finally {
			await pi.close();
		}
	});
}

for (const version of PI_VERSIONS) {
	test(`${version.name}: /pct status shows Code Mode configured on and effective active`, async () => {
		const box = sandbox("pct-code-e2e-");
		writeConfig(box, CONFIG);
		const pi = new RpcPi({ version, box });
		try {
			const { notifications } = await pi.prompt("/pct status all");
			assert.match(notifications.join("\n"), /^Code Mode\n  configured: on\n  effective: active$/m);
		} finally {
			await pi.close();
		}
	});
}

test("exec is refused while Code Mode is off (the tools stay inactive)", async () => {
	const version = PI_VERSIONS[PI_VERSIONS.length - 1];
	const box = sandbox("pct-code-e2e-");
	writeConfig(box, { codeMode: { enabled: false } });
	const script = writeScript(box, `export default [
		{ tools: [{ name: "exec", args: { code: "return 1" } }] },
		{ text: "done" },
	];`);
	const r = await runJson({ version, box, script });
	assert.equal(r.code, 0, r.stderr);
	assert.equal(r.toolEnds[0].isError, true);
	assert.doesNotMatch(toolText(r.toolEnds[0]), /cell_id/);
});

// A cell stuck in one native operation (no interrupt check) for longer than the 5 s stop window (a wide needle searched
// in a narrow haystack: ~5e9 character comparisons; it then ends on its own).
const STUCK_CELL = "const h = 'a'.repeat(5e5); return h.indexOf('a'.repeat(1e4) + '\\u0100')";
const CLEANUP_SCRIPT = `
const step = (ctx) => {
	const last = ctx.messages.at(-1);
	if (last?.role === "toolResult") return { text: "ok" };
	const text = JSON.stringify(last?.content ?? "");
	if (text.includes("stuck")) return { tools: [{ name: "exec", args: { code: ${JSON.stringify(STUCK_CELL)}, yield_time_ms: 0 } }] };
	return { tools: [{ name: "exec", args: { code: "return 'fresh cell'" } }] };
};
export default Array(40).fill(step);`;

test("an unconfirmed Code Mode cleanup refuses new cells, shows on the Apply error line and is retried by /pct reload", { timeout: 180000 }, async () => {
	const version = PI_VERSIONS[PI_VERSIONS.length - 1];
	const box = sandbox("pct-code-e2e-");
	writeConfig(box, CONFIG);
	const pi = new RpcPi({ version, box, script: writeScript(box, CLEANUP_SCRIPT) });
	const status = async () => (await pi.prompt("/pct status all")).notifications.join("\n");
	const lastTool = (events) => events.filter((e) => e.type === "tool_execution_end").at(-1);
	try {
		const started = lastTool((await pi.prompt("stuck")).events);
		assert.equal(started.result.details.status, "running", toolText(started));
		const cellId = started.result.details.cellId;
		// The switch preflight cannot confirm the stop within 5 s: it vetoes.
		const veto = await pi.command("new_session", {}, 60000);
		assert.equal(veto.data?.cancelled, true, JSON.stringify(veto));
		assert.match(await status(), new RegExp(`^Apply error: cleanup-incomplete \\(Cells ${cellId} did not confirm that they stopped`, "m"));
		const refused = lastTool((await pi.prompt("new cell")).events);
		assert.equal(refused.isError, true);
		assert.match(toolText(refused), /^cleanup-incomplete: Code Mode cleanup is incomplete/);
		// /pct reload retries the cleanup; once the stuck operation ended it succeeds (bounded polling).
		const t = Date.now();
		for (;;) {
			await pi.prompt("/pct reload");
			await new Promise((r) => setTimeout(r, 500));
			if (!/^Apply error:/m.test(await status())) break;
			assert.ok(Date.now() - t < 150000, "the stuck cell never ended");
		}
		const fresh = lastTool((await pi.prompt("new cell")).events);
		assert.equal(fresh.isError, false, toolText(fresh));
		assert.match(toolText(fresh), /\[result\]\nfresh cell$/);
	} finally {
		await pi.close();
	}
});
