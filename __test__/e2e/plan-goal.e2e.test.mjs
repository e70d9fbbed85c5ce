// Goal tools in Plan mode through the real Pi (0.87.1 and 1.6.0), offline with the scripted faux model
// (docs/permissions.md "Plan mode"): another extension's `EnterGoalMode` and `SubmitGoal` are refused with
// PLAN_GOAL_ACTIVATION_DISABLED in Plan, before any card, even when listed in `planSafeTools` and under `auto`;
// nothing of theirs runs. In Agent the same calls run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";

/** An extension with the two goal tools; each writes a marker file when it runs. */
function goalExtension(box) {
	const ext = join(box.base, "goal-ext.ts");
	const tool = (name) =>
		`pi.registerTool({ name: "${name}", label: "${name}", description: "${name}", parameters: Type.Object({ goal: Type.String() }), execute: async (_id: string, p: any) => { writeFileSync(join(process.cwd(), "${name}.ran"), p.goal); return { content: [{ type: "text", text: "${name} ran" }], details: {} }; } });`;
	writeFileSync(ext, `import { Type } from "typebox";\nimport { writeFileSync } from "node:fs";\nimport { join } from "node:path";\nexport default function (pi: any) {\n\t${tool("EnterGoalMode")}\n\t${tool("SubmitGoal")}\n}\n`);
	return ext;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] Plan mode refuses goal tools with PLAN_GOAL_ACTIVATION_DISABLED (plan-safe and auto notwithstanding); Agent runs them`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, permissions: { mode: "auto", planSafeTools: ["EnterGoalMode", "SubmitGoal"] } });
		const ext = goalExtension(box);
		const calls = { tools: [{ name: "EnterGoalMode", args: { goal: "g1" } }, { name: "SubmitGoal", args: { goal: "g2" } }] };
		const steps = [calls, { text: "refused" }, calls, { text: "ran" }];
		const src = `export default [\n${steps.map((s) => JSON.stringify(s)).join(",\n")}\n];`;
		const pi = new RpcPi({ version, box, script: writeScript(box, src), extensions: [ROOT, ext], ui: () => ({ value: "Deny" }) });
		try {
			assert.match((await pi.prompt("/pct mode plan")).notifications[0], /^Operation mode: Plan\./);
			const inPlan = (await pi.prompt("go")).events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(inPlan.map((e) => [e.toolName, e.isError]), [["EnterGoalMode", true], ["SubmitGoal", true]], JSON.stringify(inPlan.map(toolText)));
			for (const e of inPlan) {
				assert.equal(toolText(e), "PLAN_GOAL_ACTIVATION_DISABLED: goal proposals are disabled in Plan mode; submit a plan with SubmitPlan instead.");
			}
			assert.equal(existsSync(join(box.cwd, "EnterGoalMode.ran")), false, "nothing of the refused tool ran");
			assert.equal(existsSync(join(box.cwd, "SubmitGoal.ran")), false);
			assert.equal(pi.uiRequests.filter((q) => q.method === "select").length, 0, "refused before any card");
			assert.deepEqual((await pi.prompt("/pct mode agent")).notifications, ["Operation mode: Agent."]);
			const inAgent = (await pi.prompt("go again")).events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(inAgent.map((e) => [e.toolName, e.isError, toolText(e)]), [["EnterGoalMode", false, "EnterGoalMode ran"], ["SubmitGoal", false, "SubmitGoal ran"]]);
		} finally {
			await pi.close();
		}
	});
}
