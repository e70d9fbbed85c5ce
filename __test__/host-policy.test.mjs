// The permission and audit bindings (src/bind/host_policy.rs; docs/host.md "Permissions", "Audit") on the addon:
// shapes, refusals of bad input, and panics contained at every guard site.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { underTimer } from "./helpers/timer.mjs";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const n = createRequire(import.meta.url)(join(root, "index.js"));
const base = mkdtempSync(join(tmpdir(), "pct-host-policy-"));
after(() => rmSync(base, { recursive: true, force: true }));

const req = (over = {}) => ({ tool: "Write", risk: "edit", external: false, scratch: false, hasUi: true, ...over });

test("decide: the table's shapes, messages and the resolution order", () => {
	const p = new n.HostPermissions();
	assert.deepEqual(p.decide(req({ risk: "read", tool: "Read" }), "ask"), {
		action: "allow", mode: "ask", opMode: "agent", risk: "read", reason: "low-risk",
		deniedMessage: "The user denied permission for this Read call; it did not run. Do not retry it as is: ask the user how to proceed, or continue without it.",
	});
	assert.equal(p.decide(req(), "ask").action, "ask");
	assert.equal(p.decide(req(), undefined).mode, "ask", "no config mode reads as ask");
	const d = p.decide(req({ hasUi: false }), "ask");
	assert.equal(d.action, "deny");
	assert.equal(d.code, "TOOL_DENIED");
	assert.equal(
		d.message,
		"Write needs the user's confirmation in permission mode ask, and this session has no interactive UI to ask. Permission mode accept-edits would allow it (permissions.mode in the config, /pct config, or /pct permission for this session); until the user changes it, do not retry this call.",
	);
	assert.equal(p.sessionOverride, null);
	p.setOverride("auto");
	assert.equal(p.sessionOverride, "auto");
	assert.deepEqual(p.decide(req({ risk: "bash", tool: "Bash", hasUi: false }), "ask"), {
		action: "allow", mode: "auto", opMode: "agent", risk: "bash", reason: "mode",
		deniedMessage: "The user denied permission for this Bash call; it did not run. Do not retry it as is: ask the user how to proceed, or continue without it.",
	});
	p.setOverride(null);
	p.allowSession("Write");
	assert.deepEqual(p.allowedTools(), ["Write"]);
	assert.equal(p.decide(req({ hasUi: false }), "ask").reason, "allow-session");
	assert.throws(() => p.decide(req({ risk: "write" }), "ask"), { code: "invalid-input", message: "risk must be one of read, edit, bash, plugin (or a tool name that has a row)" });
	assert.throws(() => p.setOverride("yolo"), { code: "invalid-input", message: /permission mode must be one of ask, accept-edits, auto/ });
	assert.equal(p.sessionOverride, null, "a refused override changes nothing");
});

const entry = (over = {}) => ({
	sessionId: "s1", turn: "s1:1", toolCallId: "c1", tool: "Read", args: { path: "a.txt" }, decision: "allow", prompted: false,
	permissionWaitMs: 0, durationMs: 1.4, overheadMs: 0.2, totalMs: 1.6, ok: true, ...over,
});

test("hostAuditAppend: appends, rounds the times, refuses an id that is not one segment and writes nothing", async () => {
	const agent = join(base, "agent");
	const r = await n.hostAuditAppend(agent, entry({ args: { password: "pw", note: "sk-abcdefghijkl" } }));
	assert.deepEqual(r, { ok: true, path: join(agent, "pi-codex-toolkit/audit/s1.jsonl") });
	const l = JSON.parse(readFileSync(r.path, "utf8"));
	assert.equal(l.durationMs, 1);
	assert.equal(l.totalMs, 2);
	assert.equal(l.turn, "s1:1");
	assert.equal(l.external, null);
	assert.equal(l.errorCode, null);
	assert.equal(l.argsPreview, '{"password":"[REDACTED]","note":"[REDACTED]"}');
	const bad = await n.hostAuditAppend(join(base, "other"), entry({ sessionId: "../escape" }));
	assert.equal(bad.ok, false);
	assert.equal(bad.code, "INVALID_ARGUMENT");
	assert.equal(existsSync(join(base, "other")), false);
});

