// /pct review through the real Pi (0.87.1 and 1.6.0), offline with the scripted faux model, in RPC mode with
// scripted dialog answers: apply_patch changes (direct and from a code cell) are listed, shown as a diff and rolled
// back byte for byte; a rollback after an external edit is refused (conflict); without a UI the list is printed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PI_VERSIONS, RpcPi, runJson, sandbox, toolText, writeToolConfig as writeConfig, writeScript } from "../helpers/pi.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).

function put(box, rel, text) {
	mkdirSync(dirname(join(box.cwd, rel)), { recursive: true });
	writeFileSync(join(box.cwd, rel), text);
}

/** Every file of the workspace with its bytes (hex). */
function tree(dir, base = dir, out = {}) {
	for (const name of readdirSync(dir).sort()) {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) tree(p, base, out);
		else out[p.slice(base.length + 1)] = readFileSync(p, "hex");
	}
	return out;
}

/** Answers select dialogs from a queue of option matchers (string prefix or regexp); records every request. */
function selectQueue(choices) {
	const q = [...choices];
	return (req) => {
		if (req.method !== "select") return { cancelled: true };
		const want = q.shift();
		if (want === undefined) return { cancelled: true };
		const hit = req.options.find((o) => (want instanceof RegExp ? want.test(o) : o.startsWith(want)));
		if (!hit) throw new Error(`no option ${want} in ${JSON.stringify(req.options)}`);
		return { value: hit };
	};
}

const PATCH = [
	"*** Begin Patch",
	"*** Add File: notes/todo.md",
	"+first line",
	"*** Update File: src/app.js",
	"@@",
	" function a() {",
	"-  return 1;",
	"+  return 10;",
	"*** Delete File: obsolete.txt",
	"*** Update File: old/name.md",
	"*** Move to: new/deeper/name.md",
	"@@",
	" # Title",
	"-body",
	"+moved body",
	"*** End Patch",
].join("\n");

function seed(box) {
	put(box, "src/app.js", "function a() {\n  return 1;\n}\n");
	put(box, "obsolete.txt", "bye\r\n");
	put(box, "old/name.md", "# Title\nbody\n");
}

