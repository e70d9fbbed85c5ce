// The host tools (Read, Glob, Grep, Write, Edit) through the real Pi (0.87.1 and 1.6.0), offline with the scripted
// faux model: activation and the builtins they replace, permissions (headless denial, allow-session through RPC
// dialogs), the audit file, and Edit's round trips.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";
import { PROBE, featureOf, probe, status } from "../helpers/rules.mjs";

const ON = (mode = "ask") => ({ hostTools: { enabled: true, permissionMode: mode } });
const HOST = ["Read", "Glob", "Grep", "Write", "Edit"];
const REPLACED = ["read", "edit", "write", "grep", "find", "ls"];

function put(box, rel, text) {
	mkdirSync(dirname(join(box.cwd, rel)), { recursive: true });
	writeFileSync(join(box.cwd, rel), text);
}
const get = (box, rel) => readFileSync(join(box.cwd, rel), "utf8");

/** Every line of the (only) audit file of a sandbox. */
function audit(box) {
	const dir = join(box.agentDir, "pi-codex-toolkit", "audit");
	const files = existsSync(dir) ? readdirSync(dir) : [];
	assert.equal(files.length, 1, `one audit file: ${files}`);
	const path = join(dir, files[0]);
	return { path, lines: readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l)) };
}

/** A script module from steps; a step may be a function source `(ctx) => step` given as a string. */
function script(box, steps) {
	const src = steps.map((s) => (typeof s === "string" ? s : JSON.stringify(s))).join(",\n");
	return writeScript(box, `export default [\n${src}\n];`);
}

const hostNames = (active) => active.filter((n) => HOST.includes(n) || REPLACED.includes(n)).sort();