test("hostAuditAppend: the lines of one session land in call order though none is awaited before the next starts", async () => {
	const agent = join(base, "order");
	// Big and small arguments interleaved: a line that waited for nothing would overtake a slow one.
	const calls = Array.from({ length: 60 }, (_, i) =>
		n.hostAuditAppend(agent, entry({ toolCallId: `c${i}`, args: { content: i % 3 === 0 ? "x".repeat(300_000) : "small" } })),
	);
	const other = n.hostAuditAppend(agent, entry({ sessionId: "s2", toolCallId: "o" }));
	const results = await Promise.all([...calls, other]);
	assert.ok(results.every((r) => r.ok), JSON.stringify(results.find((r) => !r.ok)));
	const ids = readFileSync(join(agent, "pi-codex-toolkit/audit/s1.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l).toolCallId);
	assert.deepEqual(ids, calls.map((_, i) => `c${i}`));
	assert.equal(readFileSync(join(agent, "pi-codex-toolkit/audit/s2.jsonl"), "utf8").trim().split("\n").length, 1);
	// A refused call takes its turn too and lets the next one go.
	const [bad, next] = await Promise.all([n.hostAuditAppend(agent, entry({ traceId: "not a trace id" })), n.hostAuditAppend(agent, entry({ toolCallId: "after" }))]);
	assert.equal(bad.code, "INVALID_ARGUMENT");
	assert.equal(next.ok, true);
});

test("hostAuditAppend runs off the main thread: the event loop keeps ticking through a 16 MiB Write's line", async (t) => {
	const agent = join(base, "timer");
	// A Write's content is what an audited call carries most of (up to 64 MiB), every byte redaction-scanned and
	// hashed: a synchronous append of 16 MiB stalled a debug build for seconds. 16, not 64: the full limit costs over
	// half a minute of CPU in a debug build, too much for the suite. Code-like text with a secret at the end.
	const unit = "let total = items.reduce((a, b) => a + b, 0); // sum the list\n";
	const content = unit.repeat(Math.ceil((16 << 20) / unit.length)).slice(0, (16 << 20) - 32) + "password=hunter2-long-enough\n";
	const r = await underTimer(() => n.hostAuditAppend(agent, entry({ tool: "Write", args: { path: "big.txt", content } })));
	assert.equal(r.result.ok, true, JSON.stringify(r.result));
	const line = JSON.parse(readFileSync(r.result.path, "utf8"));
	assert.match(line.argsHash, /^sha256:[0-9a-f]{64}$/);
	t.diagnostic(`hostAuditAppend 16 MiB: ${r.ms.toFixed(1)} ms, max timer gap ${r.maxGap.toFixed(1)} ms, ${r.ticks} ticks`);
	// A synchronous export lets no timer run before it answers: the loop turned while this one appended. How much it
	// turned depends on the machine's load, so the stall (napi's conversion of the arguments object, on the main
	// thread by nature) is the diagnostic above, not a pass/fail bound.
	assert.ok(r.ticks >= 1, `the event loop never turned while hostAuditAppend ran (${r.ms.toFixed(1)} ms)`);
});

test("panics at every guard site come back as data or an internal-panic Error", () => {
	const child = `
const n = require(${JSON.stringify(join(root, "index.js"))});
const dir = process.argv[1];
const out = {};
const p = new n.HostPermissions();
process.env.PCT_TEST_PANIC = "host.permissions.decide,host.permissions.allowSession,host.permissions.allowedTools,host.permissions.setOverride,host.permissions.override,host.auditAppend";
const thrown = (f) => { try { f(); return "returned"; } catch (e) { return e.code + "|" + e.message; } };
out.decide = thrown(() => p.decide({ tool: "Read", risk: "read", external: false, scratch: false, hasUi: false }, "ask"));
out.allowSession = thrown(() => p.allowSession("Read"));
out.allowedTools = thrown(() => p.allowedTools());
out.setOverride = thrown(() => p.setOverride("auto"));
out.override = thrown(() => p.sessionOverride);
n.hostAuditAppend(dir, { sessionId: "s", toolCallId: "c", tool: "Read", args: {}, decision: "allow", prompted: false, permissionWaitMs: 0, durationMs: 0, overheadMs: 0, totalMs: 0, ok: true }).then((a) => {
	out.audit = a.code + "|" + a.message;
	console.log(JSON.stringify(out));
});`;
	const r = spawnSync(process.execPath, ["-e", child, join(base, "panic")], { encoding: "utf8" });
	assert.equal(r.status, 0, r.stderr);
	const out = JSON.parse(r.stdout);
	assert.equal(Object.keys(out).length, 6);
	for (const [site, v] of Object.entries(out)) {
		assert.match(v, /^internal-panic\|internal error in the pi-codex-toolkit engine \(host\./, `${site}: ${v}`);
	}
});
