// Demo: execution rules switch the active tools per model, and find_tools loads a deferred tool.
// Uses the test embedder (stub execution tools under the toolkit's identity where this build lacks them).
import { join } from "node:path";

export default async function ({ version, helpers, log }) {
	const EMBEDDER = join(helpers.ROOT, "__test__/fixtures/embedder-stubs.ts");
	const PROBE = join(helpers.ROOT, "__test__/fixtures/rules-probe.ts");
	const box = helpers.sandbox("pct-demo-rules-");
	helpers.writeConfig(box, {
		execution: {
			version: 1,
			rules: [
				{ id: "codex", match: "faux/faux-1", patch: true, shell: true, code: true },
				{ id: "patch-only", match: "faux-?", patch: true, shell: false, code: false },
			],
		},
		toolDiscovery: { enabled: true, deferred: ["apply_patch"] },
	});
	const script = helpers.writeScript(box, `export default [
		{ tools: [{ name: "find_tools", args: { query: "patch" } }] },
		{ tools: [{ name: "find_tools", args: { load: ["apply_patch"] } }] },
		{ text: "loaded" },
	];`);
	const pi = new helpers.RpcPi({ version, box, script, extensions: [EMBEDDER, PROBE] });
	const active = async () => {
		const { notifications } = await pi.prompt("/probe");
		const p = JSON.parse(notifications.find((n) => n.startsWith("{")));
		return p.active.filter((n) => !["grep", "find", "ls", "powershell"].includes(n)).join(", ");
	};
	try {
		log(`faux-1 (rule "codex": P+S+C) active tools: ${await active()}`);
		await pi.command("set_model", { provider: "faux", modelId: "faux-2" });
		log(`faux-2 (rule "patch-only", apply_patch deferred) active tools: ${await active()}`);
		const run = await pi.prompt("find a patch tool and load it");
		const args = new Map(run.events.filter((e) => e.type === "tool_execution_start").map((e) => [e.toolCallId, e.args]));
		for (const e of run.events.filter((e) => e.type === "tool_execution_end")) {
			log(`\nmodel called ${e.toolName} ${JSON.stringify(args.get(e.toolCallId))} and saw:\n${e.result.content.map((c) => c.text).join("\n")}`);
		}
		log(`\nfaux-2 after the load, active tools: ${await active()}`);
		const { notifications } = await pi.prompt("/pct status all");
		const text = notifications.join("\n");
		log("\n" + text.slice(text.indexOf("Apply Patch")));
	} finally {
		await pi.close();
	}
}
