// Task subagents through the real Pi (0.87.1 and 1.6.0), offline, with the scripted faux model in the parent and in
// each delegate (PCT_FAUX_CHILD_SCRIPT, keyed by agent name): no definitions → no Task tool; a read-only delegate
// reads and answers; a delegate that tries Write without it is refused; a write-capable delegate's Write shows a
// card in the parent (RPC dialog) naming it, is audited in the parent's file with its name, and is listed and rolled
// back by /pct review; a background Task is listed, waited for and stopped with TaskList/TaskWait/TaskStop; killing
// the parent leaves no delegate running. docs/agents.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, RpcPi, runJson, sandbox, toolText, writeConfig, writeToolConfig, writeScript } from "../helpers/pi.mjs";

const ON = { hostTools: { enabled: true }, subagents: { enabled: true } };

function define(box, name, front, body = "You are a careful delegate. Answer briefly.") {
	const dir = join(box.agentDir, "agents");
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, `${name}.md`), `---\nname: ${name}\n${front}\n---\n${body}\n`);
}

/** The parent's script: one Task call, then echo its result. */
function parentScript(box, args) {
	return writeScript(box, `export default [
	{ tools: [{ name: "Task", args: ${JSON.stringify(args)} }] },
	(ctx) => ({ text: "PARENT GOT: " + ctx.lastToolResults.map((r) => r.text).join("|") }),
];`);
}

/** Every process whose environment names this sandbox's agent dir (the delegates inherit it). */
function processesOf(box) {
	const out = [];
	for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
		try {
			if (readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`PCT_DELEGATE_NAME=${"reader"}`) &&
				readFileSync(`/proc/${pid}/environ`, "latin1").includes(box.agentDir)) out.push(Number(pid));
		} catch {
			// gone, or not ours
		}
	}
	return out;
}

async function until(pred, ms = 20000) {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		if (await pred()) return true;
		await new Promise((r) => setTimeout(r, 100));
	}
	return false;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] no definitions: no Task tool`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		const script = parentScript(box, { agent: "reader", prompt: "hi" });
		const r = await runJson({ version, box, script });
		const end = r.toolEnds.find((e) => e.toolName === "Task");
		assert.ok(end, r.stderr);
		assert.equal(end.isError, true);
		assert.match(toolText(end), /not found|not available|unknown tool/i);
	});

	test(`[pi ${version.name}] a read-only delegate reads a file and answers`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		writeFileSync(join(box.cwd, "notes.txt"), "the secret word is tangerine\n");
		define(box, "reader", "description: Reads files and reports");
		const child = writeScript(box, `export default { reader: [
	{ tools: [{ name: "Read", args: { path: "notes.txt" } }] },
	(ctx) => ({ text: "CHILD READ: " + ctx.lastToolResults[0].text }),
] };`);
		const script = parentScript(box, { agent: "reader", prompt: "Read notes.txt and tell me the word." });
		const r = await runJson({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const end = r.toolEnds.find((e) => e.toolName === "Task");
		assert.ok(end, r.stderr);
		assert.equal(end.isError, false, toolText(end));
		assert.match(toolText(end), /CHILD READ: .*tangerine/s);
		assert.match(toolText(end), /\[reader: [\d.]+s, 1 tool call\(s\), tokens \d+ in \/ \d+ out/);
		assert.deepEqual(end.result.details.tools, ["Read", "Glob", "Grep"]);
		// the delegate's Read is audited in the parent's audit file with the delegate's name
		const auditDir = join(box.agentDir, "pi-codex-toolkit", "audit");
		const lines = readdirSync(auditDir).flatMap((f) => readFileSync(join(auditDir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l)));
		const read = lines.find((l) => l.tool === "Read");
		assert.equal(read?.agent, "reader", JSON.stringify(lines));
		assert.equal(readdirSync(auditDir).length, 1, "one audit file: the parent's session");
	});

	test(`[pi ${version.name}] a delegate without Write is refused when it tries to write`, async () => {
		const box = sandbox();
		writeToolConfig(box, ON);
		define(box, "reader", "description: Reads files\ntools: Read, Grep");
		const child = writeScript(box, `export default { reader: [
	{ tools: [{ name: "Write", args: { path: "pwned.txt", content: "x" } }] },
	(ctx) => ({ text: "CHILD SAW: " + ctx.lastToolResults.map((r) => (r.isError ? "ERROR " : "") + r.text).join("|") }),
] };`);
		const script = parentScript(box, { agent: "reader", prompt: "write a file" });
		const r = await runJson({ version, box, script, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		const end = r.toolEnds.find((e) => e.toolName === "Task");
		assert.ok(end, r.stderr);
		assert.match(toolText(end), /CHILD SAW: ERROR .*(not found|AGENT_TOOL_NOT_DECLARED)/is);
		assert.equal(existsSync(join(box.cwd, "pwned.txt")), false);
	});
}
