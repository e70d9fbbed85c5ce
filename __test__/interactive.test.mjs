// The interactive tools' bindings (docs/interactive.md): AskSession, TodoList and new_context's check, through the
// addon as the glue calls them. Bounds are tested at every edge in src/interactive/tests.rs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { native } from "./helpers/addon.mjs";

test("AskSession: bad arguments answer a coded failure, never throw", () => {
	const s = new native.AskSession({ questions: [] });
	const f = s.failure();
	assert.equal(f.ok, false);
	assert.equal(f.code, "question-count");
	assert.deepEqual(s.questions(), []);
	assert.throws(() => s.answerText(0, "x"), (e) => e.code === "invalid-input");
	assert.equal(new native.AskSession(null).failure().code, "invalid-arguments");
	assert.equal(new native.AskSession({ questions: [{ question: "q", options: ["a", "a"] }] }).failure().code, "invalid-options");
});

test("AskSession: replies, skips, open questions and the labels the dialogs add", () => {
	const L = native.interactiveLimits();
	assert.deepEqual([L.otherLabel, L.skipLabel, L.doneLabel], ["Other (type an answer)", "Skip this question", "Done"]);
	assert.equal(L.maxQuestions, 8);
	const s = new native.AskSession({ questions: [{ question: "db?", options: ["pg", "sqlite"] }, { question: "tags?", options: ["x", "y"], multiSelect: true }, { question: "open?" }] });
	assert.equal(s.failure(), null);
	assert.deepEqual(s.questions()[1], { question: "tags?", options: ["x", "y"], multiSelect: true });
	s.answerChoices(0, ["pg"], null);
	s.answerChoices(1, ["y", "x"], "z");
	assert.throws(() => s.answerChoices(0, ["mysql"], null), (e) => e.code === "invalid-input");
	s.skipOpen();
	assert.deepEqual(s.result().answers, [
		{ question: "db?", answer: "pg", skipped: false },
		{ question: "tags?", answer: "x, y, z", skipped: false },
		{ question: "open?", answer: "", skipped: true },
	]);
	assert.equal(native.askNoUser().code, "no-user");
});

test("TodoList: whole-list replacement, refusal changes nothing, restore from snapshots", () => {
	const t = new native.TodoList();
	const ok = t.replace({ todos: [{ id: "1", content: "a", status: "in_progress" }, { id: "2", content: "b", status: "pending" }] });
	assert.equal(ok.ok, true);
	assert.deepEqual(ok.todos.map((x) => x.status), ["in_progress", "pending"]);
	const bad = t.replace({ todos: [{ id: "1", content: "a", status: "in_progress" }, { id: "2", content: "b", status: "in_progress" }] });
	assert.deepEqual([bad.ok, bad.code], [false, "multiple-in-progress"]);
	assert.equal(t.list().length, 2);
	assert.deepEqual(t.widget(["bg-1  sleep 5"]), ["Todos 0/2", "  [~] a", "  [ ] b", "Background tasks running: 1", "  bg-1  sleep 5"]);
	t.restore([{ todos: [{ id: "9", content: "restored", status: "completed" }] }, { todos: "junk" }]);
	assert.equal(t.text(), "Todos: 1 (0 in progress, 0 pending, 1 completed)\n[x] 9: restored");
	t.restore([]);
	assert.deepEqual(t.widget([]), []);
});

test("new_context: {} only; plan-safe names", () => {
	assert.equal(native.newContextCheck({}), null);
	assert.equal(native.newContextCheck({ x: 1 }).code, "invalid-arguments");
	assert.match(native.newContextResult(false, false), /^A fresh context is requested\. Nothing was changed\./);
	assert.deepEqual(native.interactivePlanSafe(), ["asktool", "TodoWrite", "new_context"]);
	assert.equal(native.interactiveNotEnabled("asktool").code, "not-enabled");
	const d = native.configDefaults();
	assert.deepEqual(d.interactiveTools, { enabled: false, askTool: true, todoWrite: true, newContext: true });
});
