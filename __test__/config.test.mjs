import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync, chmodSync, readdirSync, rmSync, symlinkSync, lstatSync, readlinkSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { native } from "./helpers/addon.mjs";

const made = [];
const tmp = () => {
	const d = mkdtempSync(join(tmpdir(), "pct-config-"));
	made.push(d);
	return d;
};
after(() => {
	for (const d of made) {
		try { chmodSync(join(d, "c.json"), 0o600); } catch {}
		rmSync(d, { recursive: true, force: true });
	}
});
const sha = (s) => createHash("sha256").update(s).digest("hex");
const worker = new URL("./fixtures/save-worker.mjs", import.meta.url).pathname;

test("config path lives under <agentDir>/extensions", () => {
	assert.equal(native.configPath("/a/b"), "/a/b/extensions/pi-codex-toolkit.json");
});

const INVALID = [
	[[], "configuration must be a JSON object"],
	["x", "configuration must be a JSON object"],
	[{ webSearch: 1 }, "webSearch must be an object"],
	[{ webSearch: { enabled: "true" } }, "webSearch.enabled must be true or false"],
	[{ webSearch: { backend: "bing" } }, "webSearch.backend must be one of auto, native, sidecar"],
	[{ webSearch: { mode: "now" } }, "webSearch.mode must be one of live, cached"],
	[{ webSearch: { contextSize: 3 } }, "webSearch.contextSize must be one of low, medium, high"],
	[{ webSearch: { sidecarModel: [] } }, "webSearch.sidecarModel must be null or an object"],
	[{ webSearch: { sidecarModel: { provider: "anthropic", model: "m" } } }, "webSearch.sidecarModel.provider must be one of openai, openai-codex"],
	[{ webSearch: { sidecarModel: { provider: "openai", model: "" } } }, "webSearch.sidecarModel.model must be a non-empty string"],
	[{ webSearch: { sidecarModel: { provider: "openai-codex", model: "m", thinkingLevel: "turbo" } } }, "webSearch.sidecarModel.thinkingLevel must be one of auto, off, minimal, low, medium, high, xhigh, max"],
	[{ webSearch: { sidecarModel: { provider: "openai", model: "m", thinkingLevel: "low" } } }, "webSearch.sidecarModel.thinkingLevel must be auto for provider openai"],
	[{ remoteCompaction: [] }, "remoteCompaction must be an object"],
	[{ remoteCompaction: { enabled: 0 } }, "remoteCompaction.enabled must be true or false"],
	[{ imageGeneration: { enabled: null } }, "imageGeneration.enabled must be true or false"],
	[{ applyPatch: { enabled: "yes" } }, "applyPatch.enabled must be true or false"],
	[{ shellSessions: { enabled: 1 } }, "shellSessions.enabled must be true or false"],
	[{ computerUse: { approvalMode: "auto" } }, "computerUse.approvalMode must be one of confirm, always"],
	[{ codeMode: { enabled: "no" } }, "codeMode.enabled must be true or false"],
	[{ codeMode: { approvalMode: "never" } }, "codeMode.approvalMode must be one of confirm, always"],
	[{ execution: true }, "execution must be an object"],
	[{ execution: { rules: [] } }, "execution.version must be 1"],
	[{ execution: { version: 1 } }, "execution.rules must be an array"],
	[{ execution: { version: 1, rules: [1] } }, "execution.rules[0] must be an object"],
	[{ execution: { version: 1, rules: [{ id: "", match: "*", patch: true, shell: true, code: true }] } }, "execution.rules[0].id must be a non-empty string"],
	[{ execution: { version: 1, rules: [{ id: "a", match: "", patch: true, shell: true, code: true }] } }, "execution.rules[0].match must be a non-empty string"],
	[{ execution: { version: 1, rules: [{ id: "a", match: "*", patch: "y", shell: true, code: true }] } }, "execution.rules[0].patch must be true or false"],
	[{ execution: { version: 1, rules: [{ id: "a", match: "*", patch: true, code: true }] } }, "execution.rules[0].shell must be true or false"],
	[{ execution: { version: 1, rules: [{ id: "a", match: "*", patch: true, shell: true, code: true, note: "" }] } }, "execution.rules[0].note is not a rule field (allowed: id, match, patch, shell, code)"],
	[{ execution: { version: 1, rules: [{ id: "a", match: "*", patch: true, shell: true, code: true }, { id: "a", match: "b", patch: true, shell: true, code: true }] } }, "execution.rules[1].id must be unique"],
	[{ toolDiscovery: { enabled: "on" } }, "toolDiscovery.enabled must be true or false"],
	[{ toolDiscovery: { deferred: "exec" } }, "toolDiscovery.deferred must be an array of tool names"],
	[{ toolDiscovery: { deferred: ["exec", "exec"] } }, "toolDiscovery.deferred[1] repeats a name"],
	[{ toolDiscovery: { deferred: ["computer_use_click"] } }, "toolDiscovery.deferred must list all six computer_use_* names or none"],
	[{ debug: "yes" }, "debug must be true or false"],
];

