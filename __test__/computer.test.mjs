// Computer Use client (docs/computer.md): the addon's app-server client against the scripted
// `__test__/fixtures/fake-app-server.mjs` through the test-only seam PCT_TEST_COMPUTER_USE, and the honest Linux
// story without it (nothing spawned, `unsupported-platform`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { procState } from "./helpers/shell.mjs";
import { until } from "./helpers/until.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(root, "index.js"));
const FAKE = join(root, "__test__/fixtures/fake-app-server.mjs");

const alive = (pid) => {
	const s = procState(pid);
	return s !== null && s !== "Z" && s !== "X";
};

/** Points the seam at the fake (darwin) and logs its traffic into a temp folder removed after the test. */
function withFake(t, seam = {}) {
	const dir = mkdtempSync(join(tmpdir(), "pct-cu-"));
	const logFile = join(dir, "log.jsonl");
	process.env.FAKE_APP_SERVER_LOG = logFile;
	process.env.PCT_TEST_COMPUTER_USE = JSON.stringify({ platform: "darwin", program: process.execPath, args: [FAKE], ...seam });
	const cus = [];
	t.after(async () => {
		for (const cu of cus) await cu.shutdown();
		delete process.env.PCT_TEST_COMPUTER_USE;
		delete process.env.FAKE_APP_SERVER_LOG;
		rmSync(dir, { recursive: true, force: true });
	});
	const make = (opts = null) => {
		const cu = new native.ComputerUse(opts);
		cus.push(cu);
		return cu;
	};
	const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l)) : []);
	return { make, log };
}

test("linux without the seam: unsupported-platform, every call refused, nothing spawned", async () => {
	delete process.env.PCT_TEST_COMPUTER_USE;
	const cu = new native.ComputerUse(null);
	assert.deepEqual(cu.probe(), { available: false, platform: process.platform, reason: "unsupported-platform" });
	const a = cu.authorize("computer_use_click", { app: "Safari", x: 1, y: 2 }, "always", true);
	assert.equal(a.ok, false);
	assert.equal(a.code, "unsupported-platform");
	assert.match(a.message, /macOS/);
	for (const tool of ["computer_use_list_apps", "computer_use_get_app_state"]) {
		const r = await cu.call(tool, { app: "Safari" });
		assert.equal(r.code, "unsupported-platform");
	}
	assert.equal(cu.spawned(), 0);
	assert.equal(await cu.pid(), null);
});

test("seam with another platform or a missing component: unavailable, nothing spawned", async (t) => {
	const { make } = withFake(t, { platform: "linux" });
	const cu = make();
	assert.equal(cu.probe().reason, "unsupported-platform");
	process.env.PCT_TEST_COMPUTER_USE = JSON.stringify({ platform: "darwin", program: "/nonexistent/codex" });
	assert.deepEqual(cu.probe(), { available: false, platform: "darwin", reason: "missing-chatgpt-desktop-component" });
	assert.equal((await cu.call("computer_use_list_apps", {})).code, "missing-chatgpt-desktop-component");
	assert.equal(cu.spawned(), 0);
});

test("success: handshake, ephemeral read-only thread, calls through the MCP bridge on one child", async (t) => {
	const { make, log } = withFake(t);
	const cu = make();
	assert.deepEqual(cu.probe(), { available: true, platform: "darwin", reason: null });
	const apps = await cu.call("computer_use_list_apps", {});
	assert.equal(apps.ok, true, JSON.stringify(apps));
	assert.match(apps.text, /Safari \(com\.apple\.Safari\)/);
	assert.deepEqual(apps.structuredContent, { apps: ["Safari", "Notes"] });
	const click = await cu.call("computer_use_click", { app: "com.apple.Safari", x: 10, y: 20 });
	assert.equal(click.ok, true);
	assert.equal(click.text, 'computer-use:click ok {"app":"com.apple.Safari","x":10,"y":20}');
	assert.equal(cu.spawned(), 1);
	const recv = log().filter((l) => l.recv).map((l) => l.recv);
	assert.deepEqual(recv.map((m) => m.method), ["initialize", "initialized", "thread/start", "mcpServer/tool/call", "mcpServer/tool/call"]);
	assert.equal(recv[0].params.clientInfo.name, "pi-codex-toolkit");
	assert.equal(recv[1].id, undefined, "initialized is a notification");
	assert.equal(recv[2].params.ephemeral, true);
	assert.equal(recv[2].params.sandbox, "read-only");
	assert.deepEqual(recv[3].params, { threadId: "thr_fake", server: "computer-use", tool: "list_apps", arguments: {} });
	assert.ok(recv.every((m) => m.jsonrpc === undefined));
});

