// Task subagents through the real Pi (0.87.1 and 1.6.0), offline, with the scripted faux model in the parent and in
// each delegate (PCT_FAUX_CHILD_SCRIPT, keyed by agent name): no definitions → no Task tool; a read-only delegate
// reads and answers; a delegate that tries Write without it is refused; a write-capable delegate's Write shows a
// card in the parent (RPC dialog) naming it, is audited in the parent's file with its name, and is listed and rolled
// back by /pct review; a background Task is listed, waited for and stopped with TaskList/TaskWait/TaskStop; killing
// the parent leaves no delegate running. docs/agents.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, RpcPi, runJson, sandbox, toolText, writeConfig, writeToolConfig, writeScript } from "../helpers/pi.mjs";
import { until } from "../helpers/until.mjs";

const ON = { hostTools: { enabled: true }, subagents: { enabled: true } };

function define(box, name, front, body = "You are a careful delegate. Answer briefly.") {
	const dir = join(box.agentDir, "agents");
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, `${name}.md`), `---\nname: ${name}\n${front}\n---\n${body}\n`);
}

/** The parent's script: one Task call, then echo its result. */
function parentScript(box, args) {
	return writeScript(box, `export default [
	{ tools: [{ name: "Task", args: ${JSON.stringify(args)} }] },
	(ctx) => ({ text: "PARENT GOT: " + ctx.lastToolResults.map((r) => r.text).join("|") }),
];`);
}

