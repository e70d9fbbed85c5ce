// Where the policy reaches, through the real Pi (0.87.1 and 1.6.0), offline with the scripted faux model
// (docs/permissions.md "Pi's own tools in Plan", "Whose tool is it", "What Plan hides"; docs/agents.md "The live
// policy", "Plan mode"): Pi's own bash is confirmed in Plan, another extension's `find` is a foreign tool, the plan
// tools are callable whenever their mode allows them, a tool the mode hides answers with the mode's code and how
// Plan ends, the plan file stays out of `git status`, and running delegates follow the session's live policy.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";
import { until } from "../helpers/until.mjs";

const SQUATTER = join(ROOT, "__test__/fixtures/name-squatter.ts");

function script(box, steps) {
	return writeScript(box, `export default [\n${steps.map((s) => (typeof s === "string" ? s : JSON.stringify(s))).join(",\n")}\n];`);
}

/** Every audit line of a sandbox, in file order. */
function audit(box) {
	const dir = join(box.agentDir, "pi-codex-toolkit", "audit");
	const files = existsSync(dir) ? readdirSync(dir) : [];
	return files.flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)));
}

const ends = (events) => events.filter((e) => e.type === "tool_execution_end");
/** The tool results as the model reads them (the messages Pi stores), by tool name. */
const results = (events) => events.filter((e) => e.type === "message_end" && e.message?.role === "toolResult").map((e) => ({ tool: e.message.toolName, isError: e.message.isError, text: e.message.content.map((c) => c.text ?? "").join("\n") }));
const selects = (pi) => pi.uiRequests.filter((q) => q.method === "select");

/** Every delegate process of this sandbox (the delegates inherit its agent dir). */
function delegatesOf(box) {
	const out = [];
	for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
		try {
			const env = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
			if (env.some((e) => e.startsWith("PCT_DELEGATE_NAME=")) && env.includes(`PI_CODING_AGENT_DIR=${box.agentDir}`)) out.push(Number(pid));
		} catch {
			// gone, or not ours
		}
	}
	return out;
}

function define(box, name, front) {
	const dir = join(box.agentDir, "agents");
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, `${name}.md`), `---\nname: ${name}\n${front}\n---\nYou do what you are told.\n`);
}