/** Answers the next select dialog whose title starts with `title` with the first option starting with `prefix`. */
function chooser(plan) {
	return (req) => {
		const step = plan.shift();
		if (!step) return { cancelled: true };
		assert.ok(req.title.startsWith(step.title), `dialog "${req.title}", expected "${step.title}"`);
		const value = req.options.find((o) => o.startsWith(step.option));
		assert.ok(value, `no option "${step.option}" in ${JSON.stringify(req.options)}`);
		return { value };
	};
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] builtins hidden while the host tools are on, restored when /pct config turns them off; status block`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		const plan = [];
		const pi = new RpcPi({ version, box, extensions: [ROOT, PROBE], ui: chooser(plan) });
		try {
			const before = await probe(pi);
			for (const n of ["Read", "Glob", "Grep"]) assert.ok(before.active.includes(n), `${n} active: ${before.active}`);
			// Write/Edit (and with them Pi's edit/write) only when this build registers them.
			const edits = before.tools.some((t) => t.name === "Edit");
			for (const n of edits ? REPLACED : ["read", "grep", "find", "ls"]) assert.ok(!before.active.includes(n), `${n} hidden: ${before.active}`);
			if (edits) assert.ok(before.active.includes("Write") && before.active.includes("Edit"), `${before.active}`);
			// Bash and the Task tools (and with them Pi's bash hidden) only when this build registers them.
			const bashes = before.tools.some((t) => t.name === "Bash");
			if (bashes) {
				for (const n of ["Bash", "TaskList", "TaskWait", "TaskStop"]) assert.ok(before.active.includes(n), `${n} active: ${before.active}`);
				assert.ok(!before.active.includes("bash"), `bash hidden: ${before.active}`);
			} else assert.ok(before.active.includes("bash"), "bash stays (host Bash is not built here)");
			const st = await status(pi);
			assert.deepEqual(featureOf(st, "Host Tools"), { configured: "on", effective: "active", reason: "" });
			assert.match(st, /\n  permission mode: accept-edits \(hostTools\.permissionMode: the older key, still read; permissions\.mode wins when set\)\n  tools: Read, Glob, Grep(, Write, Edit)?(, Bash, TaskList, TaskWait, TaskStop)?\n(  note: [^\n]*\n)?  builtins replaced: read, grep, find, ls(, edit, write)?(, bash)?\n/);

			// Off through the menu: Pi's builtins come back (those Pi had active), ours leave.
			plan.push({ title: "Pi Codex Toolkit settings", option: "Host Tools: on" }, { title: "Pi Codex Toolkit settings", option: "Save" });
			await pi.prompt("/pct config");
			const off = await probe(pi);
			for (const n of HOST) assert.ok(!off.active.includes(n), `${n} gone: ${off.active}`);
			for (const n of ["read", "edit", "write", "bash"]) assert.ok(off.active.includes(n), `${n} restored: ${off.active}`);
			assert.deepEqual(JSON.parse(readFileSync(box.configPath, "utf8")).hostTools, { enabled: false, permissionMode: "accept-edits" });
			assert.equal(featureOf(await status(pi), "Host Tools").effective, "off");

			// The permission-mode row (it writes permissions.mode, the one policy for every tool), then on again: hidden again.
			plan.push(
				{ title: "Pi Codex Toolkit settings", option: "Permission mode: accept-edits" },
				{ title: "Permission mode", option: "auto" },
				{ title: "Pi Codex Toolkit settings", option: "Host Tools: off" },
				{ title: "Pi Codex Toolkit settings", option: "Save" },
			);
			await pi.prompt("/pct config");
			const saved = JSON.parse(readFileSync(box.configPath, "utf8"));
			assert.deepEqual(saved.hostTools, { enabled: true, permissionMode: "accept-edits" }, "the older key is left as it was");
			assert.deepEqual(saved.permissions, { mode: "auto" });
			const again = await probe(pi);
			assert.ok(again.active.includes("Read") && !again.active.includes("read"), `${again.active}`);
			assert.equal(plan.length, 0);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] Read, Glob and Grep in json mode; headless ask mode denies an external path naming auto; audit lines`, async () => {
		const box = sandbox();
		writeConfig(box, ON("ask"));
		put(box, "src/a.txt", "alpha\nbeta\n");
		put(box, ".gitignore", "ignored/\n");
		put(box, "ignored/x.txt", "beta\n");
		writeFileSync(join(box.base, "outside.txt"), "outside\n");
		const steps = [
			{ tools: [{ name: "Read", args: { file_path: "src/a.txt" } }, { name: "Glob", args: { pattern: "*.txt" } }] },
			{ tools: [{ name: "Grep", args: { pattern: "beta|sk-live-ABCDEFGH1234", literal: false } }] },
			{ tools: [{ name: "Read", args: { path: "../outside.txt" } }] },
			{ text: "done" },
		];
		const r = await runJson({ version, box, script: script(box, steps) });
		assert.equal(r.code, 0, r.stderr);
		// Read and Glob share one assistant message, so Pi 1.x runs them at once and either may end (and write its
		// audit line) first: results and audit lines are compared in the model's call order (tool_execution_start).
		const calls = r.events.filter((e) => e.type === "tool_execution_start").map((e) => e.toolCallId);
		const byCall = (a, b) => calls.indexOf(a.toolCallId) - calls.indexOf(b.toolCallId);
		const [read, glob, grep, ext] = [...r.toolEnds].sort(byCall);
		assert.equal(read.isError, false, toolText(read));
		assert.match(toolText(read), /^\[src\/a\.txt#[0-9A-F]{4}\]\n1:alpha\n2:beta$/);
		assert.equal(read.result.details.totalLines, 2);
		assert.deepEqual(glob.result.details.files, ["src/a.txt"], "ignored/x.txt is not listed");
		assert.deepEqual(grep.result.details.matches, [{ path: "src/a.txt", line: 2, text: "beta" }], "the ignored tree is skipped");
		assert.equal(ext.isError, true);
		assert.match(toolText(ext), /^TOOL_DENIED: Read on a path outside the workspace needs the user's confirmation in permission mode ask, and this session has no interactive UI to ask\. Permission mode auto would allow it/);

		const { path, lines: written } = audit(box);
		const lines = [...written].sort(byCall);
		assert.equal(statSync(path).mode & 0o777, 0o600);
		assert.equal(statSync(dirname(path)).mode & 0o777, 0o700);
		assert.deepEqual(lines.map((l) => [l.tool, l.decision, l.prompted, l.ok, l.errorCode, l.external]), [
			["Read", "allow", false, true, null, null],
			["Glob", "allow", false, true, null, null],
			["Grep", "allow", false, true, null, null],
			["Read", "denied-headless", false, false, "TOOL_DENIED", "dotdot-escape"],
		]);
		const ids = new Set(r.toolEnds.map((e) => e.toolCallId));
		for (const l of lines) {
			assert.ok(ids.has(l.toolCallId), `tool call id ${l.toolCallId}`);
			assert.match(l.argsHash, /^sha256:[0-9a-f]{64}$/);
			assert.equal(typeof l.totalMs, "number");
		}
		assert.equal(new Set(lines.map((l) => l.sessionId)).size, 1);
		assert.equal(new Set(lines.map((l) => l.turn)).size, 1, "one prompt, one turn id");
		// Every call has its own trace id: on its audit line, and in the details of each result Pi recorded with
		// details (a thrown failure has only its text; its trace id is on its audit line, docs/host.md "Trace ids").
		for (const l of lines) assert.match(l.traceId, /^pct-[0-9a-f]{16}$/);
		assert.equal(new Set(lines.map((l) => l.traceId)).size, lines.length);
		for (const end of [read, glob, grep]) {
			const line = lines.find((l) => l.toolCallId === end.toolCallId);
			assert.equal(end.result.details.traceId, line.traceId, end.toolName);
		}
		assert.equal(readFileSync(path, "utf8").includes("sk-live-ABCDEFGH1234"), false, "the key in Grep's pattern is redacted");
		assert.match(lines[2].argsPreview, /\[REDACTED\]/);
	});

	test(`[pi ${version.name}] Grep stops at the limit in path order and says 100+; total: true (in the schema) reaches the engine and counts all`, async () => {
		const box = sandbox();
		writeConfig(box, ON("ask"));
		// 150 files with one match each; the names sort differently by path than by name (`d/` after `d.txt`).
		for (let k = 0; k < 149; k++) put(box, `d/f${String(k).padStart(3, "0")}.txt`, "x\nneedle\n");
		put(box, "d.txt", "needle\n");
		const steps = [
			{ tools: [{ name: "Grep", args: { pattern: "needle" } }] },
			{ tools: [{ name: "Grep", args: { pattern: "needle", total: true } }] },
			{ text: "done" },
		];
		const r = await runJson({ version, box, script: script(box, steps) });
		assert.equal(r.code, 0, r.stderr);
		const [cut, counted] = r.toolEnds;
		for (const end of [cut, counted]) {
			assert.equal(end.isError, false, toolText(end));
			assert.equal(end.result.details.truncated, true);
			const shown = end.result.details.matches;
			assert.equal(shown.length, 100);
			assert.deepEqual(shown[0], { path: "d.txt", line: 1, text: "needle" });
			assert.deepEqual(shown[99], { path: "d/f098.txt", line: 2, text: "needle" });
		}
		assert.match(toolText(cut), /\n\n\[Showing the first 100 of 100\+ matches\. Narrow the pattern, path or glob, raise limit \(at most 100000\), or pass total: true to count them all\.\]$/);
		assert.match(toolText(counted), /\n\n\[Showing the first 100 of 150 matches in 150 files\. Narrow the pattern, path or glob, raise limit \(at most 100000\)\.\]$/);
	});

	test(`[pi ${version.name}] allow-session through RPC dialogs: asked once, remembered for the session, gone in a new one`, async () => {
		const box = sandbox();
		writeConfig(box, ON("ask"));
		writeFileSync(join(box.base, "outside.txt"), "outside\n");
		// A new session rebuilds the extensions, so the faux queue starts over there: the same two calls.
		const steps = [
			{ tools: [{ name: "Write", args: { path: "one.txt", content: "1\n" } }] },
			{ tools: [{ name: "Write", args: { path: "two.txt", content: "2\n" } }] },
			{ text: "done" },
			{ tools: [{ name: "Read", args: { path: "../outside.txt", limit: 1 } }] },
			{ text: "done under auto" },
		];
		// The second session: Deny on the first card, the second one dismissed (no answer = cancelled = denied).
		const plan = [{ title: "Allow Write to create", option: "Allow for this session" }, { title: "Allow Write to overwrite", option: "Deny" }];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: chooser(plan) });
		try {
			const first = await pi.prompt("write twice");
			const ends = first.events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(ends.map((e) => e.isError), [false, false], JSON.stringify(ends.map(toolText)));
			assert.equal(pi.uiRequests.filter((q) => q.method === "select").length, 1, "one card for two calls");
			assert.match(pi.uiRequests[0].title, /^Allow Write to create one\.txt\? \(\+1 -0\)/);
			assert.deepEqual(pi.uiRequests[0].options, ["Allow once", "Allow for this session", "Deny"]);
			assert.equal(pi.uiRequests[0].timeout, undefined, "no automatic timeout");
			// /pct permission lists the session grant and takes it back.
			assert.deepEqual((await pi.prompt("/pct permission")).notifications, [
				"Permission mode for every toolkit tool: ask (from the config)\nAllowed for this session: Write (/pct permission revoke <tool>|all asks again).",
			]);
			assert.deepEqual((await pi.prompt("/pct permission revoke Bash")).notifications, [
				"Bash was not allowed for this session. Allowed for this session: Write (/pct permission revoke <tool>|all asks again).",
			]);
			assert.deepEqual((await pi.prompt("/pct permission revoke Write")).notifications, ["Revoked for this session: Write; it asks again. Allowed for this session: none."]);
			assert.deepEqual((await pi.prompt("/pct permission revoke all")).notifications, ["No tool was allowed for this session."]);
			const r = await pi.command("new_session");
			assert.equal(r.success, true, JSON.stringify(r));
			const second = await pi.prompt("again");
			const denied = second.events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(denied.map((e) => e.isError), [true, true]);
			for (const e of denied) assert.match(toolText(e), /^TOOL_DENIED: The user denied permission for this Write call; it did not run\./);
			assert.equal(plan.length, 0, "a new session asks again");
			// /pct permission: the session override beats the config's ask, without a card.
			assert.deepEqual((await pi.prompt("/pct permission")).notifications, ["Permission mode for every toolkit tool: ask (from the config)\nAllowed for this session: none."]);
			assert.deepEqual((await pi.prompt("/pct permission sometimes")).notifications, ["Usage: /pct permission [ask|accept-edits|auto|default|revoke <tool>|revoke all]"]);
			assert.deepEqual((await pi.prompt("/pct permission auto")).notifications, [
				"Permission mode for this session: auto for every toolkit tool (the config's ask applies again in the next session).",
			]);
			const cards = pi.uiRequests.length;
			const third = await pi.prompt("once more");
			const end = third.events.find((e) => e.type === "tool_execution_end");
			assert.equal(end.isError, false, toolText(end));
			assert.equal(end.result.details.root, "external");
			assert.equal(pi.uiRequests.length, cards, "auto: no card for an external read");
			assert.deepEqual((await pi.prompt("/pct permission")).notifications, ["Permission mode for every toolkit tool: auto (this session; the config says ask)\nAllowed for this session: none."]);
			await pi.prompt("/pct permission default");
			assert.deepEqual((await pi.prompt("/pct permission")).notifications, ["Permission mode for every toolkit tool: ask (from the config)\nAllowed for this session: none."]);
		} finally {
			await pi.close();
		}
		const dir = join(box.agentDir, "pi-codex-toolkit", "audit");
		const lines = readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l)));
		assert.deepEqual(lines.map((l) => [l.decision, l.prompted, l.ok]).sort(), [
			["allow", false, true],
			["allow-session", false, true],
			["allow-session", true, true],
			["deny", true, false],
			["deny", true, false],
		], JSON.stringify(lines));
		assert.ok(lines.find((l) => l.prompted && l.ok).permissionWaitMs >= 0);
	});
}

