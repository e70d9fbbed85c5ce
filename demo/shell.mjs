// Shell Sessions demo: an offline scripted session in the real Pi. The scripted model
//  1. starts a long-running build-like command with exec_command (yield 700 ms) and polls it with write_stdin
//     until it completes;
//  2. starts `bc` (a line-based interactive program) and feeds it through stdin: two expressions, then closes
//     stdin so bc exits.
// Logged: each tool call and the exact text the model saw.
export default async function ({ version, helpers, log }) {
	const box = helpers.sandbox("pct-demo-shell-");
	helpers.writeConfig(box, { shellSessions: { enabled: true } });
	const script = helpers.writeScript(box, `
const bcInputs = [
	{ chars: "6 * 7\\n" },
	{ chars: "scale=5; 22 / 7\\n" },
	{ closeStdin: true, yield_time_ms: 2000 },
];
let phase = "build";
const next = (ctx) => {
	const d = ctx.lastToolResults[0].details;
	if (phase === "build") {
		if (d.status === "running") return { tools: [{ name: "write_stdin", args: { session_id: d.session_id, yield_time_ms: 700 } }] };
		phase = "bc";
		return { tools: [{ name: "exec_command", args: { cmd: "bc -q", yield_time_ms: 300 } }] };
	}
	const input = bcInputs.shift();
	if (!input) return { text: "Build finished; bc says 6*7 = 42 and 22/7 = 3.14285." };
	return { tools: [{ name: "write_stdin", args: { session_id: d.session_id, yield_time_ms: 300, ...input } }] };
};
export default [
	{ tools: [{ name: "exec_command", args: { cmd: "for step in compile link test package; do echo \\"[$step] ok\\"; sleep 0.5; done; echo build finished", yield_time_ms: 700 } }] },
	...Array(12).fill(next),
];`);
	const r = await helpers.runJson({ version, box, script, prompt: "build it, then use bc" });
	for (const end of r.toolEnds) {
		const args = r.events.find((e) => e.type === "tool_execution_start" && e.toolCallId === end.toolCallId)?.args;
		log(`\n→ ${end.toolName} ${JSON.stringify(args)}${end.isError ? "  (error)" : ""}`);
		log(helpers.toolText(end).replace(/\n$/, "").replace(/^/gm, "  │ "));
	}
	if (r.toolEnds.length === 0) log(r.stderr);
}
