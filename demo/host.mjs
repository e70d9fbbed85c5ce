// Host tools demo (docs/host.md, docs/review.md): an offline scripted session in the real Pi, RPC mode, permission
// mode `auto` so no card is shown. The scripted model
//  1. reads a file (`[path#TAG]` + numbered rows), edits two of the lines it read by number under that tag;
//  2. greps for a word and edits a matched line with the tag Grep gave;
//  3. writes a new file, runs Bash (a failing command, then a background task it waits for and lists);
// then /pct review lists every change of the session, shows one as a diff, and rolls them all back.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export default async function ({ version, helpers, log }) {
	const box = helpers.sandbox("pct-demo-host-");
	helpers.writeConfig(box, { hostTools: { enabled: true, permissionMode: "auto" } });
	writeFileSync(join(box.cwd, "app.py"), 'def greet(name):\n    return "Hello " + name\n\n\ndef main():\n    print(greet("world"))  # TODO: read the name\n');
	const tagOf = `const tagOf = (r) => (r.details && r.details.tag) || /#([0-9A-F]{4})\\]/.exec(r.text)[1];`;
	const steps = [
		JSON.stringify({ tools: [{ name: "Read", args: { path: "app.py" } }] }),
		`(ctx) => ({ tools: [{ name: "Edit", args: { path: "app.py", tag: tagOf(ctx.lastToolResults[0]), ops: "PUT 2.=2:\\n+    return f\\"Hello, {name}!\\"\\nPUT <1:\\n+import sys\\n+" } }] })`,
		JSON.stringify({ tools: [{ name: "Grep", args: { pattern: "TODO", path: "." } }] }),
		`(ctx) => ({ tools: [{ name: "Edit", args: { path: "app.py", tag: ctx.lastToolResults[0].details.tags["app.py"], ops: "PUT 8.=8:\\n+    print(greet(sys.argv[1] if len(sys.argv) > 1 else \\"world\\"))" } }] })`,
		JSON.stringify({ tools: [{ name: "Write", args: { path: "notes/CHANGES.md", content: "- greet() formats with an f-string\n- main() reads the name from argv\n" } }] }),
		JSON.stringify({ tools: [{ name: "Bash", args: { command: "python3 app.py Pi; ls missing-dir" } }] }),
		JSON.stringify({ tools: [{ name: "Bash", args: { command: "sleep 0.3; echo background done", runInBackground: true } }] }),
		`(ctx) => ({ tools: [{ name: "TaskWait", args: { backgroundTaskId: ctx.lastToolResults[0].details.backgroundTaskId } }] })`,
		`(ctx) => ctx.lastToolResults[0].details.status === "running" ? { tools: [{ name: "TaskWait", args: { backgroundTaskId: ctx.lastToolResults[0].details.backgroundTaskId } }] } : { tools: [{ name: "TaskList", args: {} }] }`,
		JSON.stringify({ text: "Done: app.py takes the name from argv; notes written." }),
	];
	const script = helpers.writeScript(box, `${tagOf}\nexport default [\n${steps.join(",\n")}\n];`);
	const pi = new helpers.RpcPi({ version, box, script });
	try {
		const out = await pi.prompt("tidy app.py", 120000);
		for (const end of out.events.filter((e) => e.type === "tool_execution_end")) {
			const args = out.events.find((e) => e.type === "tool_execution_start" && e.toolCallId === end.toolCallId)?.args;
			log(`\n→ ${end.toolName} ${JSON.stringify(args)}${end.isError ? "  (error)" : ""}`);
			log(helpers.toolText(end).replace(/\n$/, "").replace(/^/gm, "  │ "));
		}
		log("\napp.py afterwards:\n" + readFileSync(join(box.cwd, "app.py"), "utf8"));
		await pi.prompt("/pct review");
		const list = pi.uiRequests.filter((q) => q.method === "select").at(-1);
		log(`/pct review (a select in the UI):\n${(list?.options ?? []).map((o) => `  ${o}`).join("\n")}`);
		for (const cmd of ["/pct review show 1", "/pct review rollback all"]) {
			const r = await pi.prompt(cmd);
			log(`\n${cmd}:\n${r.notifications.join("\n")}`);
		}
		log("\napp.py after the rollback:\n" + readFileSync(join(box.cwd, "app.py"), "utf8"));
	} finally {
		await pi.close();
	}
}
