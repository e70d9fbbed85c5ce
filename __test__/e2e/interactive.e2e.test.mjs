// The interactive tools in the real Pi (both versions), faux model (docs/interactive.md): asktool through RPC dialogs
// (two questions, one skipped), headless, and an aborted turn; TodoWrite's refusal, its resume and branch switch;
// new_context's compaction before the next turn, as the session file shows it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import { PI_VERSIONS, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";

const ON = { interactiveTools: { enabled: true } };
/** Generous per-step timeouts: Pi's start-up alone can take most of a minute on a loaded 2-core machine. */
const T = 180000;
const ends = (pi, name) => pi.events.filter((e) => e.type === "tool_execution_end" && e.toolName === name);
const todoStep = (todos) => ({ tools: [{ name: "TodoWrite", args: { todos } }] });
const item = (id, content, status) => ({ id, content, status });

/** A sandbox with the interactive tools on and Pi's sessions kept under `<box>/sessions`. */
function persistentBox() {
	const box = sandbox();
	writeConfig(box, ON);
	return { box, sessions: join(box.base, "sessions") };
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] asktool: two questions through RPC dialogs, one skipped; listed in /pct status`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "asktool", args: { questions: [{ question: "Which database?", options: ["PostgreSQL", "SQLite"] }, { question: "Your name?" }] } }] },
			{ text: "thanks" },
		];`);
		const ui = (req) => {
			if (req.method === "select" && req.title === "Question 1 of 2: Which database?") return { value: "SQLite" };
			return { cancelled: true };
		};
		const pi = new RpcPi({ version, box, script, ui });
		try {
			const status = await pi.prompt("/pct status all", T);
			assert.match(status.notifications.join("\n"), /Interactive Tools\n  configured: on\n  effective: active\n  tools: asktool, TodoWrite, new_context\n  plan mode: allowed/);
			await pi.prompt("ask me", T);
			const [end] = ends(pi, "asktool");
			assert.ok(end, pi.stderr.slice(-2000));
			assert.equal(end.isError, false, toolText(end));
			assert.deepEqual(end.result.details.answers, [
				{ question: "Which database?", answer: "SQLite", skipped: false },
				{ question: "Your name?", answer: "", skipped: true },
			]);
			assert.match(toolText(end), /^The user answered 1 of 2 questions \(1 skipped/);
			const dialogs = pi.uiRequests.map((r) => [r.method, r.title, r.options]);
			assert.deepEqual(dialogs, [
				["select", "Question 1 of 2: Which database?", ["PostgreSQL", "SQLite", "Other (type an answer)", "Skip this question"]],
				["input", "Question 2 of 2: Your name?", undefined],
			]);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] /pct config turns the feature on and one tool off; /pct status follows`, async () => {
		const box = sandbox();
		const picks = ["Interactive Tools: off", "  new_context: on", "Save"];
		const ui = (req) => (req.method === "select" && picks.length > 0 && req.options.includes(picks[0]) ? { value: picks.shift() } : { cancelled: true });
		const pi = new RpcPi({ version, box, ui });
		try {
			const off = await pi.prompt("/pct status all", T);
			assert.match(off.notifications.join("\n"), /Interactive Tools\n  configured: off\n  effective: off\n  reason: Turned off: turn it on with \/pct config \(interactiveTools\.enabled\)\. \[off-in-config\]/);
			await pi.prompt("/pct config", T);
			assert.deepEqual(picks, [], JSON.stringify(pi.uiRequests.map((r) => r.options)).slice(0, 1500));
			assert.deepEqual(JSON.parse(readFileSync(box.configPath, "utf8")).interactiveTools, { enabled: true, newContext: false });
			const on = await pi.prompt("/pct status all", T);
			assert.match(on.notifications.join("\n"), /Interactive Tools\n  configured: on\n  effective: active\n  tools: asktool, TodoWrite\n  switched off: new_context\n/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] asktool: headless it fails with no-user; bad arguments carry their code`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "asktool", args: { questions: [{ question: "Anyone there?" }] } }] },
			{ tools: [{ name: "asktool", args: { questions: [] } }] },
			{ tools: [{ name: "new_context", args: { now: true } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script, timeoutMs: T });
		assert.equal(r.code, 0, r.stderr.slice(-2000));
		const [headless, empty, ctx] = r.toolEnds;
		assert.equal(headless.isError, true);
		assert.match(toolText(headless), /^no-user: No user is there to answer/);
		assert.equal(empty.isError, true);
		assert.match(toolText(empty), /^question-count: asktool takes 1 to 8 questions \(got 0\)/);
		assert.equal(ctx.isError, true);
		assert.match(toolText(ctx), /^invalid-arguments: new_context takes no arguments \(got now\)/);
	});

	test(`[pi ${version.name}] asktool: an aborted turn resolves the open questions as skipped`, async () => {
		const box = sandbox();
		writeConfig(box, ON);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "asktool", args: { questions: [{ question: "First?", options: ["a", "b"] }, { question: "Second?" }] } }] },
			{ text: "after abort" },
		];`);
		// The first dialog is never answered: the turn is stopped while it is open.
		let opened;
		const asked = new Promise((r) => (opened = r));
		const pi = new RpcPi({ version, box, script, ui: () => (opened(), new Promise(() => {})) });
		try {
			const done = pi.waitFor((r) => r.type === "tool_execution_end" && r.toolName === "asktool", T);
			const settled = pi.waitFor((r) => r.type === "agent_end", T);
			await pi.command("prompt", { message: "ask" }, T);
			await asked;
			assert.equal((await pi.command("abort", {}, T)).success, true);
			const end = await done;
			await settled;
			assert.deepEqual(end.result.details.answers, [
				{ question: "First?", answer: "", skipped: true },
				{ question: "Second?", answer: "", skipped: true },
			]);
			assert.match(toolText(end), /^The user skipped every question/);
			assert.equal(pi.uiRequests.length, 1, "no dialog after the abort");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] TodoWrite: two in_progress refused; the list survives --session resume and follows a fork`, async () => {
		const { box, sessions } = persistentBox();
		const script = writeScript(box, `export default ${JSON.stringify([
			todoStep([item("1", "alpha", "in_progress"), item("2", "beta", "in_progress")]),
			todoStep([item("1", "alpha", "in_progress"), item("2", "beta", "pending")]),
			{ text: "first done" },
			todoStep([item("1", "alpha", "completed"), item("2", "beta", "in_progress")]),
			{ text: "second done" },
		])};`);
		const pi = new RpcPi({ version, box, script, persist: true, args: ["--session-dir", sessions] });
		let file;
		try {
			await pi.prompt("first", T);
			const [bad, good] = ends(pi, "TodoWrite");
			assert.equal(bad.isError, true);
			assert.match(toolText(bad), /^multiple-in-progress: 2 todos are in_progress \(todos\[0\] and todos\[1\]\)/);
			assert.equal(good.isError, false, toolText(good));
			assert.deepEqual(good.result.details.todos, [item("1", "alpha", "in_progress"), item("2", "beta", "pending")]);
			await pi.prompt("second", T);
			assert.deepEqual((await pi.prompt("/pct todos", T)).notifications, ["Todos: 2 (1 in progress, 0 pending, 1 completed)\n[x] 1: alpha\n[~] 2: beta"]);
			// The widget above the editor shows the same list.
			const widget = pi.events.filter((e) => e.type === "extension_ui_request" && e.method === "setWidget" && e.widgetKey === "pct-todos").at(-1);
			assert.deepEqual(widget.widgetLines, ["Todos 1/2", "  [x] alpha", "  [~] beta"]);
			file = (await pi.command("get_state", {}, T)).data.sessionFile;
			assert.ok(file, "the session has a file");
			// A fork before the second prompt: that branch only has the first list.
			const forks = (await pi.command("get_fork_messages", {}, T)).data.messages;
			const second = forks.find((m) => m.text === "second");
			assert.ok(second, JSON.stringify(forks));
			assert.equal((await pi.command("fork", { entryId: second.entryId }, T)).success, true);
			assert.deepEqual((await pi.prompt("/pct todos", T)).notifications, ["Todos: 2 (1 in progress, 1 pending, 0 completed)\n[~] 1: alpha\n[ ] 2: beta"]);
		} finally {
			await pi.close();
		}
		// Resume the original session in a new process: the list is rebuilt from the session file.
		const again = new RpcPi({ version, box, persist: true, args: ["--session", file] });
		try {
			assert.deepEqual((await again.prompt("/pct todos", T)).notifications, ["Todos: 2 (1 in progress, 0 pending, 1 completed)\n[x] 1: alpha\n[~] 2: beta"]);
		} finally {
			await again.close();
		}
	});

	test(`[pi ${version.name}] new_context: Pi compacts when the run ends, before the next turn (session file)`, async () => {
		const { box, sessions } = persistentBox();
		writeFileSync(join(box.agentDir, "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 1 } }));
		// After the first run every request (the summary and the next turn) gets a text answer.
		const script = writeScript(box, `export default [
			{ tools: [{ name: "new_context", args: {} }] },
			{ text: "wrapping up" },
			...Array.from({ length: 6 }, (_, i) => ({ text: "reply " + i })),
		];`);
		const pi = new RpcPi({ version, box, script, persist: true, args: ["--session-dir", sessions] });
		try {
			// Armed before the prompt, so it gets the prompt's time too.
			const compacted = pi.waitFor((r) => r.type === "compaction_end", 2 * T);
			compacted.catch(() => undefined);
			await pi.prompt("first prompt", T);
			const [end] = ends(pi, "new_context");
			assert.equal(end.isError, false, toolText(end));
			assert.match(toolText(end), /^A fresh context is requested\. Nothing was changed\. When this run ends, Pi's compaction summarizes/);
			const c = await compacted;
			assert.equal(c.aborted ?? false, false, JSON.stringify(c).slice(0, 500));
			assert.ok(c.result, `compaction failed: ${JSON.stringify(c).slice(0, 500)} ${pi.stderr.slice(-1500)}`);
			await pi.prompt("second prompt", T);
			const file = (await pi.command("get_state", {}, T)).data.sessionFile;
			const entries = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
			const at = (pred) => entries.findIndex(pred);
			const tool = at((e) => e.type === "message" && e.message?.role === "toolResult" && e.message.toolName === "new_context");
			const compaction = at((e) => e.type === "compaction");
			const next = at((e) => e.type === "message" && e.message?.role === "user" && JSON.stringify(e.message.content).includes("second prompt"));
			assert.ok(tool >= 0 && compaction > tool && next > compaction, `order tool=${tool} compaction=${compaction} next=${next}`);
			assert.equal(entries.filter((e) => e.type === "compaction").length, 1);
		} finally {
			await pi.close();
		}
	});
}
