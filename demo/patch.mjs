// apply_patch in a real Pi session (offline, scripted faux model): a multi-file patch, then a refused one.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export default async function ({ version, helpers, log }) {
	const box = helpers.sandbox("pct-demo-patch-");
	helpers.writeConfig(box, { applyPatch: { enabled: true } });
	mkdirSync(join(box.cwd, "src"), { recursive: true });
	writeFileSync(join(box.cwd, "src/greet.js"), 'export function greet(name) {\n  return "Hello " + name;\n}\n');
	writeFileSync(join(box.cwd, "old.txt"), "obsolete\n");
	const patch = [
		"*** Begin Patch",
		"*** Add File: notes/todo.md",
		"+first line",
		"*** Update File: src/greet.js",
		"@@ export function greet(name) {",
		'-  return "Hello " + name;',
		"+  return `Hello, ${name}!`;",
		" }",
		"*** Delete File: old.txt",
		"*** End Patch",
	].join("\n");
	const refused = "*** Begin Patch\n*** Update File: src/greet.js\n@@\n-  return \"Hi \" + name;\n+  return \"Hey \" + name;\n*** End Patch";
	const script = helpers.writeScript(
		box,
		`export default [${JSON.stringify({ tools: [{ name: "apply_patch", args: { patch } }] })}, ${JSON.stringify({ tools: [{ name: "apply_patch", args: { patch: refused } }] })}, { text: "done" }];`,
	);
	const r = await helpers.runJson({ version, box, script });
	for (const end of r.toolEnds) {
		log(`\n> apply_patch (${end.isError ? "error" : "ok"}) — what the model saw:`);
		log(helpers.toolText(end));
		if (!end.isError) log(`details: ${JSON.stringify(end.result.details)}`);
	}
	log("\nsrc/greet.js afterwards:\n" + readFileSync(join(box.cwd, "src/greet.js"), "utf8"));
}
