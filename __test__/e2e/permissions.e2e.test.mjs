// The one permission policy through the real Pi (0.87.1 and 1.6.0), offline with the scripted faux model
// (docs/permissions.md): cards of one batch one at a time, a session grant never covering an external path, every
// path an Edit writes decided before it runs, exec_command and nested calls under the same table, other
// extensions' tools through Pi's tool_call event, Plan mode's hard denials, and the plan tools EnterPlanMode and
// SubmitPlan (docs/permissions.md "The plan tools").
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";
import { until } from "../helpers/until.mjs";

const HOST = (mode) => ({ hostTools: { enabled: true }, permissions: { mode, planSafeTools: [] } });

function script(box, steps, imports = "") {
	const src = steps.map((s) => (typeof s === "string" ? s : JSON.stringify(s))).join(",\n");
	return writeScript(box, `${imports}\nexport default [\n${src}\n];`);
}

/** The plan files SubmitPlan left in a workspace, with their bytes. */
function plans(box) {
	const dir = join(box.cwd, ".pi", "plan");
	// `.gitignore` keeps the folder out of git status (docs/permissions.md "The plan tools"): not a plan.
	return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".md")).sort().map((f) => ({ name: f, bytes: readFileSync(join(dir, f)) })) : [];
}

const ends = (r) => r.events.filter((e) => e.type === "tool_execution_end");
const selects = (pi) => pi.uiRequests.filter((q) => q.method === "select");