test("an error reply and an isError result are tool-error; the child stays usable", async (t) => {
	const { make } = withFake(t);
	const cu = make();
	const r = await cu.call("computer_use_get_app_state", { app: "Refuse" });
	assert.equal(r.code, "tool-error");
	assert.match(r.message, /no such app: Refuse/);
	const pid = await cu.pid();
	const b = await cu.call("computer_use_press_key", { app: "Broken", key: "Return" });
	assert.equal(b.code, "tool-error");
	assert.match(b.message, /element not found/);
	assert.equal((await cu.call("computer_use_scroll", { app: "Notes", dy: -3 })).ok, true);
	assert.equal(await cu.pid(), pid);
	assert.equal(cu.spawned(), 1);
});

test("a hang hits the per-call timeout: the whole group is killed and the next call starts a fresh child", async (t) => {
	const { make, log } = withFake(t);
	const cu = make({ callTimeoutMs: 400 });
	assert.equal((await cu.call("computer_use_list_apps", {})).ok, true);
	const { started, grandchild } = log().find((l) => l.started);
	assert.ok(alive(started) && alive(grandchild));
	const r = await cu.call("computer_use_type_text", { app: "Hang", text: "hi" });
	assert.equal(r.code, "timeout");
	assert.match(r.message, /computer_use_get_app_state/);
	await until("app-server and its grandchild are gone", () => !alive(started) && !alive(grandchild));
	assert.equal(await cu.pid(), null);
	assert.equal((await cu.call("computer_use_list_apps", {})).ok, true);
	assert.equal(cu.spawned(), 2);
});

test("calls run one at a time: a second call waits for the hanging first one", async (t) => {
	const { make, log } = withFake(t);
	const cu = make({ callTimeoutMs: 1000 });
	const first = cu.call("computer_use_click", { app: "Hang", x: 0, y: 0 });
	// the hanging call has reached the app-server before the second one is made
	await until("the Hang call reached the app-server", () => log().some((l) => l.recv?.params?.arguments?.app === "Hang"));
	const [a, b] = await Promise.all([first, cu.call("computer_use_list_apps", {})]);
	assert.equal(a.code, "timeout");
	// had it run alongside, it would have used the first child; it ran after the timeout on a second one
	assert.equal(b.ok, true);
	assert.equal(cu.spawned(), 2);
});

test("a crash mid-call is app-server-exited; nothing is left behind and the next call recovers", async (t) => {
	const { make, log } = withFake(t);
	const cu = make();
	const r = await cu.call("computer_use_click", { app: "Crash", x: 1, y: 1 });
	assert.equal(r.code, "app-server-exited");
	const { started, grandchild } = log().find((l) => l.started);
	await until("app-server and its grandchild are gone", () => !alive(started) && !alive(grandchild));
	assert.equal((await cu.call("computer_use_list_apps", {})).ok, true);
	assert.equal(cu.spawned(), 2);
});

test("shutdown kills the app-server's process group; a second shutdown is harmless", async (t) => {
	const { make, log } = withFake(t);
	const cu = make();
	await cu.call("computer_use_list_apps", {});
	const { started, grandchild } = log().find((l) => l.started);
	assert.equal(await cu.pid(), started);
	await cu.shutdown();
	await until("app-server and its grandchild are gone", () => !alive(started) && !alive(grandchild));
	await cu.shutdown();
	assert.equal(await cu.pid(), null);
});

test("approvals: confirm asks once per app until reset; always never asks; headless confirm refuses", (t) => {
	const { make } = withFake(t);
	const cu = make();
	const click = (app) => ({ app, x: 1, y: 1 });
	assert.deepEqual(cu.authorize("computer_use_list_apps", {}, "confirm", false), { ok: true, ask: null });
	assert.deepEqual(cu.authorize("computer_use_click", click("Safari"), "confirm", true), { ok: true, ask: "Safari" });
	cu.approve("Safari");
	assert.deepEqual(cu.authorize("computer_use_click", click("Safari"), "confirm", true), { ok: true, ask: null });
	assert.deepEqual(cu.authorize("computer_use_click", click("Notes"), "confirm", true), { ok: true, ask: "Notes" });
	const headless = cu.authorize("computer_use_click", click("Notes"), "confirm", false);
	assert.equal(headless.code, "approval-unavailable");
	assert.match(headless.message, /approvalMode/);
	assert.deepEqual(cu.authorize("computer_use_click", click("Notes"), "always", false), { ok: true, ask: null });
	cu.resetApprovals();
	assert.deepEqual(cu.authorize("computer_use_click", click("Safari"), "confirm", true), { ok: true, ask: "Safari" });
	const d = cu.denied("Safari");
	assert.equal(d.code, "approval-denied");
	assert.equal(cu.spawned(), 0, "authorizing spawns nothing");
});