/** The `[path#TAG]` tag of the last tool result of a step context (as a JS source snippet for step functions). */
const TAG_OF = `const tagOf = (r) => (r.details && r.details.tag) || /#([0-9A-F]{4})\\]/.exec(r.text)[1];`;

/** Runs a json-mode session with steps; asserts a clean exit and returns the tool ends. */
async function runSteps(version, box, steps, env, timeoutMs) {
	const src = `import { writeFileSync, readFileSync } from "node:fs";\n${TAG_OF}\nexport default [\n${steps.map((s) => (typeof s === "string" ? s : JSON.stringify(s))).join(",\n")}\n];`;
	const r = await runJson({ version, box, script: writeScript(box, src), env, timeoutMs });
	assert.equal(r.code, 0, r.stderr);
	return r;
}

const FIVE = "one\ntwo\nthree\nfour\nfive\n";

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] Read → Edit → Read round trip; Write then Edit`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		put(box, "a.txt", FIVE);
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: "a.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 2.=3:\\n+TWO\\n+THREE\\nPUT >$:\\n+six" } }] })`,
			{ tools: [{ name: "Read", args: { file_path: "a.txt" } }] },
			{ tools: [{ name: "Write", args: { path: "notes/new.md", content: "[notes/new.md#0000]\n1:alpha\n2:beta\n" } }] },
			`(ctx) => ({ tools: [{ name: "Edit", args: { file_path: "notes/new.md", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT <1:\\n+# title" } }] })`,
			{ text: "done" },
		]);
		const [read, edit, reread, write, edit2] = r.toolEnds;
		assert.deepEqual(r.toolEnds.map((e) => e.isError), [false, false, false, false, false], r.toolEnds.map(toolText).join("\n---\n"));
		assert.equal(get(box, "a.txt"), "one\nTWO\nTHREE\nfour\nfive\nsix\n");
		assert.equal(edit.result.details.added, 3);
		assert.equal(edit.result.details.removed, 2);
		assert.notEqual(edit.result.details.tag, read.result.details.tag);
		assert.equal(reread.result.details.tag, edit.result.details.tag, "Read after Edit shows the tag Edit returned");
		assert.match(toolText(reread), /\n2:TWO\n3:THREE\n4:four\n5:five\n6:six$/);
		assert.deepEqual(write.result.details.created, true);
		assert.equal(get(box, "notes/new.md"), "# title\nalpha\nbeta\n", "the pasted header and N: prefixes were stripped");
		assert.equal(edit2.result.details.path, "notes/new.md");
		const { lines } = audit(box);
		assert.deepEqual(lines.map((l) => [l.tool, l.decision, l.ok]), [
			["Read", "allow", true], ["Edit", "allow", true], ["Read", "allow", true], ["Write", "allow", true], ["Edit", "allow", true],
		]);
	});

	test(`[pi ${version.name}] stale tags: an external insertion above is recovered, a change on the anchor refuses with the live tag`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		put(box, "a.txt", FIVE);
		const file = JSON.stringify(join(box.cwd, "a.txt"));
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			// Someone inserts two lines at the top; the model still edits line 4 of what it read.
			`(ctx) => { writeFileSync(${file}, "x\\ny\\n" + readFileSync(${file}, "utf8")); return { tools: [{ name: "Edit", args: { path: "a.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 4.=4:\\n+FOUR" } }] }; }`,
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			// Now the anchored line itself changes under the model.
			`(ctx) => { writeFileSync(${file}, readFileSync(${file}, "utf8").replace("five", "FIVE!")); return { tools: [{ name: "Edit", args: { path: "a.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 7.=7:\\n+5" } }] }; }`,
			{ text: "done" },
		]);
		const [, recovered, , refused] = r.toolEnds;
		assert.equal(recovered.isError, false, toolText(recovered));
		assert.match(toolText(recovered), /Warning:/);
		assert.equal(refused.isError, true);
		assert.match(toolText(refused), /^EDIT_TAG_MISMATCH: /);
		assert.equal(get(box, "a.txt"), "x\ny\none\ntwo\nthree\nFOUR\nFIVE!\n", "the refused Edit changed nothing");
	});

	test(`[pi ${version.name}] a line added inside a run of equal lines: the Edit is refused, never written to the wrong line`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		put(box, "f.txt", "begin\nitem\nitem\nitem\nend\n");
		const file = JSON.stringify(join(box.cwd, "f.txt"));
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "f.txt" } }] },
			// `sed -i '1a item' f.txt` after the Read: the model's line 3 could now be line 3 or 4.
			`(ctx) => { writeFileSync(${file}, "begin\\nitem\\nitem\\nitem\\nitem\\nend\\n"); return { tools: [{ name: "Edit", args: { path: "f.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 3.=3:\\n+ITEM" } }] }; }`,
			{ text: "done" },
		]);
		const [, refused] = r.toolEnds;
		assert.equal(refused.isError, true, toolText(refused));
		assert.match(toolText(refused), /^EDIT_TAG_MISMATCH: .*so its place is ambiguous/);
		assert.equal(get(box, "f.txt"), "begin\nitem\nitem\nitem\nitem\nend\n", "the refused Edit changed nothing");
	});

	test(`[pi ${version.name}] an ambiguous place shows the lines at both places, however far apart`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		put(box, "f.txt", "k\nl\nm\n");
		const file = JSON.stringify(join(box.cwd, "f.txt"));
		const between = Array.from({ length: 200 }, (_, k) => `between ${k}\n`).join("");
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "f.txt" } }] },
			// After the Read the file gains 200 lines and a second `k l m`: the model's line 2 could be line 2 or 205.
			`(ctx) => { writeFileSync(${file}, ${JSON.stringify(`k\nl\nm\n${between}k\nl\nm\n`)}); return { tools: [{ name: "Edit", args: { path: "f.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 2.=2:\\n+L" } }] }; }`,
			{ text: "done" },
		]);
		const [, refused] = r.toolEnds;
		assert.equal(refused.isError, true, toolText(refused));
		const text = toolText(refused);
		assert.match(text, /^EDIT_TAG_MISMATCH: .*could be line 2 or line 205 .*Read the file and choose one/);
		for (const row of ["1:k", "2:l", "3:m", "204:k", "205:l", "206:m"]) assert.ok(text.split("\n").includes(row), `row ${row} missing: ${text}`);
		assert.equal(get(box, "f.txt"), `k\nl\nm\n${between}k\nl\nm\n`, "the refused Edit changed nothing");
	});

	test(`[pi ${version.name}] an append after the last line lands with a stale warning though another line changed`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		put(box, "f.txt", "first\nsecond\nthird\n");
		const file = JSON.stringify(join(box.cwd, "f.txt"));
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "f.txt" } }] },
			`(ctx) => { writeFileSync(${file}, "first\\nSECOND\\nthird\\n"); return { tools: [{ name: "Edit", args: { path: "f.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT >$:\\n+fourth" } }] }; }`,
			{ text: "done" },
		]);
		const [, appended] = r.toolEnds;
		assert.equal(appended.isError, false, toolText(appended));
		assert.match(toolText(appended), /Warning: tag [0-9A-F]{4} was stale/);
		assert.equal(get(box, "f.txt"), "first\nSECOND\nthird\nfourth\n");
	});

	test(`[pi ${version.name}] unseen lines are revealed and the same Edit then lands; Grep then Edit on matched lines`, async () => {
		const box = sandbox();
		writeConfig(box, ON("accept-edits"));
		put(box, "a.txt", FIVE);
		put(box, "b.txt", "alpha\nbeta\ngamma\n");
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "a.txt", limit: 2 } }] },
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: "a.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 4.=4:\\n+FOUR" } }] })`,
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: "a.txt", tag: /\\[a\\.txt#([0-9A-F]{4})\\]/.exec(ctx.lastToolResults[0].text)?.[1] ?? "0000", ops: "PUT 4.=4:\\n+FOUR" } }] })`,
			{ tools: [{ name: "Grep", args: { pattern: "beta", path: "b.txt" } }] },
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: "b.txt", tag: ctx.lastToolResults[0].details.tags["b.txt"], ops: "PUT 2.=2:\\n+BETA" } }] })`,
			{ text: "done" },
		]);
		const [, unseen, landed, , grepEdit] = r.toolEnds;
		assert.equal(unseen.isError, true);
		assert.match(toolText(unseen), /^EDIT_LINES_UNSEEN: /);
		assert.match(toolText(unseen), /4:four/, "the reveal shows the unseen line");
		assert.equal(landed.isError, false, toolText(landed));
		assert.equal(get(box, "a.txt"), "one\ntwo\nthree\nFOUR\nfive\n");
		assert.equal(grepEdit.isError, false, toolText(grepEdit));
		assert.equal(get(box, "b.txt"), "alpha\nBETA\ngamma\n");
	});

	test(`[pi ${version.name}] headless ask mode: Write is TOOL_DENIED naming accept-edits and nothing is written; scratch writes need no card`, async () => {
		const box = sandbox();
		writeConfig(box, ON("ask"));
		const auditDir = JSON.stringify(join(box.agentDir, "pi-codex-toolkit", "audit"));
		const scratchOf = `(await import("node:fs")).readdirSync(${auditDir})[0].replace(/\\.jsonl$/, "")`;
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Write", args: { path: "new.txt", content: "x\n" } }] },
			`async () => ({ tools: [{ name: "Write", args: { path: ${JSON.stringify(join(box.agentDir, "pi-codex-toolkit", "scratch"))} + "/" + ${scratchOf} + "/note.md", content: "draft\\n" } }] })`,
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: ctx.lastToolResults[0].details.path, tag: tagOf(ctx.lastToolResults[0]), ops: "PUT >$:\\n+more" } }] })`,
			{ text: "done" },
		]);
		const [w, scratchWrite, scratchEdit] = r.toolEnds;
		assert.equal(w.isError, true);
		assert.match(toolText(w), /^TOOL_DENIED: Write needs the user's confirmation in permission mode ask, and this session has no interactive UI to ask\. Permission mode accept-edits would allow it/);
		assert.equal(existsSync(join(box.cwd, "new.txt")), false);
		assert.equal(scratchWrite.isError, false, toolText(scratchWrite));
		assert.equal(scratchWrite.result.details.root, "scratch");
		assert.equal(scratchEdit.isError, false, toolText(scratchEdit));
		const { lines } = audit(box);
		assert.deepEqual(lines.map((l) => [l.tool, l.decision, l.ok]), [["Write", "denied-headless", false], ["Write", "allow", true], ["Edit", "allow", true]]);
		assert.equal(readFileSync(join(box.agentDir, "pi-codex-toolkit", "scratch", lines[0].sessionId, "note.md"), "utf8"), "draft\nmore\n");
	});

	test(`[pi ${version.name}] the retry budget: the third counted Edit failure on a path stops the turn`, async () => {
		const box = sandbox();
		writeConfig(box, ON("auto"));
		put(box, "a.txt", FIVE);
		const bad = `(ctx) => ({ tools: [{ name: "Edit", args: { path: "a.txt", tag: globalThis.pctTag ??= tagOf(ctx.lastToolResults[0]), ops: "PUT 9.=2:\\n+x" } }] })`;
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			bad,
			bad,
			bad,
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			{ text: "never reached" },
		]);
		assert.equal(r.toolEnds.length, 4, "the turn stopped after the third failure: " + r.toolEnds.map(toolText).join("\n---\n"));
		const last = r.toolEnds[3];
		assert.match(toolText(last), /^EDIT_RANGE_INVALID: /);
		assert.equal(last.result.details.budgetExhausted, true);
		if (version.name !== "0.87.1") assert.equal(last.isError, true);
		assert.equal(get(box, "a.txt"), FIVE);
	});

	test(`[pi ${version.name}] the retry budget stops the turn also when the exhausted Edit is batched with a Read`, async () => {
		const box = sandbox();
		writeConfig(box, ON("auto"));
		put(box, "a.txt", FIVE);
		const bad = `(ctx) => ({ tools: [{ name: "Edit", args: { path: "a.txt", tag: globalThis.pctTag ??= tagOf(ctx.lastToolResults[0]), ops: "PUT 9.=2:\\n+x" } }] })`;
		const badWithRead = `() => ({ tools: [{ name: "Read", args: { path: "a.txt" } }, { name: "Edit", args: { path: "a.txt", tag: globalThis.pctTag, ops: "PUT 9.=2:\\n+x" } }] })`;
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			bad,
			bad,
			badWithRead,
			{ tools: [{ name: "Write", args: { path: "after.txt", content: "never\n" } }] },
			{ text: "never reached" },
		], undefined, 180000);
		assert.equal(r.toolEnds.length, 5, "the turn stopped after the batch: " + r.toolEnds.map(toolText).join("\n---\n"));
		const edit = r.toolEnds.find((e, i) => i >= 3 && e.toolName === "Edit");
		assert.equal(edit.result.details.budgetExhausted, true, toolText(edit));
		assert.equal(existsSync(join(box.cwd, "after.txt")), false, "no model request after the batch");
		assert.equal(get(box, "a.txt"), FIVE);
	});

	test(`[pi ${version.name}] the retry budget: a failed apply_patch counts with the Edits of the same file`, async () => {
		const box = sandbox();
		writeConfig(box, { ...ON("auto"), applyPatch: { enabled: true } });
		put(box, "a.txt", FIVE);
		const bad = `(ctx) => ({ tools: [{ name: "Edit", args: { path: "a.txt", tag: globalThis.pctTag ??= tagOf(ctx.lastToolResults[0]), ops: "PUT 9.=2:\\n+x" } }] })`;
		const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-no such line\n+x\n*** End Patch";
		const r = await runSteps(version, box, [
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			bad,
			{ tools: [{ name: "apply_patch", args: { patch } }] },
			bad,
			{ tools: [{ name: "Read", args: { path: "a.txt" } }] },
			{ text: "never reached" },
		]);
		assert.deepEqual(r.toolEnds.map((e) => e.toolName), ["Read", "Edit", "apply_patch", "Edit"], r.toolEnds.map(toolText).join("\n---\n"));
		assert.match(toolText(r.toolEnds[2]), /^apply_patch failed/);
		const last = r.toolEnds[3];
		assert.match(toolText(last), /^EDIT_RANGE_INVALID: /);
		assert.equal(last.result.details.budgetExhausted, true, "Edit, apply_patch, Edit: three counted failures");
		assert.equal(get(box, "a.txt"), FIVE);
	});
}
