// The tool surface next to other extensions, through the real Pi (0.87.1 and 1.6.0): the toolkit registers no tool
// at load, so no other extension's name can stop Pi; a feature registers its tools when it is on and its names are
// free; a feature whose name another extension owns reports `name-taken` and the rest of the toolkit works.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeToolConfig as writeConfig, writeScript } from "../helpers/pi.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).
import { PROBE, featureOf, probe, probeFile, status } from "../helpers/rules.mjs";
import { ROWS, TARGETS, bytes, measure } from "../../bench/schema-size.mjs";

const SQUATTER = join(ROOT, "__test__/fixtures/name-squatter.ts");
/** Every tool name the toolkit can register (src/rules/names.rs). */
const ALL_NAMES = [
	"openai_web_search", "openai_generate_image", "apply_patch",
	"computer_use_list_apps", "computer_use_get_app_state", "computer_use_click", "computer_use_type_text",
	"computer_use_press_key", "computer_use_scroll", "exec_command", "write_stdin", "exec", "wait", "find_tools",
	"Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop", "EnterPlanMode", "SubmitPlan",
];
const EVERYTHING_ON = {
	applyPatch: { enabled: true },
	shellSessions: { enabled: true },
	codeMode: { enabled: true },
	toolDiscovery: { enabled: true },
	hostTools: { enabled: true, permissionMode: "auto" },
	webSearch: { enabled: true },
	imageGeneration: { enabled: true },
	computerUse: { enabled: true },
};
const ORDERS = [
	["before the toolkit", (ext) => [ext, ROOT, PROBE]],
	["after the toolkit", (ext) => [ROOT, ext, PROBE]],
];