const ROWS = [
	"#1 A notes/todo.md  apply_patch  +1 -0  active",
	"#2 M src/app.js  apply_patch  +1 -1  active",
	"#3 D obsolete.txt  apply_patch  +0 -1  active",
	"#4 D old/name.md (moved to new/deeper/name.md)  apply_patch  +0 -0  active",
	"#5 A new/deeper/name.md (moved from old/name.md)  apply_patch  +1 -1  active",
];

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] apply_patch add/update/delete/move, then /pct review lists, shows a diff and rolls back all byte for byte`, async () => {
		const box = sandbox("pct-review-e2e-");
		writeConfig(box, { applyPatch: { enabled: true } });
		seed(box);
		const before = tree(box.cwd);
		const script = writeScript(box, `export default [${JSON.stringify({ tools: [{ name: "apply_patch", args: { patch: PATCH } }] })}, { text: "done" }];`);
		const ui = selectQueue([/^#2 M src\/app\.js/, "Show diff", "Roll back all (newest first)", "Roll back all", "Close"]);
		const pi = new RpcPi({ version, box, script, ui });
		try {
			const out = await pi.prompt("go");
			const end = out.events.find((e) => e.type === "tool_execution_end");
			assert.equal(end.isError, false, toolText(end));
			assert.notDeepEqual(tree(box.cwd), before);
			const r = await pi.prompt("/pct review");
			const selects = pi.uiRequests.filter((q) => q.method === "select");
			assert.equal(selects[0].title, "Review: 5 changes in this session (5 active, 0 rolled back)");
			assert.deepEqual(selects[0].options, [...ROWS, "Roll back all (newest first)", "Close"]);
			assert.deepEqual(selects[1].options, ["Show diff", "Roll back", "Back"]);
			const text = r.notifications.join("\n");
			assert.match(text, /--- a\/src\/app\.js\n\+\+\+ b\/src\/app\.js\n@@ -1,3 \+1,3 @@\n function a\(\) \{\n-  return 1;\n\+  return 10;\n \}\n/);
			assert.match(text, /^Rolled back 5 changes:\n- delete old\/name\.md\n- edit new\/deeper\/name\.md\n- delete obsolete\.txt\n- edit src\/app\.js\n- write notes\/todo\.md$/m);
			// The list after the rollback: every change rolled back, no "Roll back all" any more.
			const last = selects[selects.length - 1];
			assert.deepEqual(last.options, [...ROWS.map((row) => row.replace(/active$/, "rolled back")), "Close"]);
			assert.deepEqual(tree(box.cwd), before, "the tree is back byte for byte");
			assert.equal(existsSync(join(box.cwd, "notes")), false, "folders the patch created are removed again");
			assert.equal(existsSync(join(box.cwd, "new")), false);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a rollback after an external edit is refused (conflict) and touches nothing`, async () => {
		const box = sandbox("pct-review-e2e-");
		writeConfig(box, { applyPatch: { enabled: true } });
		put(box, "a.txt", "one\n");
		put(box, "b.txt", "two\n");
		const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-two\n+TWO\n*** End Patch";
		const script = writeScript(box, `export default [${JSON.stringify({ tools: [{ name: "apply_patch", args: { patch } }] })}, { text: "done" }];`);
		const pi = new RpcPi({ version, box, script });
		try {
			await pi.prompt("go");
			writeFileSync(join(box.cwd, "b.txt"), "TWO\nedited by the user\n");
			const now = tree(box.cwd);
			let r = await pi.prompt("/pct review rollback all");
			assert.equal(r.notifications.length, 1);
			assert.match(r.notifications[0], /^Rollback refused \(conflict\): 'b\.txt' was changed by someone else since apply_patch changed it, so it was not rolled back and nothing was touched\./);
			assert.deepEqual(tree(box.cwd), now);
			r = await pi.prompt("/pct review rollback 1");
			assert.deepEqual(r.notifications, ["Rolled back 1 change:\n- edit a.txt"]);
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "one\n");
			assert.equal(readFileSync(join(box.cwd, "b.txt"), "utf8"), "TWO\nedited by the user\n");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a nested apply_patch from a code cell is recorded too and rolls back`, async () => {
		const box = sandbox("pct-review-e2e-");
		writeConfig(box, { codeMode: { enabled: true, approvalMode: "always" }, applyPatch: { enabled: true } });
		put(box, "cfg.ini", "x=1\n");
		const nested = "*** Begin Patch\n*** Add File: from-cell.txt\n+made in a cell\n*** Update File: cfg.ini\n@@\n-x=1\n+x=2\n*** End Patch";
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec", args: { code: ${JSON.stringify(`const p = await tools.apply_patch(${JSON.stringify(nested)}); return p.text;`)} } }] },
			{ text: "done" },
		];`);
		const pi = new RpcPi({ version, box, script });
		try {
			const out = await pi.prompt("go", 120000);
			const end = out.events.find((e) => e.type === "tool_execution_end");
			assert.match(String(end.result.details.result), /add from-cell\.txt/, toolText(end));
			let r = await pi.prompt("/pct review show 2");
			assert.equal(r.notifications.length, 1);
			assert.match(r.notifications[0], /^#2 M cfg\.ini  apply_patch  \+1 -1  active \(modified\)\n--- a\/cfg\.ini\n\+\+\+ b\/cfg\.ini\n@@ -1 \+1 @@\n-x=1\n\+x=2\n$/);
			r = await pi.prompt("/pct review rollback all");
			assert.deepEqual(r.notifications, ["Rolled back 2 changes:\n- edit cfg.ini\n- write from-cell.txt"]);
			assert.equal(readFileSync(join(box.cwd, "cfg.ini"), "utf8"), "x=1\n");
			assert.equal(existsSync(join(box.cwd, "from-cell.txt")), false);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] without a UI /pct review prints the list; an in-memory session's store goes at shutdown`, async () => {
		const box = sandbox("pct-review-e2e-");
		writeConfig(box, { applyPatch: { enabled: true } });
		const r = await runJson({ version, box, prompt: "/pct review", script: writeScript(box, "export default [];") });
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stderr, /^No file changes recorded in this session\.$/m);
		// A patch in an in-memory (--no-session) session: recorded while it runs, removed when it ends.
		const patch = "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch";
		const script = writeScript(box, `export default [${JSON.stringify({ tools: [{ name: "apply_patch", args: { patch } }] })}, { text: "done" }];`);
		const pi = new RpcPi({ version, box, script });
		const reviewDir = join(box.agentDir, "pi-codex-toolkit", "review");
		try {
			await pi.prompt("go");
			assert.equal(readdirSync(reviewDir).length, 1);
		} finally {
			await pi.close();
		}
		assert.deepEqual(readdirSync(reviewDir), []);
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] Write + Edit + apply_patch, then /pct review lists all three tools and a rollback of all restores the tree`, async () => {
		const box = sandbox("pct-review-e2e-");
		writeConfig(box, { hostTools: { enabled: true, permissionMode: "auto" }, applyPatch: { enabled: true } });
		put(box, "e.txt", "one\ntwo\n");
		put(box, "p.txt", "x\n");
		const before = tree(box.cwd);
		const tagOf = `const tagOf = (r) => (r.details && r.details.tag) || /#([0-9A-F]{4})\\]/.exec(r.text)[1];`;
		const patch = "*** Begin Patch\n*** Update File: p.txt\n@@\n-x\n+y\n*** End Patch";
		const steps = [
			JSON.stringify({ tools: [{ name: "Write", args: { path: "made/w.txt", content: "w\n" } }] }),
			JSON.stringify({ tools: [{ name: "Read", args: { path: "e.txt" } }] }),
			`(ctx) => ({ tools: [{ name: "Edit", args: { path: "e.txt", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 2.=2:\\n+TWO" } }] })`,
			JSON.stringify({ tools: [{ name: "apply_patch", args: { patch } }] }),
			JSON.stringify({ text: "done" }),
		];
		const script = writeScript(box, `${tagOf}\nexport default [\n${steps.join(",\n")}\n];`);
		const pi = new RpcPi({ version, box, script });
		try {
			const out = await pi.prompt("go", 120000);
			const ends = out.events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(ends.map((e) => [e.toolName, e.isError]), [["Write", false], ["Read", false], ["Edit", false], ["apply_patch", false]], ends.map(toolText).join("\n---\n"));
			// Write's and Edit's results carry their review evidence (docs/review.md "In the tool result").
			assert.deepEqual(ends[0].result.details.review.map((c) => [c.path, c.operation, c.status, c.additions, c.state]), [["made/w.txt", "write", "added", 1, "active"]]);
			assert.deepEqual(ends[2].result.details.review.map((c) => [c.path, c.operation, c.status, c.additions, c.deletions]), [["e.txt", "edit", "modified", 1, 1]]);
			assert.match(ends[2].result.details.review[0].snapshotId, /^[0-9a-f]{32}$/);
			let r = await pi.prompt("/pct review");
			// RPC has a UI: the list comes as a select (cancelled by the default answer).
			const list = pi.uiRequests.filter((q) => q.method === "select").at(-1);
			assert.deepEqual(list.options, [
				"#1 A made/w.txt  Write  +1 -0  active",
				"#2 M e.txt  Edit  +1 -1  active",
				"#3 M p.txt  apply_patch  +1 -1  active",
				"Roll back all (newest first)",
				"Close",
			]);
			r = await pi.prompt("/pct review show 1");
			assert.match(r.notifications[0], /^#1 A made\/w\.txt  Write  \+1 -0  active \(added\)\n--- \/dev\/null\n\+\+\+ b\/made\/w\.txt\n/);
			r = await pi.prompt("/pct review rollback all");
			assert.deepEqual(r.notifications, ["Rolled back 3 changes:\n- edit p.txt\n- edit e.txt\n- write made/w.txt"]);
			assert.deepEqual(tree(box.cwd), before, "the tree is back byte for byte");
			assert.equal(existsSync(join(box.cwd, "made")), false);
		} finally {
			await pi.close();
		}
	});
}