test("app targets are names or bundle ids only; bad arguments change nothing and spawn nothing", async (t) => {
	const { make } = withFake(t);
	const cu = make();
	for (const app of ["/Applications/Safari.app", "Safari.app", "file:///x", "1234", "", " Safari", "a\nb", "x".repeat(257)]) {
		const r = await cu.call("computer_use_get_app_state", { app });
		assert.equal(r.code, "invalid-app-target", JSON.stringify(app));
		assert.equal(cu.authorize("computer_use_get_app_state", { app }, "always", true).code, "invalid-app-target");
	}
	assert.equal((await cu.call("computer_use_get_app_state", { app: "x".repeat(256) })).ok, true, "256 characters is the limit");
	await cu.shutdown();
	const spawnedBefore = cu.spawned();
	for (const [tool, args] of [
		["computer_use_click", { app: "Safari", x: -1, y: 0 }],
		["computer_use_click", { app: "Safari", x: 1 }],
		["computer_use_type_text", { app: "Safari", text: "x".repeat(10_001) }],
		["computer_use_press_key", { app: "Safari", key: "" }],
		["computer_use_scroll", { app: "Safari", dy: "down" }],
		["computer_use_get_app_state", {}],
		["computer_use_drag", { app: "Safari" }],
	]) {
		const r = await cu.call(tool, args);
		assert.ok(["invalid-arguments", "unknown-tool"].includes(r.code), `${tool} ${JSON.stringify(r)}`);
	}
	assert.equal((await cu.call("computer_use_type_text", { app: "Notes", text: "y".repeat(10_000) })).ok, true);
	assert.equal(cu.spawned(), spawnedBefore + 1);
});

test("linux: /pct status says unsupported-platform and find_tools refuses the whole group with that reason", () => {
	const ME = "/pkg/src/index.ts";
	const tools = ["read", "bash", "edit", "write"].map((name) => ({ name, description: name, source: "builtin" }));
	tools.push(...["apply_patch", "exec_command", "write_stdin", "exec", "wait", "find_tools"].map((name) => ({ name, description: name, source: ME })));
	const input = {
		config: { computerUse: { enabled: true, approvalMode: "confirm" }, toolDiscovery: { enabled: true } },
		model: { provider: "faux", id: "faux-1", api: "faux-api" },
		tools,
		identity: ME,
		activeNow: tools.map((t) => t.name),
		hiddenByUs: [],
		loadedDeferred: [],
		platform: process.platform,
		configPath: "/agent/extensions/pi-codex-toolkit.json",
	};
	const status = native.rulesStatusText(JSON.stringify(input));
	assert.match(status, /^Computer Use\n {2}configured: on\n {2}effective: \w+\n {2}reason: Computer Use needs macOS; on this machine turn it off with \/pct config\. \[unsupported-platform\]$/m);
	const found = JSON.parse(native.discoveryFindTools(JSON.stringify(input), JSON.stringify({ load: ["computer_use_scroll"] })));
	assert.deepEqual(found.loaded, []);
	assert.equal(found.rejected.length, 6);
	for (const r of found.rejected) assert.match(r.reason, /unsupported-platform/);
	const resolved = JSON.parse(native.rulesResolve(JSON.stringify(input)));
	assert.ok(!resolved.active.some((n) => n.startsWith("computer_use_")), "the tools are never active");
});

/** A ChatGPT.app resources folder and a CODEX_HOME with everything the probe checks (docs/computer.md "Prerequisites"). */
function appLayout(t) {
	const dir = mkdtempSync(join(tmpdir(), "pct-cu-app-"));
	t.after(() => rmSync(dir, { recursive: true, force: true }));
	const resources = join(dir, "Resources");
	for (const f of ["codex", "cua_node/bin/node_repl", "cua_node/bin/node"]) {
		mkdirSync(dirname(join(resources, f)), { recursive: true });
		writeFileSync(join(resources, f), "#!/bin/sh\n");
	}
	mkdirSync(join(resources, "cua_node/lib/node_modules"), { recursive: true });
	const codexHome = join(dir, "codex-home");
	mkdirSync(join(codexHome, "computer-use", "Codex Computer Use.app"), { recursive: true });
	return { resources, codexHome };
}