test("every validation message, and the file is reported as invalid-config with that detail", () => {
	const dir = tmp();
	for (const [raw, message] of INVALID) {
		assert.equal(native.configValidate(raw), message, JSON.stringify(raw));
		const p = join(dir, "c.json");
		writeFileSync(p, JSON.stringify(raw));
		const r = native.configRead(p);
		assert.deepEqual([r.status, r.code, r.detail], ["error", "invalid-config", message]);
		assert.equal(r.raw, null);
	}
	assert.match(native.configValidate({ toolDiscovery: { deferred: ["find_tools"] } }), /^toolDiscovery\.deferred\[0\] must be a deferrable toolkit tool name \(openai_web_search, /);
});

test("read: missing, invalid-json (no detail), config-read-failed (system code), ok with revision", () => {
	const dir = tmp();
	const p = join(dir, "c.json");
	assert.deepEqual(native.configRead(p), { status: "missing", revision: null, raw: null });
	writeFileSync(p, '{"secret": "sk-123", ');
	const bad = native.configRead(p);
	assert.deepEqual([bad.status, bad.code, bad.detail], ["error", "invalid-json", undefined]);
	assert.ok(!JSON.stringify(bad).includes("sk-123"), "never repeats file content");
	writeFileSync(p, '{"applyPatch": {"enabled": true}}');
	const ok = native.configRead(p);
	assert.equal(ok.status, "ok");
	assert.equal(ok.revision, sha('{"applyPatch": {"enabled": true}}'));
	if (process.getuid() !== 0) {
		chmodSync(p, 0);
		assert.deepEqual(native.configRead(p).detail, "EACCES");
	}
	const asDir = join(dir, "d.json");
	mkdirSync(asDir);
	const r = native.configRead(asDir);
	assert.deepEqual([r.code, r.detail], ["config-read-failed", "EISDIR"]);
});

test("defaults and effective view", () => {
	const d = native.configDefaults();
	assert.equal(d.applyPatch.enabled, false);
	assert.equal(d.codeMode.approvalMode, "confirm");
	assert.equal("execution" in d, false, "a new config has no execution");
	assert.deepEqual(d.toolDiscovery.deferred.length, 7);
	const e = native.configEffective({ applyPatch: { enabled: true, future: 1 }, unknown: true });
	assert.equal(e.applyPatch.enabled, true);
	assert.equal(e.applyPatch.future, undefined);
	assert.equal(e.unknown, undefined);
});

test("golden saved file: JSON.stringify(raw, null, 2) + newline, unknown keys preserved in order", async () => {
	const dir = tmp();
	const p = join(dir, "extensions", "pi-codex-toolkit.json");
	const raw = { zFirst: { nested: [1, { a: "ü" }] }, webSearch: { enabled: false, futureKnob: "x" }, applyPatch: { enabled: true } };
	const out = await native.configSave(p, raw, null);
	assert.equal(out.ok, true);
	const text = readFileSync(p, "utf8");
	assert.equal(text, JSON.stringify(raw, null, 2) + "\n");
	assert.equal(out.revision, sha(text));
	// A draft edit keeps unknown fields inside known sections.
	const edited = native.configDraftSet(native.configRead(p).raw, "webSearch.enabled", true);
	const out2 = await native.configSave(p, edited, out.revision);
	assert.equal(out2.ok, true);
	assert.deepEqual(JSON.parse(readFileSync(p, "utf8")), { ...raw, webSearch: { enabled: true, futureKnob: "x" } });
	assert.deepEqual(readdirSync(join(dir, "extensions")), ["pi-codex-toolkit.json"], "no temp or lock left");
});

test("legacy enabled flags are removed when execution is present; approvalMode stays", async () => {
	const p = join(tmp(), "c.json");
	const raw = {
		applyPatch: { enabled: true, keep: 1 },
		shellSessions: { enabled: true },
		codeMode: { enabled: true, approvalMode: "always" },
		execution: { version: 1, rules: [{ id: "a", match: "*", patch: true, shell: false, code: false }] },
	};
	const out = await native.configSave(p, raw, null);
	assert.equal(out.ok, true);
	assert.deepEqual(JSON.parse(readFileSync(p, "utf8")), {
		applyPatch: { keep: 1 },
		shellSessions: {},
		codeMode: { approvalMode: "always" },
		execution: raw.execution,
	});
});

test("refusals change nothing: stale revision, invalid draft, unreadable file", async () => {
	const p = join(tmp(), "c.json");
	writeFileSync(p, "{}\n");
	const stale = await native.configSave(p, { debug: true }, sha("something else"));
	assert.deepEqual(stale, { ok: false, code: "stale-revision", message: "Could not save: the configuration file changed; reload and review the draft." });
	const invalid = await native.configSave(p, { debug: "x" }, sha("{}\n"));
	assert.equal(invalid.code, "invalid-config");
	assert.equal(readFileSync(p, "utf8"), "{}\n");
	const dirPath = join(tmp(), "c.json");
	mkdirSync(dirPath);
	const unreadable = await native.configSave(dirPath, {}, null);
	assert.deepEqual(unreadable, { ok: false, code: "config-read-failed", message: "Refusing to overwrite an unreadable configuration file." });
	writeFileSync(p, "{ broken");
	const over = await native.configSave(p, {}, sha("{ broken"));
	assert.equal(over.code, "config-read-failed");
	assert.equal(readFileSync(p, "utf8"), "{ broken");
});

function startHolder(p) {
	const child = spawn(process.execPath, [worker, p, "hold"], { env: { ...process.env, PCT_TEST_LOCK_HOLD_MS: "60000" }, stdio: ["ignore", "pipe", "inherit"] });
	return new Promise((resolve) => {
		const poll = setInterval(() => {
			if (existsSync(p + ".lock/owner")) { clearInterval(poll); resolve(child); }
		}, 10);
	});
}

test("lock: a live holder gives lock-held with its pid; after SIGKILL the lock is reclaimed", async () => {
	const p = join(tmp(), "c.json");
	writeFileSync(p, "{}\n");
	const holder = await startHolder(p);
	const held = await native.configSave(p, { debug: true }, sha("{}\n"));
	assert.equal(held.code, "lock-held");
	assert.equal(
		held.message,
		`Could not save: the configuration lock ${p}.lock is held by pid ${holder.pid} (running). If no other Pi process with this Toolkit is saving, remove that directory and retry.`,
	);
	holder.kill("SIGKILL");
	await new Promise((r) => holder.on("close", r));
	assert.ok(existsSync(p + ".lock/owner"), "the dead holder's lock is left behind");
	const ok = await native.configSave(p, { debug: true }, sha("{}\n"));
	assert.equal(ok.ok, true, JSON.stringify(ok));
	assert.equal(existsSync(p + ".lock"), false);
});

test("lock: an empty leftover reclaim/ is removed; an owned one is never deleted", async () => {
	const p = join(tmp(), "c.json");
	writeFileSync(p, "{}\n");
	mkdirSync(p + ".lock/reclaim", { recursive: true });
	writeFileSync(p + ".lock/owner", JSON.stringify({ pid: 2147483000, token: "dead" }));
	const ok = await native.configSave(p, { debug: true }, sha("{}\n"));
	assert.equal(ok.ok, true, JSON.stringify(ok));
	assert.equal(existsSync(p + ".lock"), false);

	mkdirSync(p + ".lock/reclaim", { recursive: true });
	writeFileSync(p + ".lock/owner", JSON.stringify({ pid: 2147483000, token: "dead" }));
	writeFileSync(p + ".lock/reclaim/owner", JSON.stringify({ pid: 2147483001, token: "reclaimer" }));
	const before = readFileSync(p, "utf8");
	const held = await native.configSave(p, { debug: false }, ok.revision);
	assert.equal(held.code, "lock-held");
	assert.match(held.message, /held by pid 2147483000 \(not running\)/);
	assert.ok(existsSync(p + ".lock/reclaim/owner"), "owned reclaim kept");
	assert.equal(readFileSync(p, "utf8"), before);

	const q = join(tmp(), "c.json");
	mkdirSync(q + ".lock/whatever", { recursive: true });
	const noOwner = await native.configSave(q, {}, null);
	assert.equal(
		noOwner.message,
		`Could not save: the configuration lock ${q}.lock exists but has no readable owner record. If no other Pi process with this Toolkit is saving, remove that directory and retry.`,
	);
});

test("stress: 8 processes x 50 saves — always valid JSON, every save applied or refused, no lost update", async () => {
	const p = join(tmp(), "c.json");
	writeFileSync(p, JSON.stringify({ saves: [] }, null, 2) + "\n");
	let invalidSeen = 0;
	const watcher = setInterval(() => {
		try { JSON.parse(readFileSync(p, "utf8")); } catch { invalidSeen++; }
	}, 2);
	const runs = await Promise.all(
		Array.from({ length: 8 }, () =>
			new Promise((resolve, reject) => {
				const c = spawn(process.execPath, [worker, p, "stress", "50"], { stdio: ["ignore", "pipe", "inherit"] });
				let out = "";
				c.stdout.on("data", (d) => (out += d));
				c.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`worker exit ${code}`))));
			}),
		),
	);
	clearInterval(watcher);
	assert.equal(invalidSeen, 0, "the file was never seen half-written");
	const final = JSON.parse(readFileSync(p, "utf8"));
	const applied = runs.flatMap((r) => r.mine ?? []);
	for (const r of runs) {
		assert.deepEqual(r.other, []);
		assert.equal(r.ok + r["stale-revision"] + r["lock-held"], 50);
	}
	assert.ok(applied.length > 0);
	// Every applied save is in the file exactly once: nothing applied was overwritten (no lost update).
	assert.deepEqual([...final.saves].sort(), [...applied].sort());
	assert.equal(existsSync(p + ".lock"), false);
});