for (const version of PI_VERSIONS) {
	for (const [where, order] of ORDERS) {
		test(`[pi ${version.name}] an extension owning every toolkit name, loaded ${where}: Pi starts, with features off and on`, async () => {
			for (const config of [{}, EVERYTHING_ON]) {
				const box = sandbox();
				writeConfig(box, config);
				const script = writeScript(box, `export default [{ tools: [{ name: "wait", args: {} }] }, { text: "done" }];`);
				const run = await runJson({ version, box, script, extensions: order(SQUATTER), env: { PCT_SQUAT_TOOLS: ALL_NAMES.join(",") } });
				assert.equal(run.code, 0, `exit code with ${JSON.stringify(config)}: ${run.stderr.slice(-2000)}`);
				assert.doesNotMatch(run.stderr, /conflicts with/);
				assert.deepEqual(run.toolEnds.map(toolText), ["squatter wait"], "the other extension's tool answers");
			}
		});

		test(`[pi ${version.name}] names taken by an extension loaded ${where}: those features say name-taken, the rest works`, async () => {
			const box = sandbox();
			writeConfig(box, EVERYTHING_ON);
			const script = writeScript(box, `export default [
				{ tools: [{ name: "wait", args: {} }, { name: "exec_command", args: { cmd: "echo surface-ok" } }] },
				{ text: "done" },
			];`);
			const pi = new RpcPi({ version, box, script, extensions: order(SQUATTER), env: { PCT_SQUAT_TOOLS: "wait,TaskStop" } });
			try {
				const p = await probe(pi);
				const owner = (n) => p.tools.find((t) => t.name === n)?.path ?? "";
				assert.match(owner("wait"), /name-squatter\.ts$/);
				assert.match(owner("TaskStop"), /name-squatter\.ts$/);
				assert.equal(owner("exec"), "", "exec (the taken pair's sibling) is never registered");
				assert.equal(owner("Bash"), "", "Bash (the taken group's sibling) is never registered");
				for (const n of ["apply_patch", "exec_command", "write_stdin", "find_tools", "Read", "Glob", "Grep", "Write", "Edit"]) {
					assert.match(owner(n), /dist\/pi-codex-toolkit\/index\.ts$/, `${n} is ours`);
					// With find_tools on, Glob and Grep are on demand (docs/rules.md "On-demand host tools").
					assert.equal(p.active.includes(n), n !== "Glob" && n !== "Grep", `${n} active (not on demand)`);
				}
				assert.ok(p.active.includes("wait") && p.active.includes("TaskStop"), "their tools stay active");
				assert.ok(p.active.includes("bash"), "Pi's bash stays: host Bash could not register");
				const text = await status(pi);
				assert.deepEqual(featureOf(text, "Code Mode"), { configured: "on", effective: "unavailable", reason: "name-taken" });
				assert.match(text, /reason: wait is registered by \S*name-squatter\.ts; the toolkit leaves it alone\. To use Code Mode, remove or disable that extension \(or its wait tool\) and run \/reload; otherwise turn Code Mode off with \/pct config\. \[name-taken\]$/m);
				assert.deepEqual(featureOf(text, "Shell Sessions"), { configured: "on", effective: "active", reason: "" });
				assert.deepEqual(featureOf(text, "Host Tools"), { configured: "on", effective: "active", reason: "" });
				assert.match(text, /note: Bash and the Task tools are off \(name-taken: TaskStop is registered by \S*name-squatter\.ts\); Pi's bash stays/);
				const run = await pi.prompt("go");
				const ends = run.events.filter((e) => e.type === "tool_execution_end");
				assert.equal(toolText(ends[0]), "squatter wait");
				assert.match(toolText(ends[1]), /surface-ok/);
			} finally {
				await pi.close();
			}
		});
	}

	test(`[pi ${version.name}] a feature that is off registers no tool; turning it on registers it after load`, async () => {
		const box = sandbox();
		writeConfig(box, {});
		const pi = new RpcPi({ version, box, extensions: [ROOT, PROBE] });
		try {
			let p = await probe(pi);
			assert.deepEqual(p.tools.filter((t) => ALL_NAMES.includes(t.name)), [], "nothing registered with everything off");
			writeConfig(box, { toolDiscovery: { enabled: true }, shellSessions: { enabled: true } });
			await pi.prompt("/pct reload");
			p = await probe(pi);
			assert.deepEqual(p.tools.filter((t) => ALL_NAMES.includes(t.name)).map((t) => t.name).sort(), ["exec_command", "find_tools", "write_stdin"]);
			for (const n of ["exec_command", "find_tools", "write_stdin"]) assert.ok(p.active.includes(n), `${n} active`);
			writeConfig(box, {});
			await pi.prompt("/pct reload");
			p = await probe(pi);
			assert.ok(!p.active.some((n) => ALL_NAMES.includes(n)), "turned off: registered but inactive");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] /pct config: the Host tools preset replaces the switches it overlaps, warns before, saves one family`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true }, hostTools: { enabled: true }, webSearch: { enabled: true } });
		const seen = [];
		const plan = [/^Warning: Apply Patch and Edit\/Write are both on/, /^Host tools — /, /^Save$/];
		const ui = (req) => {
			seen.push(req.options);
			const want = plan.shift();
			const value = want && req.options.find((o) => want.test(o));
			return value ? { value } : { cancelled: true };
		};
		const pi = new RpcPi({ version, box, extensions: [ROOT, PROBE], ui });
		try {
			await pi.prompt("/pct config");
			assert.equal(seen[0][0], "Preset: custom");
			assert.ok(seen[1].some((o) => o.startsWith("Codex tools — ")) && seen[1].some((o) => o.startsWith("Pi's own + extras — ")), JSON.stringify(seen[1]));
			assert.equal(seen[2][0], "Preset: Host tools", "the draft now equals the preset");
			assert.ok(!seen[2].some((o) => o.startsWith("Warning: ")), "no overlap left");
			const saved = JSON.parse(readFileSync(box.configPath, "utf8"));
			assert.deepEqual(saved.applyPatch, { enabled: false });
			assert.equal(saved.hostTools.enabled, true);
			assert.equal(saved.webSearch.enabled, true, "extras kept");
			const p = await probe(pi);
			assert.ok(p.active.includes("Edit") && !p.active.includes("apply_patch"), JSON.stringify(p.active));
		} finally {
			await pi.close();
		}
	});
}

// On-demand host tools (seed 000 §2.1, docs/rules.md "On-demand host tools"): Host tools with Tool Discovery.
const ON_DEMAND = { hostTools: { enabled: true }, toolDiscovery: { enabled: true } };
const HOST_WATCH = ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop", "find_tools", "read", "bash", "edit", "write"];
const hostWatched = (active) => HOST_WATCH.filter((n) => active.includes(n));

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] on-demand host tools: the first request has Read, Write, Edit, Bash; find_tools loads Grep for the next turn; the catalog lists the rest`, async () => {
		const box = sandbox();
		writeConfig(box, ON_DEMAND);
		writeFileSync(join(box.cwd, "notes.txt"), "alpha\nneedle here\n");
		const seen = join(box.base, "system.jsonl");
		// The first step records whether the system prompt carries the catalog (the faux model sees the context).
		const script = writeScript(box, `import { appendFileSync } from "node:fs";
		const note = (ctx) => appendFileSync(${JSON.stringify(seen)}, JSON.stringify(ctx.system ?? "") + "\\n");
		export default [
			(ctx) => (note(ctx), { tools: [{ name: "Grep", args: { pattern: "needle" } }] }),
			{ tools: [{ name: "find_tools", args: { load: ["Grep"] } }] },
			{ tools: [{ name: "Grep", args: { pattern: "needle" } }] },
			{ text: "done" },
		];`);
		const probeFilePath = join(box.base, "probe.jsonl");
		const r = await runJson({ version, box, script, extensions: [ROOT, PROBE], env: { PCT_PROBE_FILE: probeFilePath } });
		assert.equal(r.code, 0, r.stderr.slice(-2000));
		const ends = r.toolEnds.map((e) => [e.toolName, e.isError, toolText(e)]);
		assert.deepEqual(ends[0], ["Grep", true, "Tool Grep not found"], "held back: not callable before a load");
		assert.deepEqual(ends[1], ["find_tools", false, "Already loaded: Grep"], "the call by name already loaded it for the next turn");
		assert.equal(ends[2][0], "Grep");
		assert.equal(ends[2][1], false, ends[2][2]);
		assert.match(ends[2][2], /needle here/);
		assert.deepEqual(r.toolEnds[1].result.details.addedToolNames, ["Grep"]);
		const turns = probeFile(probeFilePath).filter((x) => x.kind === "turn").map((x) => hostWatched(x.active));
		assert.deepEqual(turns[0], ["Read", "Write", "Edit", "Bash", "find_tools"]);
		assert.deepEqual(turns.at(-1), ["Read", "Grep", "Write", "Edit", "Bash", "find_tools"]);
		const system = JSON.parse(readFileSync(seen, "utf8").split("\n")[0]);
		assert.match(system, /# On-demand tools\nNot loaded yet\. To use one, call find_tools \{"load": \["<name>"\]\}; it is callable from the next turn on\.\n- Glob: List files matching a glob/);
		for (const n of ["Grep", "TaskList", "TaskWait", "TaskStop"]) assert.match(system, new RegExp(`\\n- ${n}: `), n);
	});

	test(`[pi ${version.name}] on-demand host tools: a new prompt and a resumed session keep what the context proves, nothing else`, async () => {
		const box = sandbox();
		writeConfig(box, ON_DEMAND);
		writeFileSync(join(box.cwd, "notes.txt"), "needle\n");
		const sessions = join(box.base, "sessions");
		const script = writeScript(box, `export default [
			{ tools: [{ name: "find_tools", args: { load: ["Grep", "Glob"] } }] },
			{ tools: [{ name: "Grep", args: { pattern: "needle" } }] },
			{ text: "first done" },
			{ text: "second done" },
		];`);
		const pi = new RpcPi({ version, box, script, persist: true, extensions: [ROOT, PROBE], args: ["--session-dir", sessions] });
		let file;
		try {
			assert.deepEqual(hostWatched((await probe(pi)).active), ["Read", "Write", "Edit", "Bash", "find_tools"]);
			await pi.prompt("first");
			assert.deepEqual(hostWatched((await probe(pi)).active), ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "find_tools"]);
			await pi.prompt("second");
			assert.deepEqual(hostWatched((await probe(pi)).active), ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "find_tools"], "the find_tools result is still in context");
			assert.match(await status(pi), /loaded this prompt: 2\n/);
			file = (await pi.command("get_state")).data.sessionFile;
			assert.ok(file);
			await pi.command("new_session");
			assert.deepEqual(hostWatched((await probe(pi)).active), ["Read", "Write", "Edit", "Bash", "find_tools"], "a new session has no evidence");
		} finally {
			await pi.close();
		}
		const again = new RpcPi({ version, box, persist: true, extensions: [ROOT, PROBE], args: ["--session", file] });
		try {
			assert.deepEqual(hostWatched((await probe(again)).active), ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "find_tools"], "resumed: rebuilt from the session file");
		} finally {
			await again.close();
		}
	});

	test(`[pi ${version.name}] on-demand host tools: a background Bash task brings the Task tools for the next turn; without find_tools nothing is held back`, async () => {
		const box = sandbox();
		writeConfig(box, ON_DEMAND);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "Bash", args: { command: "echo bg-ok", runInBackground: true } }] },
			// A changed tool list puts a system message after the tool result, so look the result up by role.
			(ctx) => ({ tools: [{ name: "TaskWait", args: { backgroundTaskId: ctx.messages.findLast((m) => m.role === "toolResult").details.backgroundTaskId } }] }),
			{ text: "done" },
		];`);
		const probeFilePath = join(box.base, "probe.jsonl");
		const r = await runJson({ version, box, script, extensions: [ROOT, PROBE], env: { PCT_PROBE_FILE: probeFilePath } });
		assert.equal(r.code, 0, r.stderr.slice(-2000));
		assert.equal(r.toolEnds[1].toolName, "TaskWait");
		assert.equal(r.toolEnds[1].isError, false, toolText(r.toolEnds[1]));
		const turns = probeFile(probeFilePath).filter((x) => x.kind === "turn").map((x) => hostWatched(x.active));
		assert.deepEqual(turns[0], ["Read", "Write", "Edit", "Bash", "find_tools"]);
		assert.deepEqual(turns[1], ["Read", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop", "find_tools"]);

		const plain = sandbox();
		writeConfig(plain, { hostTools: { enabled: true } });
		const pi = new RpcPi({ version, box: plain, extensions: [ROOT, PROBE] });
		try {
			assert.deepEqual(hostWatched((await probe(pi)).active), ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop"]);
			assert.match(await status(pi), /note: Tool Discovery is off, so Glob, Grep and the Task tools are sent from the first request; turn it on to load them on demand/);
		} finally {
			await pi.close();
		}
	});
}

// The byte targets of docs/rules.md "What the tool list costs", read from that table, against the tools real Pi
// sends on the first request (bench/schema-size.mjs measures the same way). A size check, not a timing.
const TARGET_ROWS = { "host tools' first request": "host", "Codex route (patch + shell + code + find_tools)": "route", "every feature on": "all" };
function documentedTargets() {
	const doc = readFileSync(join(ROOT, "docs/rules.md"), "utf8");
	const out = {};
	for (const [label, key] of Object.entries(TARGET_ROWS)) {
		const m = doc.match(new RegExp(`^\\| ${label.replace(/[()+]/g, "\\$&")} \\| ≤ ([\\d,]+) B \\|`, "m"));
		assert.ok(m, `docs/rules.md states the target for ${label}`);
		out[key] = Number(m[1].replace(/,/g, ""));
	}
	return out;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] the first request's tools stay within the documented byte targets`, async () => {
		const targets = documentedTargets();
		assert.deepEqual(targets, TARGETS, "bench/schema-size.mjs and docs/rules.md name the same targets");
		for (const [key, label, config, target] of ROWS.filter((r) => r[3])) {
			const { tools } = await measure(version, config);
			const total = bytes(tools);
			assert.ok(total <= targets[target], `${label}: ${total} B > ${targets[target]} B (${tools.map((t) => `${t.name} ${bytes(t)}`).join(", ")})`);
			// EnterPlanMode is never on demand (docs/rules.md "On-demand host tools").
			if (key === "host") assert.deepEqual(tools.map((t) => t.name).sort(), ["Bash", "Edit", "EnterPlanMode", "Read", "Write", "find_tools"]);
		}
	});
}