/** A delegate step that waits (bounded) until the test creates `file`, then calls `tools`. */
const afterMarker = (file, tools) =>
	`async () => { const { existsSync } = await import("node:fs"); const end = Date.now() + 60000; while (!existsSync(${JSON.stringify(file)}) && Date.now() < end) await new Promise((r) => setTimeout(r, 50)); return { tools: ${JSON.stringify(tools)} }; }`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] Plan covers Pi's own tools: with the host tools off, Pi's bash is confirmed per call in ask (and runs in auto), Pi's write is refused, Pi's read runs; each is audited`, async () => {
		const box = sandbox();
		writeConfig(box, { permissions: { mode: "ask", planSafeTools: [] } });
		writeFileSync(join(box.cwd, "a.txt"), "a\n");
		const bash = (file) => ({ name: "bash", args: { command: `echo planned > ${file}` } });
		const steps = [
			{ tools: [bash("denied.txt")] },
			{ tools: [{ name: "write", args: { path: "w.txt", content: "w\n" } }] },
			{ tools: [{ name: "read", args: { path: "a.txt" } }] },
			{ text: "planned" },
			{ tools: [bash("auto.txt")] },
			{ text: "done" },
		];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: () => ({ value: "Deny" }) });
		try {
			await pi.prompt("/pct mode plan");
			const r = await pi.prompt("plan");
			// What the model reads: Pi's write is hidden in Plan, and its call answers with the mode's code.
			const e = results(r.events);
			assert.deepEqual(e.map((x) => [x.tool, x.isError]), [["bash", true], ["write", true], ["read", false]], JSON.stringify(e));
			assert.match(e[0].text, /^TOOL_DENIED: The user denied permission for this bash call/);
			assert.match(e[1].text, /^EDIT_DISABLED_IN_PLAN: write is disabled in Plan mode/);
			const cards = selects(pi);
			assert.equal(cards.length, 1, "one card: Pi's bash, never Pi's write (refused before any card) or read");
			assert.match(cards[0].title, /bash/);
			assert.match(cards[0].title, /\$ echo planned > denied\.txt/);
			assert.equal(existsSync(join(box.cwd, "denied.txt")), false, "the denied command did not run");
			assert.equal(existsSync(join(box.cwd, "w.txt")), false);
			// auto: Plan plans intent, commands run (the mode says so).
			await pi.prompt("/pct permission auto");
			const auto = ends((await pi.prompt("again")).events);
			assert.equal(auto[0].isError, false, toolText(auto[0]));
			assert.equal(readFileSync(join(box.cwd, "auto.txt"), "utf8"), "planned\n");
			assert.equal(selects(pi).length, 1, "no card under auto");
		} finally {
			await pi.close();
		}
		const lines = audit(box).filter((l) => l.tool === "bash" || l.tool === "write");
		assert.deepEqual(lines.map((l) => [l.tool, l.decision, l.errorCode ?? null]), [["bash", "deny", "TOOL_DENIED"], ["write", "denied-plan", "EDIT_DISABLED_IN_PLAN"], ["bash", "allow", null]]);
	});

	test(`[pi ${version.name}] another extension's tool named find (or ls) is foreign: refused headless in ask and audited; Pi's own read still runs`, async () => {
		const box = sandbox();
		writeConfig(box, { permissions: { mode: "ask", planSafeTools: [] } });
		writeFileSync(join(box.cwd, "a.txt"), "a\n");
		const steps = [{ tools: [{ name: "find", args: { pattern: "*" } }, { name: "ls", args: {} }, { name: "read", args: { path: "a.txt" } }] }, { text: "done" }];
		const r = await runJson({ version, box, script: script(box, steps), extensions: [SQUATTER, ROOT], env: { PCT_SQUAT_TOOLS: "find,ls" } });
		assert.equal(r.code, 0, r.stderr);
		const by = (n) => r.toolEnds.find((e) => e.toolName === n);
		for (const n of ["find", "ls"]) {
			assert.equal(by(n).isError, true, `${n}: ${toolText(by(n))}`);
			assert.match(toolText(by(n)), new RegExp(`^TOOL_DENIED: ${n} needs the user's confirmation in permission mode ask`));
		}
		assert.equal(by("read").isError, false, toolText(by("read")));
		const lines = audit(box).filter((l) => l.tool === "find" || l.tool === "ls");
		assert.deepEqual(lines.map((l) => [l.tool, l.decision]).sort(), [["find", "denied-headless"], ["ls", "denied-headless"]]);
		assert.equal(audit(box).some((l) => l.tool === "read"), false, "Pi's own read is Pi's in Agent mode");
	});

	test(`[pi ${version.name}] the plan tools with deferred discovery: EnterPlanMode is callable in the first request; SubmitPlan's file stays out of git status`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, toolDiscovery: { enabled: true }, permissions: { mode: "auto", planSafeTools: [] } });
		execFileSync("git", ["init", "-q"], { cwd: box.cwd });
		writeFileSync(join(box.cwd, "tracked.txt"), "t\n");
		execFileSync("git", ["add", "tracked.txt"], { cwd: box.cwd });
		execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"], { cwd: box.cwd });
		const steps = [{ tools: [{ name: "EnterPlanMode", args: {} }] }, { tools: [{ name: "SubmitPlan", args: { plan: "# the plan\n" } }] }, { text: "done" }];
		const r = await runJson({ version, box, script: script(box, steps) });
		assert.equal(r.code, 0, r.stderr);
		const [entered, submitted] = r.toolEnds;
		assert.equal(entered.isError, false, toolText(entered));
		assert.match(toolText(entered), /^Plan mode is on\./);
		assert.match(toolText(submitted), /^PLAN_APPROVAL_UNAVAILABLE: The plan was saved to \.pi\/plan\/\d+-[0-9a-f]{8}\.md/);
		const plans = readdirSync(join(box.cwd, ".pi", "plan")).filter((f) => f.endsWith(".md"));
		assert.equal(plans.length, 1);
		assert.equal(execFileSync("git", ["status", "--porcelain"], { cwd: box.cwd, encoding: "utf8" }), "", "the plan folder is not in git status");
		assert.match(execFileSync("git", ["status", "--porcelain", "--ignored"], { cwd: box.cwd, encoding: "utf8" }), /^!! \.pi\/(plan\/)?$/m, "ignored, not lost");
	});

	test(`[pi ${version.name}] a tool the mode hides answers with the mode's code and how Plan ends (Write, Edit, apply_patch, Task, Pi's edit in Plan; SubmitPlan in Agent)`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, applyPatch: { enabled: true }, subagents: { enabled: true }, permissions: { mode: "auto", planSafeTools: [] } });
		define(box, "helper", "description: Helps\ntools: Read");
		writeFileSync(join(box.cwd, "a.txt"), "a\n");
		const steps = [
			{ tools: [{ name: "SubmitPlan", args: { plan: "# early" } }] },
			{ text: "agent" },
			{ tools: [
				{ name: "Write", args: { path: "a.txt", content: "x\n" } },
				{ name: "Edit", args: { path: "a.txt", tag: "0000", ops: "REM" } },
				{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch" } },
				{ name: "Task", args: { agent: "helper", prompt: "help" } },
				{ name: "edit", args: { path: "a.txt", oldText: "a", newText: "b" } },
				{ name: "NoSuchTool", args: {} },
			] },
			`(ctx) => ({ text: "MODEL SAW: " + ctx.lastToolResults.map((r) => r.toolName + "=" + r.text.split(":")[0]).join(",") })`,
		];
		const pi = new RpcPi({ version, box, script: script(box, steps) });
		try {
			const agent = results((await pi.prompt("submit")).events);
			assert.equal(agent.length, 1);
			assert.match(agent[0].text, /^NOT_IN_PLAN_MODE: SubmitPlan works in Plan mode only and Agent mode is on/);
			await pi.prompt("/pct mode plan");
			const r = await pi.prompt("change it");
			const seen = Object.fromEntries(results(r.events).map((x) => [x.tool, x]));
			for (const t of ["Write", "Edit", "apply_patch", "edit"]) {
				assert.equal(seen[t].isError, true);
				assert.match(seen[t].text, new RegExp(`^EDIT_DISABLED_IN_PLAN: ${t} is disabled in Plan mode`), seen[t].text);
				assert.match(seen[t].text, /Plan mode is on: it ends when the user approves a plan submitted with SubmitPlan \(alone in its message\), or when the user switches with \/pct mode agent\.$/);
			}
			assert.match(seen.Task.text, /^TASK_DISABLED_IN_PLAN: Task is disabled in Plan mode.*\/pct mode agent\.$/);
			assert.equal(seen.NoSuchTool.text, "Tool NoSuchTool not found", "a tool nobody registered keeps Pi's answer");
			const final = r.events.filter((e) => e.type === "message_end" && e.message?.role === "assistant").at(-1);
			assert.match(final.message.content[0].text, /Write=EDIT_DISABLED_IN_PLAN,Edit=EDIT_DISABLED_IN_PLAN,apply_patch=EDIT_DISABLED_IN_PLAN,Task=TASK_DISABLED_IN_PLAN,edit=EDIT_DISABLED_IN_PLAN,NoSuchTool=Tool NoSuchTool not found/);
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "a\n");
			assert.equal(existsSync(join(box.cwd, "p.txt")), false);
		} finally {
			await pi.close();
		}
		const refused = audit(box).filter((l) => l.decision === "denied-plan").map((l) => [l.tool, l.errorCode]).sort();
		assert.deepEqual(refused, [["SubmitPlan", "NOT_IN_PLAN_MODE"], ["Edit", "EDIT_DISABLED_IN_PLAN"], ["Task", "TASK_DISABLED_IN_PLAN"], ["Write", "EDIT_DISABLED_IN_PLAN"], ["apply_patch", "EDIT_DISABLED_IN_PLAN"], ["edit", "EDIT_DISABLED_IN_PLAN"]].sort());
	});

	test(`[pi ${version.name}] entering Plan stops a running background delegate that can write; nothing of it lands after the switch, and TaskWait says why`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, subagents: { enabled: true }, permissions: { mode: "auto", planSafeTools: [] } });
		define(box, "writer", "description: Writes files\ntools: [Read, Write, Bash]");
		const marker = join(box.base, "go");
		const child = writeScript(box, `export default { writer: [
	${afterMarker(marker, [{ name: "Write", args: { path: "late.txt", content: "late\n" } }])},
	{ tools: [{ name: "Bash", args: { command: "echo late > late-cmd.txt" } }] },
	{ text: "WRITER DONE" },
] };`);
		const parent = writeScript(box, `let id;
export default [
	{ tools: [{ name: "Task", args: { agent: "writer", prompt: "write late.txt", runInBackground: true } }] },
	(ctx) => { id = /backgroundTaskId (task-[0-9a-f]+)/.exec(ctx.lastToolResults[0].text)?.[1]; return { text: "started " + id }; },
	() => ({ tools: [{ name: "TaskWait", args: { backgroundTaskId: id } }] }),
	(ctx) => ({ text: "WAITED: " + ctx.lastToolResults[0].text }),
];`);
		const pi = new RpcPi({ version, box, script: parent, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		try {
			const started = ends((await pi.prompt("delegate", 120000)).events);
			assert.match(toolText(started[0]), /backgroundTaskId task-/, pi.stderr);
			await until("the delegate is running", () => delegatesOf(box).length > 0, { ms: 30000, every: 100 });
			await pi.prompt("/pct mode plan");
			writeFileSync(marker, "");
			await until("the delegate ended or wrote", () => delegatesOf(box).length === 0 || existsSync(join(box.cwd, "late.txt")), { ms: 30000, every: 100 });
			await until(() => `delegates left: ${delegatesOf(box)}`, () => delegatesOf(box).length === 0, { ms: 30000, every: 100 });
			assert.equal(existsSync(join(box.cwd, "late.txt")), false, "no write of the delegate landed after the switch");
			assert.equal(existsSync(join(box.cwd, "late-cmd.txt")), false, "no command of the delegate ran after the switch");
			const waited = ends((await pi.prompt("wait", 60000)).events).find((e) => e.toolName === "TaskWait");
			assert.match(toolText(waited), /AGENT_STOPPED_IN_PLAN: Delegate "writer" was stopped: the session entered Plan mode/, toolText(waited));
			assert.match(toolText(waited), /stopped, not paused/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a running delegate follows the session: a later allow-session grant and a later /pct permission change reach it`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, subagents: { enabled: true }, permissions: { mode: "ask", planSafeTools: [] } });
		define(box, "writer", "description: Writes files\ntools: [Read, Write, Bash]");
		const marker = join(box.base, "go");
		const child = writeScript(box, `export default { writer: [
	${afterMarker(marker, [{ name: "Write", args: { path: "granted.txt", content: "granted\n" } }])},
	${afterMarker(marker + "2", [{ name: "Bash", args: { command: "echo moded > moded.txt" } }])},
	(ctx) => ({ text: "WRITER: " + ctx.lastToolResults[0].text }),
] };`);
		const parent = writeScript(box, `export default [
	{ tools: [{ name: "Task", args: { agent: "writer", prompt: "write", runInBackground: true } }] },
	{ tools: [{ name: "Write", args: { path: "parent.txt", content: "p\\n" } }] },
	{ text: "granted" },
];`);
		const pi = new RpcPi({
			version,
			box,
			script: parent,
			env: { PCT_FAUX_CHILD_SCRIPT: child },
			// The parent's own Write card: allowed for the session. A delegate's card would be denied.
			ui: (req) => ({ value: /^Delegate "/.test(req.title) ? "Deny" : "Allow for this session" }),
		});
		try {
			const r = ends((await pi.prompt("go", 120000)).events);
			assert.deepEqual(r.map((e) => [e.toolName, e.isError]), [["Task", false], ["Write", false]], JSON.stringify(r.map(toolText)));
			await until("the delegate is running", () => delegatesOf(box).length > 0, { ms: 30000, every: 100 });
			// Still in ask: only the session grant of Write (made after the delegate started) lets its Write through.
			writeFileSync(marker, "");
			await until("the delegate wrote or ended", () => existsSync(join(box.cwd, "granted.txt")) || delegatesOf(box).length === 0, { ms: 30000, every: 100 });
			assert.equal(readFileSync(join(box.cwd, "granted.txt"), "utf8"), "granted\n", "the grant made after the delegate started reached it");
			// Bash has no grant: only the mode set after the delegate started lets it through without a card.
			await pi.prompt("/pct permission auto");
			writeFileSync(marker + "2", "");
			await until("the delegate ran its command or ended", () => existsSync(join(box.cwd, "moded.txt")) || delegatesOf(box).length === 0, { ms: 30000, every: 100 });
			assert.equal(readFileSync(join(box.cwd, "moded.txt"), "utf8"), "moded\n", "the mode set after the delegate started reached it");
			const delegateCards = selects(pi).filter((q) => /^Delegate "/.test(q.title));
			assert.deepEqual(delegateCards.map((q) => q.title.split("\n")[0]), [], "no card for the delegate");
		} finally {
			await pi.close();
		}
		const lines = audit(box).filter((l) => l.agent === "writer").map((l) => [l.tool, l.decision]);
		assert.deepEqual(lines, [["Write", "allow-session"], ["Bash", "allow"]]);
	});
}
