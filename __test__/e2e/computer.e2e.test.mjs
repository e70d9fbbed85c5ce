// Computer Use in the real Pi (both versions; docs/computer.md): on Linux without the seam nothing is registered and
// /pct status says unsupported-platform; with the test seam (PCT_TEST_COMPUTER_USE: platform darwin, program = the
// scripted __test__/fixtures/fake-app-server.mjs) the six tools run through Pi, confirm mode asks once per app, a
// denial refuses, and headless (json mode) has no-interactive-ui: the tools are not active.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, readFileSync } from "node:fs";
import { procState } from "../helpers/shell.mjs";
import { until } from "../helpers/until.mjs";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, writeConfig, writeScript, toolText } from "../helpers/pi.mjs";

const FAKE = join(ROOT, "__test__/fixtures/fake-app-server.mjs");
const SEAM = { PCT_TEST_COMPUTER_USE: JSON.stringify({ platform: "darwin", program: process.execPath, args: [FAKE] }) };
const alive = (pid) => !["Z", "X", null].includes(procState(pid));
const CONFIG = { computerUse: { enabled: true, approvalMode: "confirm" }, toolDiscovery: { enabled: false } };

function script(box, calls) {
	return writeScript(box, `export default [
${calls.map((c, i) => `	{ tools: [${JSON.stringify({ name: c[0], args: c[1], id: `cu-${i}` })}] },`).join("\n")}
	{ text: "done" },
];`);
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] linux without the seam: unsupported-platform in /pct status, no computer_use tool`, async () => {
		const box = sandbox();
		writeConfig(box, CONFIG);
		const pi = new RpcPi({ version, box, script: script(box, [["computer_use_list_apps", {}]]) });
		try {
			const { notifications } = await pi.prompt("/pct status all");
			assert.match(notifications.join("\n"), /^Computer Use\n {2}configured: on\n {2}effective: unavailable\n {2}reason: Computer Use needs macOS; on this machine turn it off with \/pct config\. \[unsupported-platform\]$/m);
			// The model calls it anyway: Pi has no such tool.
			const { events } = await pi.prompt("go", 120000);
			const ends = events.filter((e) => e.type === "tool_execution_end");
			assert.equal(ends.length, 1);
			assert.equal(ends[0].isError, true);
			assert.match(toolText(ends[0]), /not found|unknown|computer_use_list_apps/i);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] seam: tools run through Pi; confirm asks once per app; a denial refuses`, async () => {
		const box = sandbox();
		writeConfig(box, CONFIG);
		const s = script(box, [
			["computer_use_list_apps", {}],
			["computer_use_click", { app: "Safari", x: 5, y: 6 }],
			["computer_use_type_text", { app: "Safari", text: "hello" }],
			["computer_use_press_key", { app: "Notes", key: "Return" }],
		]);
		const asked = [];
		const log = join(box.cwd, "fake.log");
		const pi = new RpcPi({ version, box, script: s, env: { ...SEAM, FAKE_APP_SERVER_LOG: log }, ui: (req) => (req.method === "confirm" ? (asked.push(req.message), { confirmed: /Safari/.test(req.message) }) : { cancelled: true }) });
		try {
			const status = (await pi.prompt("/pct status all")).notifications.join("\n");
			assert.match(status, /^Computer Use\n {2}configured: on\n {2}effective: active\n {2}transport: codex app-server --stdio$/m);
			const { events } = await pi.prompt("go", 120000);
			const ends = events.filter((e) => e.type === "tool_execution_end");
			assert.equal(ends.length, 4, JSON.stringify(ends).slice(0, 2000) + pi.stderr.slice(-1500));
			assert.match(toolText(ends[0]), /Safari \(com\.apple\.Safari\)/);
			assert.equal(toolText(ends[1]), 'computer-use:click ok {"app":"Safari","x":5,"y":6}');
			assert.match(toolText(ends[2]), /computer-use:type_text ok/);
			assert.equal(ends[3].isError, true);
			assert.match(toolText(ends[3]), /^approval-denied: /);
			// Safari asked once (click), not again for type_text; Notes asked and declined.
			assert.equal(asked.length, 2, JSON.stringify(asked));
			assert.match(asked[0], /Safari/);
			assert.match(asked[1], /Notes/);
		} finally {
			await pi.close();
		}
		// Pi is gone: so are the app-server and its grandchild (shutdown, or the watchdog).
		const { started, grandchild } = JSON.parse(readFileSync(log, "utf8").split("\n")[0]);
		await until("no app-server process left behind", () => !alive(started) && !alive(grandchild));
	});

	test(`[pi ${version.name}] seam, headless (json mode): no-interactive-ui — the tools are not active and no app-server starts`, async () => {
		const box = sandbox();
		writeConfig(box, { ...CONFIG, computerUse: { enabled: true, approvalMode: "always" } });
		const log = join(box.cwd, "fake.log");
		const r = await runJson({ version, box, env: { ...SEAM, FAKE_APP_SERVER_LOG: log }, script: script(box, [["computer_use_list_apps", {}], ["computer_use_click", { app: "Safari", x: 1, y: 1 }]]) });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.toolEnds.length, 2);
		for (const end of r.toolEnds) {
			assert.equal(end.isError, true);
			assert.match(toolText(end), /not found|not enabled/i);
		}
		assert.equal(existsSync(log), false, "the app-server was never started");
	});
}
