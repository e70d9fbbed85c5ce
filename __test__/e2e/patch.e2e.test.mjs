// apply_patch through the real Pi (0.87.1 and 1.6.0), offline with the scripted faux model.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { PI_VERSIONS, runJson, sandbox, toolText, writeToolConfig as writeConfig, writeScript } from "../helpers/pi.mjs";
import { native } from "../helpers/addon.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).

const ENABLED = { applyPatch: { enabled: true } };
const APP_JS = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n\nfunction c() {\n  return 3;\n}\n";

function put(box, rel, text) {
	mkdirSync(dirname(join(box.cwd, rel)), { recursive: true });
	writeFileSync(join(box.cwd, rel), text);
}
const get = (box, rel) => readFileSync(join(box.cwd, rel), "utf8");

/** Every file of the workspace with its content, for "nothing changed" checks. */
function tree(dir, base = dir, out = {}) {
	for (const name of readdirSync(dir).sort()) {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) tree(p, base, out);
		else out[p.slice(base.length + 1)] = readFileSync(p, "hex");
	}
	return out;
}

/** A script: one assistant message with the given tool calls, then a final text. */
function script(box, calls) {
	return writeScript(box, `export default [${JSON.stringify({ tools: calls })}, { text: "done" }];`);
}

async function run(version, box, calls, env) {
	const r = await runJson({ version, box, script: script(box, calls), env });
	assert.equal(r.code, 0, r.stderr);
	assert.equal(r.toolEnds.length, calls.length, JSON.stringify(r.events.slice(-5)));
	return r;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] one multi-file patch: add, update with several chunks, delete, move into new folders`, async () => {
		const box = sandbox();
		writeConfig(box, ENABLED);
		put(box, "src/app.js", APP_JS);
		put(box, "obsolete.txt", "bye\n");
		put(box, "old/name.md", "# Title\nbody\n");
		const patch = [
			"*** Begin Patch",
			"*** Add File: notes/todo.md",
			"+first line",
			"*** Update File: src/app.js",
			"@@ function a() {",
			"-  return 1;",
			"+  return 10;",
			"@@ function c() {",
			"-  return 3;",
			"+  return 30;",
			" }",
			"*** End of File",
			"*** Delete File: obsolete.txt",
			"*** Update File: old/name.md",
			"*** Move to: new/deeper/name.md",
			"@@",
			" # Title",
			"-body",
			"+moved body",
			"*** End Patch",
		].join("\n");
		const r = await run(version, box, [{ name: "apply_patch", args: { patch } }]);
		const end = r.toolEnds[0];
		assert.equal(end.isError, false, toolText(end));
		assert.equal(toolText(end), "Applied patch:\n- add notes/todo.md\n- update src/app.js\n- delete obsolete.txt\n- move old/name.md -> new/deeper/name.md");
		// Every toolkit result carries its call's trace id (docs/host.md "Trace ids"); the rest is the patch's.
		const { traceId, ...details } = end.result.details;
		assert.match(traceId, /^pct-[0-9a-f]{16}$/);
		// Each change carries the engine's screen view of it (docs/render.md "Diffs"): the same view diffTexts gives.
		const view = (before, after) => native.diffTexts(before, after);
		assert.deepEqual(details, {
			operations: [
				{ operation: "add", path: "notes/todo.md", diff: await view("", "first line\n") },
				{ operation: "update", path: "src/app.js", diff: await view(APP_JS, get(box, "src/app.js")) },
				{ operation: "delete", path: "obsolete.txt" },
				{ operation: "move", path: "new/deeper/name.md", from: "old/name.md", diff: await view("# Title\nbody\n", "# Title\nmoved body\n") },
			],
		});
		assert.equal(get(box, "notes/todo.md"), "first line\n");
		assert.equal(get(box, "src/app.js"), "function a() {\n  return 10;\n}\n\nfunction b() {\n  return 2;\n}\n\nfunction c() {\n  return 30;\n}\n");
		assert.equal(existsSync(join(box.cwd, "obsolete.txt")), false);
		assert.equal(existsSync(join(box.cwd, "old/name.md")), false);
		assert.equal(get(box, "new/deeper/name.md"), "# Title\nmoved body\n");
	});

	test(`[pi ${version.name}] a refused patch is an error result with the exact text and changes nothing`, async () => {
		const box = sandbox();
		writeConfig(box, ENABLED);
		put(box, "a.txt", "one\ntwo\n");
		put(box, "b.txt", "three\n");
		const before = tree(box.cwd);
		const patch = "*** Begin Patch\n*** Update File: a.txt\n-one\n+1\n*** Add File: c.txt\n+new\n*** Update File: b.txt\n-four\n+4\n*** End Patch\n";
		const r = await run(version, box, [
			{ name: "apply_patch", args: { patch } },
			{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch" } },
		]);
		// Parallel tool execution: results arrive in completion order.
		const [mismatch, escape] = [/context mismatch/, /traversal/].map((re) => r.toolEnds.find((e) => re.test(toolText(e))));
		assert.equal(mismatch.isError, true);
		assert.match(toolText(mismatch), /^apply_patch failed \(no-change\): context mismatch in 'b\.txt'\. Chunk 1 of 1 did not match at or after line 1\. Expected lines:\n {2}\| four\n/);
		assert.equal(escape.isError, true);
		assert.equal(toolText(escape), "apply_patch failed (no-change): path traversal is not allowed: '../escape.txt'");
		assert.deepEqual(tree(box.cwd), before);
		assert.equal(existsSync(join(box.base, "escape.txt")), false);
	});

	test(`[pi ${version.name}] apply_patch and Pi's edit on the same file in one message are serialized by the queue`, async () => {
		const box = sandbox();
		writeConfig(box, ENABLED);
		put(box, "shared.txt", "alpha\nbeta\ngamma\n");
		const patch = "*** Begin Patch\n*** Update File: shared.txt\n@@\n alpha\n-beta\n+BETA FROM PATCH\n gamma\n*** End Patch";
		// The edit's oldText exists only after the patch: it succeeds only if it runs after the commit. The test
		// hook holds the patch 400 ms between preflight and commit, so without the queue the edit would run first.
		const r = await run(
			version,
			box,
			[
				{ name: "apply_patch", args: { patch } },
				{ name: "edit", args: { path: "shared.txt", edits: [{ oldText: "BETA FROM PATCH", newText: "beta from patch, then edit" }] } },
			],
			{ PCT_TEST_PATCH_DELAY_MS: "400" },
		);
		for (const end of r.toolEnds) assert.equal(end.isError, false, `${end.toolName}: ${toolText(end)}`);
		assert.deepEqual(r.toolEnds.map((e) => e.toolName).sort(), ["apply_patch", "edit"]);
		assert.equal(get(box, "shared.txt"), "alpha\nbeta from patch, then edit\ngamma\n");
	});

	test(`[pi ${version.name}] without applyPatch.enabled the tool is not offered`, async () => {
		const box = sandbox();
		put(box, "a.txt", "x\n");
		const r = await runJson({ version, box, script: script(box, [{ name: "apply_patch", args: { patch: "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch" } }]) });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.toolEnds[0].isError, true);
		assert.equal(toolText(r.toolEnds[0]), "Tool apply_patch not found");
		assert.equal(existsSync(join(box.cwd, "a.txt")), true);
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] a patch whose context drifted after a toolkit Read is placed through the copy the Read showed`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true }, hostTools: { enabled: true } });
		const shown = "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n";
		put(box, "m.rs", shown);
		const file = JSON.stringify(join(box.cwd, "m.rs"));
		const patch = "*** Begin Patch\n*** Update File: m.rs\n@@\n fn b() {\n-    y();\n+    z();\n }\n*** End Patch\n";
		// After the Read, the edited window is copied above: in the file as it is the context matches twice.
		const src = `import { writeFileSync } from "node:fs";\nexport default [\n${JSON.stringify({ tools: [{ name: "Read", args: { path: "m.rs" } }] })},\n() => { writeFileSync(${file}, ${JSON.stringify("fn b() {\n    y();\n}\n" + shown)}); return { tools: [{ name: "apply_patch", args: { patch: ${JSON.stringify(patch)} } }] }; },\n{ text: "done" }\n];`;
		const r = await runJson({ version, box, script: writeScript(box, src) });
		assert.equal(r.code, 0, r.stderr);
		const [read, applied] = r.toolEnds;
		assert.equal(read.isError, false, toolText(read));
		assert.equal(applied.isError, false, toolText(applied));
		assert.match(toolText(applied), /^Applied patch:\n- update m\.rs\nNote: 'm\.rs' changed since it was shown to you/);
		assert.equal(get(box, "m.rs"), "fn b() {\n    y();\n}\n" + shown.replace("y();", "z();"));
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] a chunk of two changes with lines added between them since a toolkit Read lands change by change`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true }, hostTools: { enabled: true } });
		const shown = "a\nb\nc\nd\ne\nf\ng\nh\n";
		put(box, "m.txt", shown);
		const file = JSON.stringify(join(box.cwd, "m.txt"));
		// One chunk: `b` and `f` changed, `c d e` the context between them; a line lands between `d` and `e` after the Read.
		const patch = "*** Begin Patch\n*** Update File: m.txt\n@@\n a\n-b\n+B\n c\n d\n e\n-f\n+F\n g\n*** End Patch\n";
		const src = `import { writeFileSync } from "node:fs";\nexport default [\n${JSON.stringify({ tools: [{ name: "Read", args: { path: "m.txt" } }] })},\n() => { writeFileSync(${file}, ${JSON.stringify("a\nb\nc\nd\nNEW\ne\nf\ng\nh\n")}); return { tools: [{ name: "apply_patch", args: { patch: ${JSON.stringify(patch)} } }] }; },\n{ text: "done" }\n];`;
		const r = await runJson({ version, box, script: writeScript(box, src) });
		assert.equal(r.code, 0, r.stderr);
		const [read, applied] = r.toolEnds;
		assert.equal(read.isError, false, toolText(read));
		assert.equal(applied.isError, false, toolText(applied));
		assert.match(toolText(applied), /Note: 'm\.txt' changed since it was shown to you; the patch was matched against the version you were shown and carried over/);
		assert.equal(get(box, "m.txt"), "a\nB\nc\nd\nNEW\ne\nF\ng\nh\n");
	});
}