test("a config over a million JSON values is invalid-config with the size limit, never a throw", async () => {
	const dir = tmp();
	const p = join(dir, "c.json");
	// Valid and schema-clean: only an unknown key carries the bulk (napi's own conversion stops at one million values).
	const text = JSON.stringify({ applyPatch: { enabled: true }, bulk: new Array(1_100_000).fill(0) });
	writeFileSync(p, text);
	const r = native.configRead(p);
	assert.deepEqual(r, { status: "error", code: "invalid-config", detail: "configuration file is larger than the 1048576-byte limit", revision: sha(text), raw: null });
	// Under the byte limit but over the value limit.
	const many = JSON.stringify({ bulk: new Array(100_000).fill(0) });
	writeFileSync(p, many);
	assert.equal(native.configRead(p).detail, "configuration has more than the limit of 100000 JSON values");
	// Nesting past napi's and serde_json's 128 levels.
	writeFileSync(p, `{"deep":${"[".repeat(300)}${"]".repeat(300)}}`);
	assert.equal(native.configRead(p).detail, "configuration nests objects and arrays deeper than the limit of 64 levels");
	// A save never overwrites it.
	const saved = await native.configSave(p, {}, native.configRead(p).revision);
	assert.equal(saved.code, "config-read-failed");
});

test("__proto__ stays a plain key: no prototype pollution on read, kept through a draft edit and a save", async () => {
	const p = join(tmp(), "c.json");
	const text = '{"__proto__":{"polluted":true},"applyPatch":{"enabled":true,"__proto__":{"enabled":false}}}';
	writeFileSync(p, text);
	const r = native.configRead(p);
	assert.equal(r.status, "ok");
	assert.equal(Object.getPrototypeOf(r.raw), Object.prototype);
	assert.equal(Object.getPrototypeOf(r.raw.applyPatch), Object.prototype);
	assert.ok(Object.hasOwn(r.raw, "__proto__"));
	assert.equal(r.raw.polluted, undefined);
	assert.deepEqual(r.raw.__proto__, { polluted: true });
	assert.equal(native.configEffective(r.raw).applyPatch.enabled, true);
	const draft = native.configDraftSet(structuredClone(r.raw), "debug", true);
	assert.ok(Object.hasOwn(draft, "__proto__"));
	const out = await native.configSave(p, draft, r.revision);
	assert.equal(out.ok, true, JSON.stringify(out));
	assert.ok(Object.hasOwn(out.raw, "__proto__"));
	assert.equal(readFileSync(p, "utf8"), JSON.stringify(JSON.parse(text.replace(/}$/, ',"debug":true}')), null, 2) + "\n");
	// Inherited keys of a draft are never written as its own.
	const inherited = Object.create({ sneaky: true });
	inherited.debug = false;
	const out2 = await native.configSave(p, inherited, out.revision);
	assert.equal(out2.ok, true);
	assert.deepEqual(JSON.parse(readFileSync(p, "utf8")), { debug: false });
});