/** Every audit line of a sandbox, in file order (one file per session). */
function audit(box) {
	const dir = join(box.agentDir, "pi-codex-toolkit", "audit");
	const files = existsSync(dir) ? readdirSync(dir) : [];
	return files.flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l)));
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] two card-needing calls in one assistant message: one card after the other, both resolve`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("ask"));
		const steps = [
			{ tools: [{ name: "Write", args: { path: "a.txt", content: "a\n" } }, { name: "Write", args: { path: "b.txt", content: "b\n" } }] },
			{ text: "done" },
			{ tools: [{ name: "Write", args: { path: "c.txt", content: "c\n" } }, { name: "Write", args: { path: "d.txt", content: "d\n" } }] },
			{ text: "done again" },
		];
		let open = 0;
		let overlapped = false;
		// Per card: whether a second call of its batch is queued behind it (the first card of each batch).
		const plan = [
			{ queued: true, value: "Allow once" },
			{ queued: false, value: "Allow once" },
			{ queued: true, value: "Allow for this session" },
		];
		const failures = [];
		// The footer line the queue keeps while calls wait behind the open card (docs/permissions.md "Cards").
		const queueLine = () => pi.events.filter((e) => e.type === "extension_ui_request" && e.method === "setStatus" && e.statusKey === "pct-cards").at(-1)?.statusText;
		const pi = new RpcPi({
			version,
			box,
			script: script(box, steps),
			ui: async (req) => {
				open++;
				if (open > 1) overlapped = true;
				const card = plan.shift();
				// Hold the first card of a batch until the other call is known to wait in the queue behind it; a card
				// of its own would have opened before that (a bypassed queue never says so, and fails here).
				if (card.queued) {
					try {
						await until(`a second call queued behind "${req.title.split("\n")[0]}"`, () => queueLine() === "1 more call waits for permission");
					} catch (e) {
						failures.push(e.message);
					}
					if (open > 1) overlapped = true;
				} else if (queueLine() !== undefined) failures.push(`a card opened while the queue said "${queueLine()}"`);
				open--;
				return { value: card.value };
			},
		});
		try {
			const first = await pi.prompt("write two");
			assert.deepEqual(ends(first).map((e) => e.isError), [false, false], JSON.stringify(ends(first).map(toolText)));
			assert.deepEqual(failures, []);
			assert.equal(selects(pi).length, 2, "one card per call");
			assert.equal(overlapped, false, "the second card opened only after the first was answered");
			assert.equal(queueLine(), undefined, "the queue line is gone once the queue is empty");
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "a\n");
			assert.equal(readFileSync(join(box.cwd, "b.txt"), "utf8"), "b\n");
			// Allow for this session on the first card of a batch: the queued second call decides again, no card.
			const second = await pi.prompt("write two more");
			assert.deepEqual(ends(second).map((e) => e.isError), [false, false], JSON.stringify(ends(second).map(toolText)));
			assert.deepEqual(failures, []);
			assert.equal(selects(pi).length, 3, "the second call of the batch ran under the session grant");
			assert.equal(overlapped, false);
			assert.equal(queueLine(), undefined);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a session grant never covers an external path; an external card has no session choice`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("ask"));
		const steps = [
			{ tools: [{ name: "Write", args: { path: "notes.txt", content: "n\n" } }] },
			{ tools: [{ name: "Write", args: { path: "../x.txt", content: "x\n" } }] },
			{ tools: [{ name: "Write", args: { path: "more.txt", content: "m\n" } }] },
			{ text: "done" },
		];
		const plan = ["Allow for this session", "Deny"];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: () => ({ value: plan.shift() }) });
		try {
			const r = await pi.prompt("go");
			const e = ends(r);
			assert.deepEqual(e.map((x) => x.isError), [false, true, false], JSON.stringify(e.map(toolText)));
			assert.match(toolText(e[1]), /^TOOL_DENIED: The user denied permission for this Write call/);
			const cards = selects(pi);
			assert.equal(cards.length, 2, "the external path asked although Write was allowed for the session");
			assert.match(cards[1].title, /x\.txt \(outside the workspace: dotdot-escape, a \.\.\/ path that leaves the workspace\)\? \(\+1 -0\)\n\+1 x$/);
			assert.deepEqual(cards[1].options, ["Allow once", "Deny"]);
			assert.equal(existsSync(join(box.base, "x.txt")), false);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] Edit's MV destination is decided as a write: scratch → workspace is denied headless in ask`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("ask"));
		writeFileSync(join(box.cwd, "README.md"), "r\n");
		const auditDir = JSON.stringify(join(box.agentDir, "pi-codex-toolkit", "audit"));
		const scratchRoot = JSON.stringify(join(box.agentDir, "pi-codex-toolkit", "scratch"));
		const steps = [
			{ tools: [{ name: "Read", args: { path: "README.md" } }] },
			`() => { const id = readdirSync(${auditDir})[0].replace(/\\.jsonl$/, ""); globalThis.scratch = join(${scratchRoot}, id); return { tools: [{ name: "Write", args: { path: join(globalThis.scratch, "hook.sh"), content: "echo pwned\\n" } }] }; }`,
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: join(globalThis.scratch, "hook.sh"), tag: ctx.lastToolResults[0].details.tag, ops: "MV hook.sh" } }] })`,
			{ text: "done" },
		];
		const r = await runJson({ version, box, script: script(box, steps, `import { readdirSync } from "node:fs"; import { join } from "node:path";`) });
		assert.equal(r.code, 0, r.stderr);
		const [, write, edit] = r.toolEnds;
		assert.equal(write.isError, false, toolText(write));
		assert.equal(write.result.details.root, "scratch", "scratch writes never ask");
		assert.equal(edit.isError, true);
		assert.match(toolText(edit), /^TOOL_DENIED: Edit needs the user's confirmation in permission mode ask/);
		assert.equal(existsSync(join(box.cwd, "hook.sh")), false, "nothing landed in the workspace");
		const lines = audit(box).filter((l) => l.tool === "Edit");
		assert.deepEqual(lines.map((l) => [l.decision, l.ok]), [["denied-headless", false]]);
	});

	test(`[pi ${version.name}] exec_command: denied headless in ask (nothing runs), allowed once through a card, then allow-session`, async () => {
		const box = sandbox();
		const cfg = { shellSessions: { enabled: true }, permissions: { mode: "ask", planSafeTools: [] } };
		writeConfig(box, cfg);
		writeFileSync(join(box.cwd, "README.md"), "keep\n");
		const rm = { name: "exec_command", args: { cmd: "echo hi; rm -f README.md" } };
		const headless = await runJson({ version, box, script: script(box, [{ tools: [rm] }, { text: "done" }]) });
		assert.equal(headless.code, 0, headless.stderr);
		assert.equal(headless.toolEnds[0].isError, true);
		assert.match(toolText(headless.toolEnds[0]), /^TOOL_DENIED: exec_command needs the user's confirmation in permission mode ask, and this session has no interactive UI to ask\. Permission mode auto would allow it/);
		assert.equal(readFileSync(join(box.cwd, "README.md"), "utf8"), "keep\n", "the command did not run");

		const steps = [
			{ tools: [{ name: "exec_command", args: { cmd: "echo once" } }] },
			{ tools: [{ name: "exec_command", args: { cmd: "echo session" } }] },
			{ tools: [{ name: "exec_command", args: { cmd: "echo granted" } }] },
			{ text: "done" },
		];
		const plan = ["Allow once", "Allow for this session"];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: () => ({ value: plan.shift() }) });
		try {
			const r = await pi.prompt("go");
			const e = ends(r);
			assert.deepEqual(e.map((x) => x.isError), [false, false, false], JSON.stringify(e.map(toolText)));
			assert.match(toolText(e[2]), /granted/);
			const cards = selects(pi);
			assert.equal(cards.length, 2, "the third command ran under the session grant");
			assert.equal(cards[0].title, "Allow exec_command to run a command in the workspace?\n$ echo once");
		} finally {
			await pi.close();
		}
		const lines = audit(box).filter((l) => l.tool === "exec_command");
		assert.deepEqual(lines.map((l) => [l.decision, l.prompted, l.ok]), [
			["denied-headless", false, false],
			["allow-once", true, true],
			["allow-session", true, true],
			["allow-session", false, true],
		]);
	});

	test(`[pi ${version.name}] nested apply_patch from a code cell asks with its direct twin's card`, async () => {
		const box = sandbox();
		writeConfig(box, { codeMode: { enabled: true }, shellSessions: { enabled: true }, applyPatch: { enabled: true }, permissions: { mode: "ask", planSafeTools: [] } });
		const patch = "*** Begin Patch\n*** Add File: nested.txt\n+hi\n*** End Patch";
		const code = `return await tools.apply_patch(${JSON.stringify(patch)}).then(() => "applied", (e) => e.code)`;
		const steps = [{ tools: [{ name: "exec", args: { code } }] }, { tools: [{ name: "exec", args: { code: code.replace("nested.txt", "second.txt") } }] }, { text: "done" }];
		const plan = ["Allow once", "Deny"];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: () => ({ value: plan.shift() }) });
		try {
			const r = await pi.prompt("go");
			const e = ends(r);
			assert.equal(e[0].result.details.result, "applied", toolText(e[0]));
			assert.equal(e[1].result.details.result, "approval-denied", toolText(e[1]));
			const cards = selects(pi);
			assert.equal(cards.length, 2);
			// The direct call's card: the file with its counts and its lines, not the raw envelope.
			assert.match(cards[0].title, /^Allow apply_patch to change nested\.txt\? \(\+1 -0\)\n\(asked by code cell cell-[^)]+\)\nA nested\.txt \+1 -0\n {2}\+ hi$/);
			assert.equal(readFileSync(join(box.cwd, "nested.txt"), "utf8"), "hi\n");
			assert.equal(existsSync(join(box.cwd, "second.txt")), false);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] another extension's tool: an MCP-named tool asks "MCP server tool requires approval"; auto allows it`, async () => {
		const box = sandbox();
		writeConfig(box, { permissions: { mode: "ask", planSafeTools: [] } });
		const ext = join(box.base, "mcp-ext.ts");
		writeFileSync(
			ext,
			`import { Type } from "typebox";\nexport default function (pi: any) {\n\tpi.registerTool({ name: "mcp__docs__search", label: "docs search", description: "search docs", parameters: Type.Object({ q: Type.String() }), execute: async (_id: string, p: any) => ({ content: [{ type: "text", text: "found " + p.q }], details: {} }) });\n}\n`,
		);
		const call = { name: "mcp__docs__search", args: { q: "x" } };
		const steps = [{ tools: [call] }, { tools: [call] }, { text: "done" }];
		const plan = ["Deny", "Allow once"];
		const pi = new RpcPi({ version, box, script: script(box, steps), extensions: [ROOT, ext], ui: () => ({ value: plan.shift() }) });
		try {
			const r = await pi.prompt("go");
			const e = ends(r);
			assert.deepEqual(e.map((x) => x.isError), [true, false], JSON.stringify(e.map(toolText)));
			assert.match(toolText(e[0]), /TOOL_DENIED: The user denied permission for this mcp__docs__search call/);
			assert.equal(toolText(e[1]), "found x");
			const cards = selects(pi);
			assert.equal(cards.length, 2);
			assert.ok(cards[0].title.startsWith("MCP server tool requires approval: allow mcp__docs__search?\n"), cards[0].title);
		} finally {
			await pi.close();
		}
		writeConfig(box, { permissions: { mode: "auto", planSafeTools: [] } });
		const r = await runJson({ version, box, script: script(box, [{ tools: [call] }, { text: "done" }]), extensions: [ROOT, ext] });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(toolText(r.toolEnds[0]), "found x");
		const lines = audit(box).filter((l) => l.tool === "mcp__docs__search");
		assert.deepEqual(lines.map((l) => [l.decision, l.prompted]), [["deny", true], ["allow-once", true], ["allow", false]]);
	});

	test(`[pi ${version.name}] Plan mode: Write/Edit/apply_patch hidden, and refused even in auto before any card when reached (nested), Read allowed, commands run in auto`, async () => {
		const box = sandbox();
		const cfg = (mode) => ({ hostTools: { enabled: true }, shellSessions: { enabled: true }, applyPatch: { enabled: true }, codeMode: { enabled: true }, permissions: { mode, planSafeTools: [] } });
		writeConfig(box, cfg("auto"));
		writeFileSync(join(box.cwd, "a.txt"), "a\n");
		const patch = "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch";
		const nested = `return await tools.apply_patch(${JSON.stringify(patch)}).then(() => "applied", (e) => e.code + " " + e.message)`;
		const steps = [
			{ tools: [{ name: "Write", args: { path: "a.txt", content: "changed\n" } }, { name: "Edit", args: { path: "a.txt", tag: "0000", ops: "REM" } }, { name: "Read", args: { path: "a.txt" } }] },
			{ tools: [{ name: "apply_patch", args: { patch } }] },
			{ tools: [{ name: "exec", args: { code: nested } }] },
			{ tools: [{ name: "exec_command", args: { cmd: "echo planned" } }] },
			{ text: "done" },
		];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: () => ({ value: "Deny" }) });
		try {
			assert.deepEqual((await pi.prompt("/pct mode")).notifications, ["Operation mode: Agent"]);
			const on = await pi.prompt("/pct mode plan");
			assert.match(on.notifications[0], /^Operation mode: Plan\. .*allowed under auto and may still change files \(auto: Plan plans intent, it is not a read-only sandbox/);
			const footer = () => pi.events.filter((ev) => ev.type === "extension_ui_request" && ev.method === "setStatus" && ev.statusKey === "pct-mode").at(-1)?.statusText;
			assert.equal(footer(), "Plan mode (auto: Plan plans intent, it is not a read-only sandbox — commands may still change files)");
			const r = await pi.prompt("go");
			const e = ends(r);
			assert.equal(e.length, 6, JSON.stringify(e.map(toolText)));
			const byName = (n) => e.find((x) => x.toolName === n);
			assert.equal(toolText(byName("Write")), "Tool Write not found", "Write is not in Plan's tool list");
			assert.equal(toolText(byName("Edit")), "Tool Edit not found");
			assert.equal(byName("Read").isError, false);
			assert.equal(toolText(byName("apply_patch")), "Tool apply_patch not found");
			assert.match(String(byName("exec").result.details.result), /^policy-denied EDIT_DISABLED_IN_PLAN: apply_patch is disabled in Plan mode/, toolText(byName("exec")));
			assert.equal(byName("exec_command").isError, false, "auto in Plan: commands run");
			assert.equal(selects(pi).length, 0, "no card: Plan's denials come before any permission UI");
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "a\n");
			assert.equal(existsSync(join(box.cwd, "p.txt")), false);
			assert.deepEqual((await pi.prompt("/pct mode agent")).notifications, ["Operation mode: Agent."]);
			assert.equal(footer(), undefined, "the footer line goes with Plan");
		} finally {
			await pi.close();
		}
		// The direct calls of hidden tools are refused (and audited) by their answer (docs/permissions.md "A hidden
		// tool's answer"), the nested one by the gate.
		const plan = audit(box).filter((l) => l.decision === "denied-plan");
		assert.deepEqual(plan.map((l) => [l.tool, l.errorCode]).sort(), [["Write", "EDIT_DISABLED_IN_PLAN"], ["Edit", "EDIT_DISABLED_IN_PLAN"], ["apply_patch", "EDIT_DISABLED_IN_PLAN"], ["apply_patch", "EDIT_DISABLED_IN_PLAN"]].sort());
	});

	test(`[pi ${version.name}] EnterPlanMode alone switches to Plan (batched it is refused); SubmitPlan writes its file byte for byte; approval returns to Agent with the plan`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("ask"));
		writeFileSync(join(box.cwd, "a.txt"), "a\n");
		const md = "# Plan\r\n\n1. Change `a.txt` — ünïcode\tand tabs\n\n  trailing  \n";
		const steps = [
			{ tools: [{ name: "EnterPlanMode", args: {} }, { name: "Read", args: { path: "a.txt" } }] },
			{ tools: [{ name: "EnterPlanMode", args: {} }] },
			{ tools: [{ name: "Write", args: { path: "a.txt", content: "in plan\n" } }] },
			{ tools: [{ name: "SubmitPlan", args: { plan: md } }] },
			{ tools: [{ name: "Write", args: { path: "a.txt", content: "after approval\n" } }] },
			{ text: "done" },
		];
		const pi = new RpcPi({
			version,
			box,
			script: script(box, steps),
			ui: (req) => ({ value: req.title.startsWith("Approve this plan?") ? "Approve: switch to Agent and carry it out" : "Allow once" }),
		});
		try {
			const r = await pi.prompt("plan it");
			const e = ends(r);
			assert.equal(e.length, 6, JSON.stringify(e.map(toolText)));
			const batched = e.find((x) => x.toolName === "EnterPlanMode");
			assert.equal(batched.isError, true);
			assert.match(toolText(batched), /^PLAN_TOOL_NOT_ALONE: EnterPlanMode must be the only tool call of its assistant message \(it came with 1 other call\(s\)\); nothing changed\./);
			assert.equal(e.find((x) => x.toolName === "Read").isError, false);
			const [entered, inPlan, submitted, after] = e.slice(2);
			assert.equal(entered.isError, false, toolText(entered));
			assert.match(toolText(entered), /^Plan mode is on\. Write, Edit, apply_patch and tools not declared plan-safe are hidden and refused; commands are confirmed per call\./);
			assert.equal(inPlan.isError, true, "Write is gone (hidden or refused) in Plan");
			assert.equal(toolText(inPlan), "Tool Write not found", "hidden in Plan from the next model request on");
			assert.equal(submitted.isError, false, toolText(submitted));
			const files = plans(box);
			assert.equal(files.length, 1);
			assert.match(files[0].name, /^\d+-[0-9a-f]{8}\.md$/);
			assert.ok(files[0].bytes.equals(Buffer.from(md, "utf8")), "the plan is stored byte for byte");
			assert.equal(toolText(submitted), `The user approved the plan (saved as .pi/plan/${files[0].name}). Agent mode is on: carry out this plan now.\n\n${md}`);
			const { traceId, ...details } = submitted.result.details;
			assert.match(traceId, /^pct-[0-9a-f]{16}$/);
			assert.deepEqual(details, { path: `.pi/plan/${files[0].name}`, bytes: Buffer.byteLength(md), approved: true });
			assert.equal(after.isError, false, toolText(after));
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "after approval\n");
			const titles = selects(pi).map((q) => q.title);
			assert.equal(titles.length, 2, JSON.stringify(titles));
			assert.ok(titles[0].startsWith(`Approve this plan? (saved to .pi/plan/${files[0].name})\n# Plan\n`), titles[0]);
			assert.deepEqual(selects(pi)[0].options, ["Approve: switch to Agent and carry it out", "Reject, with a reason"]);
			assert.match(titles[1], /^Allow Write to overwrite a\.txt\?/);
			assert.deepEqual((await pi.prompt("/pct mode")).notifications.at(-1), "Operation mode: Agent");
		} finally {
			await pi.close();
		}
		const lines = audit(box).filter((l) => l.tool === "EnterPlanMode" || l.tool === "SubmitPlan");
		assert.deepEqual(lines.map((l) => [l.tool, l.decision, l.prompted, l.ok]), [["EnterPlanMode", "allow", false, true], ["SubmitPlan", "allow-once", true, true]]);
	});

	test(`[pi ${version.name}] Plan: Bash asks in ask; a rejected plan stays in Plan with the user's reason; SubmitPlan is not offered in Agent`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("ask"));
		const steps = [
			{ tools: [{ name: "SubmitPlan", args: { plan: "# too early" } }] },
			{ text: "ok" },
			{ tools: [{ name: "EnterPlanMode", args: {} }] },
			{ tools: [{ name: "Bash", args: { command: "echo planned" } }] },
			{ tools: [{ name: "SubmitPlan", args: { plan: "# v1" } }] },
			{ text: "revising" },
			{ tools: [{ name: "SubmitPlan", args: { plan: "# v2" } }] },
			{ text: "done" },
		];
		const answers = (req) => {
			if (req.method === "input") return { value: "  split it in two steps  " };
			if (req.title.startsWith("Approve this plan?")) return { value: req.title.includes("# v1") ? "Reject, with a reason" : undefined, cancelled: !req.title.includes("# v1") };
			return { value: "Deny" };
		};
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: answers });
		try {
			const early = ends(await pi.prompt("submit"));
			assert.equal(early[0].isError, true);
			// SubmitPlan is not in Agent's tool list (its own NOT_IN_PLAN_MODE check is the fallback behind that).
			assert.equal(toolText(early[0]), "Tool SubmitPlan not found");
			assert.deepEqual(plans(box), [], "nothing stored in Agent");
			const r = ends(await pi.prompt("plan"));
			const [entered, bash, rejected] = r;
			assert.equal(entered.isError, false, toolText(entered));
			assert.equal(bash.isError, true);
			assert.match(toolText(bash), /^TOOL_DENIED: The user denied permission for this Bash call/);
			assert.equal(rejected.isError, false, toolText(rejected));
			assert.match(toolText(rejected), /^The user rejected the plan \(saved as \.pi\/plan\/[^)]+\): split it in two steps\. Plan mode stays on/);
			assert.equal(rejected.result.details.approved, false);
			assert.deepEqual((await pi.prompt("/pct mode")).notifications.at(-1), "Operation mode: Plan");
			// A session switch to auto turns the footer's "not a read-only sandbox" note on, and back off.
			const footer = () => pi.events.filter((ev) => ev.type === "extension_ui_request" && ev.method === "setStatus" && ev.statusKey === "pct-mode").at(-1)?.statusText;
			assert.equal(footer(), "Plan mode");
			await pi.prompt("/pct permission auto");
			assert.match(footer(), /^Plan mode \(auto: Plan plans intent, it is not a read-only sandbox/);
			await pi.prompt("/pct permission default");
			assert.equal(footer(), "Plan mode");
			const again = ends(await pi.prompt("again"));
			assert.match(toolText(again[0]), /^The user rejected the plan \(saved as [^)]+\) \(the approval was dismissed without an answer\)\. Plan mode stays on/);
			assert.deepEqual(plans(box).map((p) => p.bytes.toString()).sort(), ["# v1", "# v2"], "every submission is a new file");
			const cards = selects(pi).map((q) => q.title);
			assert.match(cards[0], /^Allow Bash to run this command\?\n\$ echo planned\n/, `Bash asks in Plan under ask: ${cards[0]}`);
			assert.equal(pi.uiRequests.filter((q) => q.method === "input").length, 1);
		} finally {
			await pi.close();
		}
		const lines = audit(box).filter((l) => l.tool === "SubmitPlan");
		// The early call in Agent: refused by the mode (docs/permissions.md "A hidden tool's answer"), then two rejections.
		assert.deepEqual(lines.map((l) => [l.decision, l.prompted]), [["denied-plan", false], ["deny", true], ["deny", true]]);
	});

	test(`[pi ${version.name}] headless SubmitPlan: the plan is saved, PLAN_APPROVAL_UNAVAILABLE names it, Plan stays; EnterPlanMode leaves the list in Plan`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("auto"));
		const steps = [
			{ tools: [{ name: "EnterPlanMode", args: {} }] },
			{ tools: [{ name: "EnterPlanMode", args: {} }] },
			{ tools: [{ name: "SubmitPlan", args: { plan: "# headless plan\n" } }] },
			{ tools: [{ name: "SubmitPlan", args: { plan: " \n" } }] },
			{ text: "done" },
		];
		const r = await runJson({ version, box, script: script(box, steps) });
		assert.equal(r.code, 0, r.stderr);
		const [entered, twice, headless, empty] = r.toolEnds;
		assert.equal(entered.isError, false, toolText(entered));
		assert.match(toolText(entered), /allowed under auto and may still change files \(auto: Plan plans intent, it is not a read-only sandbox/);
		assert.equal(toolText(twice), "Tool EnterPlanMode not found", "EnterPlanMode leaves the list in Plan");
		assert.equal(headless.isError, true);
		const files = plans(box);
		assert.equal(files.length, 1);
		assert.equal(files[0].bytes.toString(), "# headless plan\n");
		assert.match(toolText(headless), new RegExp(`^PLAN_APPROVAL_UNAVAILABLE: The plan was saved to \\.pi/plan/${files[0].name}, but this session has no interactive UI`));
		assert.match(toolText(empty), /^PLAN_EMPTY: The plan is empty\. Write the whole plan/);
		assert.equal(plans(box).length, 1, "an empty plan stores nothing");
		const lines = audit(box).filter((l) => l.tool === "SubmitPlan");
		assert.deepEqual(lines.map((l) => [l.decision, l.ok, l.errorCode]), [["denied-headless", false, "PLAN_APPROVAL_UNAVAILABLE"]]);
	});

	test(`[pi ${version.name}] host Write decides inside Pi's file mutation queue: another extension's write to the same file in one message waits for the card`, async () => {
		const box = sandbox();
		// The older key only: other extensions' tools are not gated, so only Write shows a card.
		writeConfig(box, { hostTools: { enabled: true, permissionMode: "ask" } });
		const ext = join(box.base, "append-ext.ts");
		// The append asks for the file's queue, then for the queue of a probe path: Pi registers requests in call order,
		// so when the probe runs the append is registered — running already if nothing held the file, waiting if the
		// Write's card holds it. The probe writes the marker the card waits for (no fixed hold).
		const queued = join(box.base, "append-queued");
		writeFileSync(
			ext,
			`import { Type } from "typebox";\nimport { appendFileSync, writeFileSync } from "node:fs";\nimport { resolve } from "node:path";\nimport { withFileMutationQueue } from "@earendil-works/pi-coding-agent";\nexport default function (pi: any) {\n\tpi.registerTool({ name: "ext_append", label: "append", description: "append a line", parameters: Type.Object({ path: Type.String(), line: Type.String() }), execute: async (_id: string, p: any, _s: any, _u: any, ctx: any) => { const abs = resolve(ctx.cwd, p.path); const appended = withFileMutationQueue(abs, async () => appendFileSync(abs, p.line + "\\n")); await withFileMutationQueue(abs + ".probe", async () => writeFileSync(${JSON.stringify(queued)}, "queued")); await appended; return { content: [{ type: "text", text: "appended" }], details: {} }; } });\n}\n`,
		);
		writeFileSync(join(box.cwd, "shared.txt"), "old\n");
		const steps = [
			{ tools: [{ name: "Write", args: { path: "shared.txt", content: "written\n" } }, { name: "ext_append", args: { path: "shared.txt", line: "appended" } }] },
			{ text: "done" },
		];
		// The card stays open until the append is registered in the queue: without the queue around the decision, the
		// append would have landed by then and the Write would replace it.
		let appendQueuedDuringCard = false;
		const ui = async () => {
			for (const end = Date.now() + 60_000; !existsSync(queued) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
			appendQueuedDuringCard = existsSync(queued);
			return { value: "Allow once" };
		};
		const pi = new RpcPi({ version, box, script: script(box, steps), extensions: [ROOT, ext], ui });
		try {
			const r = await pi.prompt("go");
			assert.ok(appendQueuedDuringCard, "the append asked for the file while the card was open");
			const e = ends(r);
			assert.deepEqual(e.map((x) => x.isError), [false, false], JSON.stringify(e.map(toolText)));
			assert.deepEqual(e.map((x) => x.toolName), ["Write", "ext_append"], "the append finished after the Write");
			assert.equal(selects(pi).length, 1);
			assert.equal(readFileSync(join(box.cwd, "shared.txt"), "utf8"), "written\nappended\n");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] Plan entered through EnterPlanMode survives --session resume: the resumed process hides Write and offers SubmitPlan`, async () => {
		const box = sandbox();
		writeConfig(box, HOST("auto"));
		const sessions = join(box.base, "sessions");
		const first = await runJson({ version, box, persist: true, args: ["--session-dir", sessions], script: script(box, [{ tools: [{ name: "EnterPlanMode", args: {} }] }, { text: "planning" }]) });
		assert.equal(first.code, 0, first.stderr);
		assert.equal(first.toolEnds[0].isError, false, toolText(first.toolEnds[0]));
		const files = readdirSync(sessions, { recursive: true }).filter((f) => String(f).endsWith(".jsonl"));
		assert.equal(files.length, 1, JSON.stringify(files));
		const steps = [{ tools: [{ name: "Write", args: { path: "w.txt", content: "w\n" } }] }, { tools: [{ name: "SubmitPlan", args: { plan: "# resumed\n" } }] }, { text: "done" }];
		const again = await runJson({ version, box, persist: true, args: ["--session", join(sessions, String(files[0]))], script: script(box, steps) });
		assert.equal(again.code, 0, again.stderr);
		const [write, submit] = again.toolEnds;
		assert.equal(toolText(write), "Tool Write not found");
		assert.match(toolText(submit), /^PLAN_APPROVAL_UNAVAILABLE: The plan was saved to \.pi\/plan\//);
		assert.equal(existsSync(join(box.cwd, "w.txt")), false);
		assert.deepEqual(plans(box).map((p) => p.bytes.toString()), ["# resumed\n"]);
	});

	test(`[pi ${version.name}] Plan hides other extensions' tools unless declared plan-safe, and Agent gives them back`, async () => {
		const box = sandbox();
		writeConfig(box, { permissions: { mode: "auto", planSafeTools: ["mcp__docs__lookup"] } });
		const ext = join(box.base, "mcp-ext.ts");
		const tool = (name) => `pi.registerTool({ name: "${name}", label: "${name}", description: "docs", parameters: Type.Object({}), execute: async () => ({ content: [{ type: "text", text: "ran ${name}" }], details: {} }) });`;
		writeFileSync(ext, `import { Type } from "typebox";\nexport default function (pi: any) {\n\t${tool("mcp__docs__search")}\n\t${tool("mcp__docs__lookup")}\n}\n`);
		const calls = { tools: [{ name: "mcp__docs__search", args: {} }, { name: "mcp__docs__lookup", args: {} }] };
		const pi = new RpcPi({ version, box, script: script(box, [calls, { text: "in plan" }, calls, { text: "in agent" }]), extensions: [ROOT, ext] });
		try {
			await pi.prompt("/pct mode plan");
			const plan = ends(await pi.prompt("plan"));
			const text = (r, n) => toolText(r.find((x) => x.toolName === n));
			assert.equal(text(plan, "mcp__docs__search"), "Tool mcp__docs__search not found", "undeclared: hidden in Plan");
			assert.equal(text(plan, "mcp__docs__lookup"), "ran mcp__docs__lookup", "declared plan-safe: stays, and auto allows it");
			await pi.prompt("/pct mode agent");
			const agent = ends(await pi.prompt("agent"));
			assert.equal(text(agent, "mcp__docs__search"), "ran mcp__docs__search", "back in Agent");
			assert.equal(text(agent, "mcp__docs__lookup"), "ran mcp__docs__lookup");
		} finally {
			await pi.close();
		}
	});
}
