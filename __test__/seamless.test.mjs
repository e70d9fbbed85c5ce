// The release binary reads no test seams (docs/release.md "Test seams"): a child process loads the seam-less build
// `npm test` writes to target/seamless/ (`node scripts/build.mjs --out-dir target/seamless`) with every seam variable
// set and shows each is ignored; the same script against the test build at the root shows each one working, so the
// check cannot pass by accident.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir } from "./helpers/tmp.mjs";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const BINARY = "pi-codex-toolkit.linux-x64-gnu.node";
const SEAMLESS = join(root, "target", "seamless", BINARY);
const SEAMED = join(root, BINARY);
const FAKE = join(root, "__test__", "fixtures", "fake-app-server.mjs");
const CRATE_VERSION = readFileSync(join(root, "Cargo.toml"), "utf8").match(/^version = "([^"]+)"/m)[1];

/** Every variable src/seams.rs lists, each set to a value that shows when it takes effect. */
const SEAM_ENV = {
	PCT_TEST_PANIC: "engineVersion",
	PCT_TEST_PATCH_FAULT: "crash:1",
	PCT_TEST_PATCH_DELAY_MS: "1500",
	PCT_TEST_NET_TIMEOUT_MS: "1234",
	PCT_TEST_COMPUTER_USE: JSON.stringify({ platform: "darwin", program: process.execPath, args: [FAKE] }),
	PCT_TEST_LOCK_HOLD_MS: "1500",
	PCT_TEST_WATCHDOG_SH: "/nonexistent/pct-test-sh",
	PCT_TEST_HOST_STALL: "host.write:1500",
};

// One observation per line (written synchronously: the patch fault aborts the process in a seamed build).
const SCRIPT = `
const fs = require("node:fs");
const native = require(process.argv[1]);
const dir = process.argv[2];
const say = (k, v) => fs.writeSync(1, JSON.stringify([k, v]) + "\\n");
(async () => {
	say("testSeams", native.testSeams());
	try { say("engineVersion", native.engineVersion()); } catch (e) { say("engineVersion", "threw " + e.code); }
	say("netTimeoutMs", native.netTimeoutMs("sidecar"));
	const cu = new native.ComputerUse(null);
	say("computerUse", cu.probe().platform);
	let t = Date.now();
	const saved = await native.configSave(dir + "/c.json", { debug: true }, null);
	say("configSave", { ok: saved.ok, slow: Date.now() - t >= 1400 });
	const m = new native.ShellManager({});
	const r = await m.exec({ cmd: "echo ran" }, { cwd: dir, shell: { shell: "/bin/bash", args: ["-c"] } });
	say("watchdog", { status: r.details.status, failure: "watchdogFailure" in m.status() });
	await m.close();
	fs.mkdirSync(dir + "/ws");
	const hs = new native.HostSession(dir + "/ws", dir, "seamless");
	t = Date.now();
	const w = await hs.write({ path: "w.txt", content: "w\\n" });
	say("hostWrite", { ok: w.ok, slow: Date.now() - t >= 1400 });
	t = Date.now();
	const p = await native.applyPatch(dir, "*** Begin Patch\\n*** Update File: a.txt\\n@@\\n-old\\n+new\\n*** End Patch\\n");
	say("applyPatch", { ok: p.ok, slow: Date.now() - t >= 1400 });
	process.exit(0);
})();`;

function observe(binary) {
	const dir = tempDir("pct-seamless-");
	writeFileSync(join(dir, "a.txt"), "old\n");
	const out = spawnSync(process.execPath, ["-e", SCRIPT, binary, dir], { env: { ...process.env, ...SEAM_ENV }, encoding: "utf8", timeout: 60000 });
	const seen = Object.fromEntries(out.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)));
	return { seen, out };
}

test("the seam-less release binary ignores every test seam variable", { timeout: 90000 }, () => {
	assert.ok(existsSync(SEAMLESS), `${SEAMLESS} is missing: build it with \`node scripts/build.mjs --out-dir target/seamless\` (npm test does)`);
	const { seen, out } = observe(SEAMLESS);
	assert.equal(out.status, 0, out.stderr);
	assert.deepEqual(seen, {
		testSeams: false,
		engineVersion: CRATE_VERSION,
		netTimeoutMs: 30000,
		computerUse: process.platform,
		configSave: { ok: true, slow: false },
		watchdog: { status: "completed", failure: false },
		hostWrite: { ok: true, slow: false },
		applyPatch: { ok: true, slow: false },
	});
});

test("the test build at the root honours the same variables (the check above can fail)", { timeout: 90000 }, () => {
	assert.ok(existsSync(SEAMED), "the root binary is built (npm run build:debug)");
	const { seen, out } = observe(SEAMED);
	assert.equal(out.signal, "SIGABRT", `the patch crash seam aborts: ${out.stderr}`);
	assert.deepEqual(seen, {
		testSeams: true,
		engineVersion: "threw internal-panic",
		netTimeoutMs: 1234,
		computerUse: "darwin",
		configSave: { ok: true, slow: true },
		watchdog: { status: "completed", failure: true },
		hostWrite: { ok: true, slow: true },
	});
});