test("a symlinked config is saved through to its target; the link stays", async () => {
	const dir = tmp();
	mkdirSync(join(dir, "dotfiles"));
	writeFileSync(join(dir, "dotfiles", "pct.json"), "{}");
	const p = join(dir, "c.json");
	symlinkSync("dotfiles/pct.json", p);
	const out = await native.configSave(p, { debug: true }, sha("{}"));
	assert.equal(out.ok, true, JSON.stringify(out));
	assert.ok(lstatSync(p).isSymbolicLink());
	assert.equal(readlinkSync(p), "dotfiles/pct.json");
	assert.equal(readFileSync(join(dir, "dotfiles", "pct.json"), "utf8"), '{\n  "debug": true\n}\n');
});

test("stale .lock.stage-* folders and temp files of a killed saver are cleaned by the next save", async () => {
	const dir = tmp();
	const p = join(dir, "c.json");
	writeFileSync(p, "{}\n");
	// A saver killed after staging its lock folder (its pid is gone), one killed before writing its owner record
	// (empty, old), and one killed mid-write (old temp file).
	const dead = join(dir, ".c.json.lock.stage-dead");
	mkdirSync(dead);
	writeFileSync(join(dead, "owner"), JSON.stringify({ pid: 2147483000, token: "dead" }));
	const empty = join(dir, ".c.json.lock.stage-empty");
	mkdirSync(empty);
	const old = new Date(Date.now() - 60_000);
	utimesSync(empty, old, old);
	const tmpFile = join(dir, ".pi-codex-toolkit.json.tmp-killed");
	writeFileSync(tmpFile, "{ half");
	utimesSync(tmpFile, old, old);
	// A stage folder made a moment ago may belong to a saver about to take the lock: kept.
	const fresh = join(dir, ".c.json.lock.stage-fresh");
	mkdirSync(fresh);
	const out = await native.configSave(p, { debug: true }, sha("{}\n"));
	assert.equal(out.ok, true, JSON.stringify(out));
	assert.deepEqual(readdirSync(dir).sort(), [".c.json.lock.stage-fresh", "c.json"]);
});
