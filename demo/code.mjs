// Code Mode demo: a scripted model runs a cell that prints and returns, a cell that yields and is continued with
// wait, a busy loop stopped with wait {terminate}, and a cell orchestrating nested shell + patch calls.
export default async function ({ version, helpers, log }) {
	const box = helpers.sandbox("pct-demo-code-");
	helpers.writeConfig(box, {
		codeMode: { enabled: true, approvalMode: "always" },
		shellSessions: { enabled: true },
		applyPatch: { enabled: true },
	});
	const nested = [
		'const s = await tools.exec_command({cmd: "echo hello from a nested shell; uname -s"});',
		'const p = await tools.apply_patch("*** Begin Patch\\n*** Add File: notes.txt\\n+written by a code cell\\n*** End Patch");',
		'const c = await tools.exec_command({cmd: "cat notes.txt"});',
		"print(s.stdout.trim()); print(c.stdout.trim());",
		"return {shell: s.status, patch: p.text ?? p};",
	].join("\n");
	const script = helpers.writeScript(box, `export default [
		{ tools: [{ name: "exec", args: { code: "print('counting'); let n = 0; for (const x of [1, 2, 3]) n += x; return {sum: n}" } }] },
		{ tools: [{ name: "exec", args: { code: "// @exec: {\\"yield_time_ms\\": 50}\\nconst t = Date.now(); while (Date.now() - t < 300) {} return 'slow work done'" } }] },
		(ctx) => ({ tools: [{ name: "wait", args: { cell_id: ctx.lastToolResults[0].details.cellId } }] }),
		{ tools: [{ name: "exec", args: { code: "while (true) {}", yield_time_ms: 50 } }] },
		(ctx) => ({ tools: [{ name: "wait", args: { cell_id: ctx.lastToolResults[0].details.cellId, terminate: true } }] }),
		{ tools: [{ name: "exec", args: { code: ${JSON.stringify(nested)} } }] },
		{ text: "All cells done." },
	];`);
	const r = await helpers.runJson({ version, box, script, timeoutMs: 120000 });
	const starts = new Map(r.events.filter((e) => e.type === "tool_execution_start").map((e) => [e.toolCallId, e.args]));
	for (const end of r.toolEnds) {
		log(`\n> ${end.toolName} ${JSON.stringify(starts.get(end.toolCallId) ?? {})}`);
		log(helpers.toolText(end));
	}
	if (r.code !== 0) log(`(pi exited ${r.code}) ${r.stderr.slice(-500)}`);
}