test("the probe names each missing prerequisite (seam over temp folders); status, authorize and call agree", async (t) => {
	const { resources, codexHome } = appLayout(t);
	const set = (extra) => (process.env.PCT_TEST_COMPUTER_USE = JSON.stringify({ platform: "darwin", resources, codexHome, ...extra }));
	t.after(() => delete process.env.PCT_TEST_COMPUTER_USE);
	const cu = new native.ComputerUse(null);
	t.after(() => cu.shutdown());
	set({});
	assert.deepEqual(cu.probe(), { available: true, platform: "darwin", reason: null });
	assert.deepEqual(native.computerUseProbe(), { available: true, platform: "darwin", reason: null });
	rmSync(join(resources, "cua_node/bin/node_repl"));
	assert.deepEqual(native.computerUseProbe(), { available: false, platform: "darwin", reason: "missing-chatgpt-desktop-component" });
	const a = cu.authorize("computer_use_click", { app: "Safari", x: 1, y: 1 }, "always", true);
	assert.equal(a.code, "missing-chatgpt-desktop-component");
	assert.match(a.message, /ChatGPT app/);
	writeFileSync(join(resources, "cua_node/bin/node_repl"), "");
	rmSync(join(codexHome, "computer-use"), { recursive: true });
	assert.equal(native.computerUseProbe().reason, "missing-computer-use-helper");
	const c = await cu.call("computer_use_list_apps", {});
	assert.equal(c.code, "missing-computer-use-helper");
	assert.match(c.message, /helper/);
	assert.equal(cu.spawned(), 0, "nothing is spawned while a prerequisite is missing");
	// The rules see the probe: status and activation say the same reason.
	const ME = "/pkg/src/index.ts";
	const names = ["computer_use_list_apps", "computer_use_get_app_state", "computer_use_click", "computer_use_type_text", "computer_use_press_key", "computer_use_scroll"];
	const input = (over) => ({
		config: { computerUse: { enabled: true, approvalMode: "confirm" }, toolDiscovery: { enabled: false } },
		model: { provider: "faux", id: "faux-1", api: "faux-api", input: ["text", "image"] },
		tools: names.map((name) => ({ name, source: ME })),
		identity: ME,
		activeNow: [],
		platform: "darwin",
		hasUi: true,
		computerUseProbe: native.computerUseProbe().reason,
		...over,
	});
	const reason = (over) => JSON.parse(native.rulesResolve(JSON.stringify(input(over)))).features.computerUse.reason;
	assert.equal(reason({}), "missing-computer-use-helper");
	assert.equal(reason({ computerUseProbe: null }), "");
	assert.equal(reason({ computerUseProbe: null, hasUi: false }), "no-interactive-ui");
	assert.equal(reason({ computerUseProbe: null, model: { provider: "faux", id: "faux-1", api: "faux-api", input: ["text"] } }), "model-has-no-image-input");
	assert.match(native.rulesStatusText(JSON.stringify(input({}))), /^Computer Use\n {2}configured: on\n {2}effective: unavailable\n {2}reason: .+ \[missing-computer-use-helper\]$/m);
});

test("approvals are keyed by the canonical app once list_apps named it, and reset when the approval mode changes", async (t) => {
	const { make } = withFake(t);
	const cu = make();
	const click = (app) => ({ app, x: 1, y: 1 });
	assert.deepEqual(cu.authorize("computer_use_click", click("Safari"), "confirm", true), { ok: true, ask: "Safari" });
	cu.approve("Safari");
	// Not yet known to be the same app: asked (never fewer asks than apps).
	assert.equal(cu.authorize("computer_use_click", click("com.apple.Safari"), "confirm", true).ask, "com.apple.Safari");
	assert.equal((await cu.call("computer_use_list_apps", {})).ok, true); // "Safari (com.apple.Safari)"
	assert.deepEqual(cu.authorize("computer_use_click", click("com.apple.Safari"), "confirm", true), { ok: true, ask: null });
	// Switching the approval mode forgets every approval: always → confirm asks again.
	assert.deepEqual(cu.authorize("computer_use_click", click("Safari"), "always", true), { ok: true, ask: null });
	assert.equal(cu.authorize("computer_use_click", click("Safari"), "confirm", true).ask, "Safari");
});

test("the glue defines exactly the tools the engine names (computerUseTools, the rules' list)", async () => {
	const { SPECS } = await import("../src/pi/tools/computer.ts");
	assert.deepEqual(Object.keys(SPECS).sort(), [...native.computerUseTools()].sort());
	assert.equal(native.computerUseTools().length, 6);
});
