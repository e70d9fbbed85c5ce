// Task delegation's bindings (docs/agents.md) through the addon as the glue calls them: definitions with resolved
// tools, the delegate slots at both caps, the answer cut at its boundary, and a background delegate adopted into a
// session's task table (TaskList/TaskWait/TaskStop see it). Every rule is also tested in src/agents/tests.rs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";
import { tempDir } from "./helpers/tmp.mjs";
import { docTable } from "./helpers/doc.mjs";
import { AGENT_CODES, TaskError } from "../src/pi/agents.ts";

test("agentsLoad: both scopes, resolved tools, allowlist and warnings", () => {
	const base = tempDir("pct-agents-");
	const agentDir = join(base, "agent");
	const proj = join(base, "proj");
	mkdirSync(join(agentDir, "agents"), { recursive: true });
	mkdirSync(join(proj, ".pi", "agents"), { recursive: true });
	writeFileSync(join(agentDir, "agents", "w.md"), "---\nname: w\ndescription: writes\ntools: [Write, nope]\npermission: auto\n---\nBody.\n");
	writeFileSync(join(proj, ".pi", "agents", "p.md"), "---\nname: p\ndescription: project\npermission: auto\n---\n");
	const host = ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop"];
	const l = native.agentsLoad(agentDir, proj, host);
	assert.deepEqual(l.definitions.map((d) => [d.name, d.scope, d.permission, d.tools]), [
		["w", "user", "auto", ["Write"]],
		["p", "project", "inherit", ["Read", "Glob", "Grep"]],
	]);
	assert.deepEqual(l.definitions[0].allowlist, ["Write", "Edit", "Read", "Glob", "Grep"]);
	assert.equal(l.definitions[0].prompt, "Body.");
	assert.match(l.definitions[0].warnings[0], /unknown tool `nope`/);
	assert.equal(l.warnings.length, 1);
	assert.match(l.warnings[0], /p\.md: `p`: a project definition cannot set `permission`/);
	assert.deepEqual(native.agentsLoad(join(base, "none"), null, host), { definitions: [], warnings: [] });
});

test("AgentSlot: the per-session cap, then the process cap, each at its boundary", () => {
	const L = native.agentsLimits();
	assert.deepEqual([L.perSession, L.perProcess, L.maxAnswerBytes, L.defaultTimeoutSeconds], [4, 8, 65536, 600]);
	const a = Array.from({ length: L.perSession }, () => new native.AgentSlot("s-a"));
	assert.ok(a.every((s) => s.failure() === null));
	const over = new native.AgentSlot("s-a").failure();
	assert.equal(over.code, "AGENT_LIMIT");
	assert.match(over.message, /per-session cap of 4/);
	const b = Array.from({ length: L.perProcess - L.perSession }, () => new native.AgentSlot("s-b"));
	assert.ok(b.every((s) => s.failure() === null));
	assert.match(new native.AgentSlot("s-c").failure().message, /process-wide cap of 8/);
	a[0].release();
	a[0].release(); // a second release gives back nothing more
	const c = new native.AgentSlot("s-c");
	assert.equal(c.failure(), null);
	assert.equal(new native.AgentSlot("s-d").failure().code, "AGENT_LIMIT");
	for (const s of [...a, ...b, c]) s.release();
});

test("agentsCutAnswer: the cap passes, one byte more is cut with a note", () => {
	const max = native.agentsLimits().maxAnswerBytes;
	const at = "x".repeat(max);
	assert.deepEqual(native.agentsCutAnswer(at), { text: at, cut: false });
	const over = native.agentsCutAnswer(`${at}y`);
	assert.equal(over.cut, true);
	assert.ok(over.text.startsWith(at));
	assert.match(over.text, new RegExp(`cut at ${max} of ${max + 1} bytes`));
});

test("AgentTask: a delegate's process group in the session's tasks; TaskStop kills it; finish publishes the answer", async () => {
	const dir = tempDir("pct-agents-task-");
	const s = new native.HostSession(dir, join(dir, "agent"), "agents-test");
	const child = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
	const exited = new Promise((r) => child.on("exit", (code, sig) => r(sig)));
	const t = new native.AgentTask(s, child.pid, "Task r", "r: look");
	assert.equal(t.failure(), null);
	assert.match(t.id, /^task-[0-9a-f]{12}$/);
	const listed = s.taskList();
	assert.equal(listed.ok, true);
	assert.deepEqual(listed.tasks.map((x) => [x.backgroundTaskId, x.status]), [[t.id, "running"]]);
	const stop = await s.taskStop({ backgroundTaskId: t.id });
	assert.equal(stop.ok, true);
	assert.equal(await exited, "SIGTERM");
	assert.equal(t.stopRequested(), true);
	t.finish(1, "partial", "stopped");
	t.finish(0, "ignored", ""); // once only
	const w = await s.taskWait({ backgroundTaskId: t.id });
	assert.equal(w.task.status, "stopped");
	assert.equal(w.task.stdout, "partial");
	assert.equal(new native.AgentTask(s, 1, "x", null).failure().code, "INVALID_ARGUMENT");
	s.closeTasks();
	assert.equal(new native.AgentTask(s, 4242, "x", null).failure().code, "TOOL_FAILED");
});

test("Task's codes are docs/agents.md's Errors table, in order; a TaskError carries its code and the model's text", () => {
	assert.deepEqual([...AGENT_CODES], docTable("agents.md", "## Errors"));
	const e = new TaskError("AGENT_TIMEOUT", "stopped.");
	assert.equal(e.code, "AGENT_TIMEOUT");
	assert.equal(e.message, "AGENT_TIMEOUT: stopped.");
});

test("writingDelegate: a delegate with a file-writing tool gets its own worktree; read-only and Bash-only ones do not", async () => {
	const { writingDelegate } = await import("../src/pi/agents.ts");
	for (const t of ["Write", "Edit", "apply_patch", "write", "edit", "exec"]) assert.equal(writingDelegate(["Read", t]), true, t);
	assert.equal(writingDelegate(["Read", "Glob", "Grep"]), false);
	assert.equal(writingDelegate(["Bash", "TaskList", "TaskWait", "TaskStop", "exec_command", "write_stdin", "bash", "read"]), false);
	assert.equal(writingDelegate([]), false);
});
