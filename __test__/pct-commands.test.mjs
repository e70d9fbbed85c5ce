// The `/pct` command table (src/pi/commands.ts `PCT_COMMANDS`, docs/render.md "/pct"): the usage line, the
// completion list and the docs table come from it, and every `/pct` command the docs and README name dispatches
// (routes to a handler, not the usage line) and completes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { PCT_COMMANDS, PCT_USAGE, pctCompletions, pctDocsTable, pctRoute, registerPctCommand, PERMISSION_MODE_TEXT } from "../src/pi/commands.ts";

const root = join(import.meta.dirname, "..");
const read = (p) => readFileSync(join(root, p), "utf8");
const docs = [...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`), "README.md"];

test("completions: sub-commands with what they do, then their arguments", () => {
	assert.deepEqual(
		pctCompletions("").map((c) => c.value),
		["config", "status", "reload", "jobs", "review", "permission", "mode", "todos", "agents", "worktree"],
	);
	for (const c of pctCompletions("")) assert.ok(c.description && c.description.length > 10, `${c.value} has a description`);
	assert.deepEqual(pctCompletions("mode ").map((c) => c.value), ["mode plan", "mode agent"]);
	assert.deepEqual(pctCompletions("re").map((c) => c.value), ["reload", "review"]);
	assert.deepEqual(pctCompletions("t").map((c) => c.value), ["todos"]);
	assert.deepEqual(pctCompletions("worktree m").map((c) => c.value), ["worktree merge"]);
	assert.deepEqual(pctCompletions("permission a").map((c) => c.value), ["permission ask", "permission accept-edits", "permission auto"]);
	assert.equal(pctCompletions("permission ask")[0].description, PERMISSION_MODE_TEXT.ask);
	assert.deepEqual(pctCompletions("review rollback").map((c) => c.label), ["rollback", "rollback all"]);
	assert.deepEqual(pctCompletions("jobs stop").map((c) => c.value), ["jobs stop", "jobs stop all"]);
	assert.equal(pctCompletions("bogus"), null);
	assert.equal(pctCompletions("status x"), null);
});

test("routing: plain /pct is config, the first word names the sub-command, anything else is unknown", () => {
	assert.deepEqual(pctRoute(""), { name: "config", arg: "" });
	assert.deepEqual(pctRoute("  jobs   stop all "), { name: "jobs", arg: "stop all" });
	assert.deepEqual(pctRoute("todos"), { name: "todos", arg: "" });
	assert.equal(pctRoute("statusx"), undefined);
	assert.equal(pctRoute("bogus arg"), undefined);
});

test("the usage line is derived from the table", () => {
	assert.equal(
		PCT_USAGE,
		"Usage: /pct [config|status [all]|reload|jobs [show <id>|stop <id>|stop all]|review [show <n>|rollback <n>|rollback all]|permission [ask|accept-edits|auto|default|revoke <tool>|revoke all]|mode [plan|agent]|todos|agents|worktree [new [name]|list|merge [token]|leave|delete <id> [force]]]",
	);
	for (const f of ["docs/render.md", "README.md"]) assert.ok(read(f).includes(PCT_USAGE), `${f} prints the usage line`);
});

test("docs/render.md's /pct table is the one derived from the table", () => {
	const md = read("docs/render.md");
	const m = /<!-- pct-commands:start -->\n([\s\S]*?)\n<!-- pct-commands:end -->/.exec(md);
	assert.ok(m, "docs/render.md has the generated table between its markers");
	assert.equal(m[1], pctDocsTable());
});

test("every /pct command the docs name dispatches and completes", () => {
	const names = new Set(PCT_COMMANDS.map((c) => c.name));
	const seen = new Set();
	for (const f of docs) {
		const text = read(f);
		for (const [, sub] of text.matchAll(/\/pct ([a-z][a-z-]*)/g)) {
			seen.add(sub);
			const route = pctRoute(sub);
			assert.ok(route && names.has(route.name), `${f}: /pct ${sub} dispatches`);
			assert.ok((pctCompletions(sub) ?? []).some((c) => c.value === sub), `${f}: /pct ${sub} completes`);
		}
		// A literal argument a command in backticks shows is one its sub-command completes (`<n>` is a placeholder).
		for (const [, sub, arg] of text.matchAll(/`\/pct ([a-z][a-z-]*) ([a-z][a-z-]*)[^`]*`/g)) {
			const c = PCT_COMMANDS.find((x) => x.name === sub);
			assert.ok(c?.completions?.some((a) => a.value === arg || a.value.startsWith(`${arg} `)), `${f}: /pct ${sub} ${arg} completes`);
		}
	}
	for (const n of names) assert.ok(seen.has(n), `the docs name /pct ${n}`);
});

test("the registered handler: one per sub-command; unknown sub-commands and stray arguments answer with the usage line", async () => {
	let registered;
	const said = [];
	const shared = new Map([["interactive.todos", () => "todo list text"]]);
	const tk = { pi: { on() {}, registerCommand: (name, spec) => (registered = { name, spec }) }, shared };
	registerPctCommand(tk, new Set());
	assert.equal(registered.name, "pct");
	assert.equal(registered.spec.description, "Pi Codex Toolkit: /pct [config|status|reload|jobs|review|permission|mode|todos|agents|worktree]");
	const ctx = { hasUI: true, ui: { notify: (m, level) => said.push([m, level]) } };
	await registered.spec.handler("todos", ctx);
	await registered.spec.handler("bogus", ctx);
	await registered.spec.handler("todos extra", ctx);
	assert.deepEqual(said, [
		["todo list text", "info"],
		[PCT_USAGE, "warning"],
		[PCT_USAGE, "warning"],
	]);
});