/** Every process whose environment names this sandbox's agent dir (the delegates inherit it). */
function processesOf(box) {
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

function describe(pids) {
	return pids.map((p) => { try { return `${p}: ${readFileSync(`/proc/${p}/cmdline`, "latin1").replace(/\0/g, " ").slice(0, 200)}`; } catch { return `${p}: gone`; } }).join("; ");
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] no definitions: no Task tool; a definition added mid-session brings it at the next prompt`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		const child = writeScript(box, `export default { quick: [{ text: "QUICK" }] };`);
		const script = writeScript(box, `export default [
	{ tools: [{ name: "Task", args: { agent: "quick", prompt: "hi" } }] },
	{ text: "first over" },
	{ tools: [{ name: "Task", args: { agent: "quick", prompt: "hi" } }] },
	{ text: "second over" },
];`);
		const pi = new RpcPi({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const first = await pi.prompt("no agents yet", 60000);
		const none = first.events.find((e) => e.type === "tool_execution_end" && e.toolName === "Task");
		assert.ok(none, pi.stderr);
		assert.equal(none.isError, true);
		assert.match(toolText(none), /not found/i);
		define(box, "quick", "description: Answers at once");
		const second = await pi.prompt("now there is one", 60000);
		const some = second.events.find((e) => e.type === "tool_execution_end" && e.toolName === "Task");
		assert.equal(some.isError, false, toolText(some));
		assert.match(toolText(some), /^QUICK/);
		await pi.close();
	});

	test(`[pi ${version.name}] a read-only delegate reads a file and answers`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		writeFileSync(join(box.cwd, "notes.txt"), "the secret word is tangerine\n");
		define(box, "reader", "description: Reads files and reports");
		const child = writeScript(box, `export default { reader: [
	{ tools: [{ name: "Read", args: { path: "notes.txt" } }] },
	(ctx) => ({ text: "CHILD READ: " + ctx.lastToolResults[0].text }),
] };`);
		const script = parentScript(box, { agent: "reader", prompt: "Read notes.txt and tell me the word." });
		const r = await runJson({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const end = r.toolEnds.find((e) => e.toolName === "Task");
		assert.ok(end, r.stderr);
		assert.equal(end.isError, false, toolText(end));
		assert.match(toolText(end), /CHILD READ: .*tangerine/s);
		assert.match(toolText(end), /\[reader: [\d.]+s, 1 tool call\(s\), tokens \d+ in \/ \d+ out/);
		assert.deepEqual(end.result.details.tools, ["Read", "Glob", "Grep"]);
		// the delegate's Read is audited in the parent's audit file with the delegate's name
		const auditDir = join(box.agentDir, "pi-codex-toolkit", "audit");
		const lines = readdirSync(auditDir).flatMap((f) => readFileSync(join(auditDir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l)));
		const read = lines.find((l) => l.tool === "Read");
		assert.equal(read?.agent, "reader", JSON.stringify(lines));
		assert.equal(readdirSync(auditDir).length, 1, "one audit file: the parent's session");
	});

	test(`[pi ${version.name}] a delegate without Write is refused when it tries to write`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "reader", "description: Reads files\ntools: Read, Grep");
		const child = writeScript(box, `export default { reader: [
	{ tools: [{ name: "Write", args: { path: "pwned.txt", content: "x" } }] },
	(ctx) => ({ text: "CHILD SAW: " + ctx.lastToolResults.map((r) => (r.isError ? "ERROR " : "") + r.text).join("|") }),
] };`);
		const script = parentScript(box, { agent: "reader", prompt: "write a file" });
		const r = await runJson({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const end = r.toolEnds.find((e) => e.toolName === "Task");
		assert.ok(end, r.stderr);
		assert.match(toolText(end), /CHILD SAW: ERROR .*(not found|AGENT_TOOL_NOT_DECLARED)/is);
		assert.equal(existsSync(join(box.cwd, "pwned.txt")), false);
	});

	test(`[pi ${version.name}] a write-capable delegate's Write shows a card in the parent naming it; /pct review lists and rolls it back`, async () => {
		const box = sandbox();
		writeConfig(box, { ...ON, permissions: { mode: "ask" } });
		define(box, "writer", "description: Writes files\ntools: [Read, Write]");
		const child = writeScript(box, `export default { writer: [
	{ tools: [{ name: "Write", args: { path: "out.txt", content: "from the delegate\\n" } }] },
	(ctx) => ({ text: "CHILD WROTE: " + ctx.lastToolResults[0].text }),
] };`);
		const script = writeScript(box, `export default [
	{ tools: [{ name: "Task", args: { agent: "writer", prompt: "write out.txt" } }] },
	{ tools: [{ name: "Task", args: { agent: "writer", prompt: "write out.txt again" } }] },
	(ctx) => ({ text: "PARENT GOT: " + ctx.lastToolResults.map((r) => r.text).join("|") }),
];`);
		const cards = [];
		const listed = [];
		const pi = new RpcPi({
			version,
			box,
			script,
			env: { PCT_FAUX_CHILD_SCRIPT: child },
			ui: (req) => {
				if (req.method !== "select") return { cancelled: true };
				if (/^Delegate "writer" asks \(tool Write\):/.test(req.title)) {
					cards.push(req);
					return { value: "Allow for this session" };
				}
				listed.push(req);
				return { value: "Close" };
			},
		});
		const run = await pi.prompt("delegate the write", 120000);
		const ends = run.events.filter((e) => e.type === "tool_execution_end" && e.toolName === "Task");
		assert.equal(ends.length, 2, pi.stderr);
		for (const e of ends) assert.equal(e.isError, false, toolText(e));
		assert.equal(cards.length, 1, "the second delegate inherits the session grant: one card");
		assert.match(cards[0].title, /out\.txt/);
		assert.equal(readFileSync(join(box.cwd, "out.txt"), "utf8"), "from the delegate\n");
		await pi.prompt("/pct review");
		assert.ok(listed.some((r) => r.options.some((o) => /out\.txt\s+write/i.test(o))), JSON.stringify(listed));
		const back = await pi.prompt("/pct review rollback all");
		assert.ok(back.notifications.some((n) => /roll/i.test(n)), JSON.stringify(back.notifications));
		assert.equal(existsSync(join(box.cwd, "out.txt")), false, "rolled back: the new file is gone");
		await pi.close();
	});

	test(`[pi ${version.name}] background Task: TaskList shows it, TaskWait returns its answer, TaskStop stops another`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "quick", "description: Answers at once");
		define(box, "slow", "description: Runs a long command\ntools: Bash");
		const child = writeScript(box, `export default {
	quick: [{ text: "QUICK ANSWER 42" }],
	slow: [{ tools: [{ name: "Bash", args: { command: "sleep 120" } }] }, { text: "never" }],
};`);
		const script = writeScript(box, `
const id = (t) => /backgroundTaskId (task-[0-9a-f]+)/.exec(t)?.[1];
const ids = {};
const wait = (ctx) => {
	const last = ctx.lastToolResults[0];
	if (last.toolName === "Task") ids.quick = id(last.text);
	if (last.toolName === "TaskWait" && /QUICK ANSWER 42/.test(last.text)) return { tools: [{ name: "Task", args: { agent: "slow", prompt: "sleep", runInBackground: true } }] };
	return { tools: [{ name: "TaskWait", args: { backgroundTaskId: ids.quick } }] };
};
export default [
	{ tools: [{ name: "Task", args: { agent: "quick", prompt: "answer", runInBackground: true } }] },
	...Array.from({ length: 15 }, () => (ctx) => {
		const last = ctx.lastToolResults[0];
		if (last.toolName === "Task" && ids.quick) { ids.slow = id(last.text); return { tools: [{ name: "TaskList", args: {} }] }; }
		if (last.toolName === "TaskList") return { tools: [{ name: "TaskStop", args: { backgroundTaskId: ids.slow } }] };
		if (last.toolName === "TaskStop") return { text: "DONE " + JSON.stringify(ids) };
		return wait(ctx);
	}),
];`);
		const r = await runJson({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child }, timeoutMs: 120000 });
		const by = (n) => r.toolEnds.filter((e) => e.toolName === n);
		assert.equal(by("Task").length, 2, r.stderr);
		assert.match(toolText(by("Task")[0]), /backgroundTaskId task-/);
		const waited = by("TaskWait").map(toolText).join("\n");
		assert.match(waited, /QUICK ANSWER 42/);
		assert.match(waited, /completed/);
		const list = toolText(by("TaskList")[0]);
		assert.match(list, /quick: answer/);
		assert.match(list, /slow: sleep/);
		assert.match(toolText(by("TaskStop")[0]), /stop/i);
		await until(() => `delegates left: ${processesOf(box)}`, () => processesOf(box).length === 0, { every: 100 });
	});

	test(`[pi ${version.name}] killing the parent leaves no delegate running`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "slow", "description: Runs a long command\ntools: Bash");
		const child = writeScript(box, `export default { slow: [{ tools: [{ name: "Bash", args: { command: "sleep 120" } }] }, { text: "never" }] };`);
		const script = parentScript(box, { agent: "slow", prompt: "sleep" });
		const pi = new RpcPi({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		await pi.command("prompt", { message: "go" });
		const sleeping = () => processesOf(box).some((p) => { try { return readFileSync(`/proc/${p}/cmdline`, "latin1").startsWith("sleep\x00120"); } catch { return false; } });
		await until(() => `the delegate's command runs: ${describe(processesOf(box))} ${JSON.stringify(pi.events.filter((e) => e.type === "tool_execution_end")).slice(0, 1500)} ${pi.stderr.slice(-1000)}`, sleeping, { ms: 30000, every: 100 });
		pi.child.kill("SIGKILL");
		await pi.exited;
		await until(() => `left running: ${describe(processesOf(box))}`, () => processesOf(box).length === 0, { every: 100 });
	});

	test(`[pi ${version.name}] /pct agents lists definitions, resolved tools and warnings; a project definition loses its permission`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "reviewer", "description: Reviews code\ntools: [Read, rm, Bash]\npermission: ask");
		mkdirSync(join(box.cwd, ".pi", "agents"), { recursive: true });
		writeFileSync(join(box.cwd, ".pi", "agents", "cloned.md"), "---\nname: cloned\ndescription: From the repo\ntools: \"*\"\npermission: auto\n---\nbody\n");
		const pi = new RpcPi({ version, box });
		const { notifications } = await pi.prompt("/pct agents");
		const text = notifications.join("\n");
		assert.match(text, /Task subagents: on; 2 definition\(s\)/);
		assert.match(text, /- reviewer \(user, permission ask\): Reviews code\n  tools: Read, Bash  \[declared: Read, rm, Bash\]/);
		assert.match(text, /warning: unknown tool `rm` was dropped/);
		assert.match(text, /- cloned \(project, permission inherit\): From the repo\n  tools: Read, Glob, Grep, Bash, Edit, Write  \[declared: \*\]/);
		assert.match(text, /cloned\.md: `cloned`: a project definition cannot set `permission`/);
		await pi.close();
	});

	test(`[pi ${version.name}] Task is hidden in Plan mode and back in Agent mode; a delegate over its timeout is stopped`, async () => {
		const box = sandbox();
		writeToolConfig(box, { ...ON, subagents: { enabled: true, timeoutSeconds: 1 } });
		define(box, "slow", "description: Sleeps\ntools: Bash");
		const child = writeScript(box, `export default { slow: [{ tools: [{ name: "Bash", args: { command: "sleep 30" } }] }, { text: "never" }] };`);
		const script = writeScript(box, `export default [
	{ tools: [{ name: "Task", args: { agent: "slow", prompt: "sleep" } }] },
	{ text: "plan run over" },
	{ tools: [{ name: "Task", args: { agent: "slow", prompt: "sleep" } }] },
	{ text: "agent run over" },
];`);
		const pi = new RpcPi({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		await pi.prompt("/pct mode plan");
		const plan = await pi.prompt("try in plan", 60000);
		const inPlan = plan.events.find((e) => e.type === "tool_execution_end" && e.toolName === "Task");
		assert.equal(inPlan.isError, true);
		assert.match(toolText(inPlan), /not found|TASK_DISABLED_IN_PLAN/);
		await pi.prompt("/pct mode agent");
		const t0 = Date.now();
		const agent = await pi.prompt("try in agent", 60000);
		const timed = agent.events.find((e) => e.type === "tool_execution_end" && e.toolName === "Task");
		assert.equal(timed.isError, true);
		assert.match(toolText(timed), /AGENT_TIMEOUT: Delegate "slow" did not finish within 1 s/);
		assert.ok(Date.now() - t0 < 20000, "stopped at the timeout, not after the command");
		await until(() => `left running: ${describe(processesOf(box))}`, () => processesOf(box).length === 0, { every: 100 });
		await pi.close();
	});

	test(`[pi ${version.name}] the turn's abort stops a foreground delegate and its command`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "slow", "description: Sleeps\ntools: Bash");
		const child = writeScript(box, `export default { slow: [{ tools: [{ name: "Bash", args: { command: "sleep 120" } }] }, { text: "never" }] };`);
		const script = parentScript(box, { agent: "slow", prompt: "sleep" });
		const pi = new RpcPi({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const ended = pi.waitFor((r) => r.type === "tool_execution_end" && r.toolName === "Task", 60000);
		await pi.command("prompt", { message: "go" });
		const sleeping = () => processesOf(box).some((p) => { try { return readFileSync(`/proc/${p}/cmdline`, "latin1").startsWith("sleep\x00120"); } catch { return false; } });
		await until("the delegate's command runs", sleeping, { ms: 30000, every: 100 });
		await pi.command("abort");
		const end = await ended;
		assert.equal(end.isError, true);
		assert.match(toolText(end), /AGENT_ABORTED: Delegate "slow" was stopped: the turn was aborted/);
		await until(() => `left running: ${describe(processesOf(box))}`, () => processesOf(box).length === 0, { every: 100 });
		await pi.close();
	});

	test(`[pi ${version.name}] an unknown agent and a prompt over the cap are refused; a prompt at the cap runs`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "quick", "description: Answers at once");
		const child = writeScript(box, `export default { quick: [(ctx) => ({ text: "LEN " + ctx.messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : m.content.map((c) => c.text ?? "").join(""))).join("").length })] };`);
		const script = writeScript(box, `export default [
	{ tools: [{ name: "Task", args: { agent: "nope", prompt: "hi" } }] },
	{ tools: [{ name: "Task", args: { agent: "quick", prompt: "x".repeat(32001) } }] },
	{ tools: [{ name: "Task", args: { agent: "quick", prompt: "x".repeat(32000) } }] },
	{ text: "over" },
];`);
		const r = await runJson({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const ends = r.toolEnds.filter((e) => e.toolName === "Task");
		assert.equal(ends.length, 3, r.stderr);
		assert.equal(ends[0].isError, true);
		assert.match(toolText(ends[0]), /AGENT_NOT_FOUND: No agent named "nope"\. Available: quick/);
		assert.equal(ends[1].isError, true);
		assert.match(toolText(ends[1]), /INVALID_ARGUMENT: The prompt has 32001 characters, more than 32000/);
		assert.equal(ends[2].isError, false, toolText(ends[2]));
		assert.match(toolText(ends[2]), /LEN 32000/);
		// every Task call is audited in the parent's file, with its outcome
		const auditDir = join(box.agentDir, "pi-codex-toolkit", "audit");
		const tasks = readdirSync(auditDir).flatMap((f) => readFileSync(join(auditDir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l))).filter((l) => l.tool === "Task");
		assert.deepEqual(tasks.map((l) => [l.ok, l.errorCode ?? null]), [[false, "AGENT_NOT_FOUND"], [false, "INVALID_ARGUMENT"], [true, null]]);
	});
}
