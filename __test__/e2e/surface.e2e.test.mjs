// The tool surface next to other extensions, through the real Pi (0.87.1 and 1.6.0): the toolkit registers no tool
// at load, so no other extension's name can stop Pi; a feature registers its tools when it is on and its names are
// free; a feature whose name another extension owns reports `name-taken` and the rest of the toolkit works.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeToolConfig as writeConfig, writeScript } from "../helpers/pi.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).
import { PROBE, featureOf, probe, status } from "../helpers/rules.mjs";

const SQUATTER = join(ROOT, "__test__/fixtures/name-squatter.ts");
/** Every tool name the toolkit can register (src/rules/names.rs). */
const ALL_NAMES = [
	"openai_web_search", "openai_generate_image", "apply_patch",
	"computer_use_list_apps", "computer_use_get_app_state", "computer_use_click", "computer_use_type_text",
	"computer_use_press_key", "computer_use_scroll", "exec_command", "write_stdin", "exec", "wait", "find_tools",
	"Read", "Glob", "Grep", "Write", "Edit", "Bash", "TaskList", "TaskWait", "TaskStop",
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
					assert.match(owner(n), /src\/pi-codex-toolkit\/index\.ts$/, `${n} is ours`);
					assert.ok(p.active.includes(n), `${n} is active`);
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

	test(`[pi ${version.name}] /pct config: the Host tools preset replaces the legacy flags it overlaps, warns before, saves one family`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true }, hostTools: { enabled: true }, webSearch: { enabled: true } });
		const seen = [];
		const plan = [/^Warning: Apply Patch \(legacy flag\) and Edit\/Write are both on/, /^Host tools — /, /^Save$/];
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
