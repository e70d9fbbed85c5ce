// The Pi glue of host Bash (src/pi/tools/host-bash.ts) on a real HostSession: the four definitions and their risk,
// Pi's AbortSignal reaching a foreground command (and an already-aborted call running nothing), failures that keep
// their details (and their whole text as the message), and the engine's task count.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, realpathSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { hostBashTools, piShell } from "../src/pi/tools/host-bash.ts";

const native = createRequire(import.meta.url)("../index.js");
const dirs = [];
const sessions = [];
after(() => {
	for (const s of sessions) s.closeTasks();
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function session() {
	const dir = realpathSync(mkdtempSync(join(tmpdir(), "pct-bash-glue-")));
	dirs.push(dir);
	mkdirSync(join(dir, "ws"));
	mkdirSync(join(dir, "agent"));
	const s = new native.HostSession(join(dir, "ws"), join(dir, "agent"), "glue");
	sessions.push(s);
	return { dir, s };
}

const spec = (name) => hostBashTools.find((t) => t.name === name);
/** The tool's own call without the host-tool wrapper: the engine's result as it comes back. */
const tool = (name) => ({ run: (s, params, signal) => spec(name).call(s, params, signal) });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("four tools: Bash and TaskStop on the mode table's bash row, TaskList and TaskWait on the read row, as the engine says; Pi's shell is passed", () => {
	assert.deepEqual(
		hostBashTools.map((t) => [t.name, t.risk]),
		[
			["Bash", "bash"],
			["TaskList", "read"],
			["TaskWait", "read"],
			["TaskStop", "bash"],
		],
	);
	// The row is stated once, in Rust: the glue's copy must agree with it.
	for (const t of hostBashTools) assert.equal(t.risk, native.permissionRiskOf(t.name), t.name);
	assert.deepEqual(Object.keys(spec("Bash").parameters.properties), ["command", "timeout", "runInBackground", "description"]);
	assert.deepEqual(spec("TaskWait").parameters.required, ["backgroundTaskId"]);
	const sh = piShell();
	assert.ok(sh && sh.shell.length > 0 && Array.isArray(sh.args));
});

test("success and failure: a failure is an error result that keeps exitCode and both streams", async () => {
	const { s } = session();
	const ok = await tool("Bash").run(s, { command: "echo hi" });
	assert.equal(ok.ok, true);
	assert.equal(ok.text, "exit_code: 0\n[stdout]\nhi\n");
	const bad = await tool("Bash").run(s, { command: "echo out; echo err >&2; exit 5" });
	assert.equal(bad.ok, false);
	assert.match(bad.text, /^TOOL_FAILED: /);
	assert.equal(bad.exitCode, 5);
	assert.equal(bad.stdout, "out\n");
	assert.equal(bad.stderr, "err\n");
	// the wrapper shows a failure as `CODE: message`: a failed command's message is its whole text, as the engine gives it
	const o = await spec("Bash").call(s, { command: "echo out; echo err >&2; exit 5" });
	assert.equal(o.ok, false);
	assert.equal(o.ran, true);
	assert.equal(o.code, "TOOL_FAILED");
	assert.equal(`${o.code}: ${o.message}\n`, bad.text);
	assert.match(o.message, /\[stdout\]\nout\n\[stderr\]\nerr$/);
	const nf = await tool("TaskWait").run(s, { backgroundTaskId: "bg-nope" });
	assert.equal(nf.ok, false);
	assert.equal(nf.code, "NOT_FOUND");
	assert.equal(nf.ran, undefined);
	assert.match(`${nf.code}: ${nf.message}`, /^NOT_FOUND: \S/);
});

test("Pi's AbortSignal kills a foreground command; an aborted call runs nothing", async () => {
	const { dir, s } = session();
	const pidfile = join(dir, "p");
	const ac = new AbortController();
	const running = tool("Bash").run(s, { command: `echo $$ > ${pidfile}; exec sleep 1000` }, ac.signal);
	for (let i = 0; i < 500 && !(existsSync(pidfile) && readFileSync(pidfile, "utf8").trim()); i++) await sleep(10);
	ac.abort();
	const r = await running;
	assert.equal(r.ok, false);
	assert.equal(r.aborted, true);
	const marker = join(dir, "ran");
	const pre = new AbortController();
	pre.abort();
	const none = await tool("Bash").run(s, { command: `touch ${marker}` }, pre.signal);
	assert.equal(none.ok, false);
	assert.equal(existsSync(marker), false);
});

test("an abort does not stop a background task; the engine counts it", async () => {
	const { s } = session();
	const ac = new AbortController();
	const started = await tool("Bash").run(s, { command: "exec sleep 1000", runInBackground: true }, ac.signal);
	ac.abort();
	const id = started.backgroundTaskId;
	const w = await tool("TaskWait").run(s, { backgroundTaskId: id });
	assert.equal(w.task.status, "running");
	assert.equal(s.taskCounts().sessionRunning, 1);
	const stop = await tool("TaskStop").run(s, { backgroundTaskId: id });
	assert.equal(stop.task.stopRequested, true);
	const list = await tool("TaskList").run(s, {});
	assert.match(list.text, new RegExp(`backgroundTaskId ${id}: `));
});
