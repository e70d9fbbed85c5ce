// Execution rules, ownership and find_tools through the real Pi (both versions). The scripted model switches
// models with RPC `set_model`; a probe extension reports the active tools and the diagnostics records it heard
// on `pi-codex-toolkit.execution-diagnostics`.
import { test } from "node:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { PI_VERSIONS, RpcPi, runJson, sandbox, writeToolConfig as writeConfig, writeScript } from "../helpers/pi.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).
import { EMBEDDER, HOOKS, PROBE, THIRD_PARTY, featureOf, probe, probeFile, status, watched } from "../helpers/rules.mjs";

const MODELS = ["m-p", "m-s", "m-c", "m-pc", "m-psc", "m-none", "m-x"];
const RULES = [
	{ id: "P", match: "m-p", patch: true, shell: false, code: false },
	{ id: "S", match: "m-s", patch: false, shell: true, code: false },
	{ id: "C", match: "m-c", patch: false, shell: false, code: true },
	{ id: "PC", match: "m-pc", patch: true, shell: false, code: true },
	{ id: "PSC", match: "faux/m-psc", patch: true, shell: true, code: true },
	{ id: "none", match: "m-n?ne", patch: false, shell: false, code: false },
];
// The §4 table (active tools from read/bash/edit/write plus the toolkit's names).
const TABLE = {
	"m-p": ["apply_patch", "bash", "read"],
	"m-s": ["edit", "exec_command", "read", "write", "write_stdin"],
	"m-c": ["edit", "exec", "read", "wait", "write"],
	"m-pc": ["exec", "read", "wait"],
	"m-psc": ["exec", "exec_command", "read", "wait", "write_stdin"],
	"m-none": ["bash", "edit", "read", "write"],
	"m-x": ["bash", "edit", "read", "write"],
};
const RECORD_KEYS = [
	"version", "model", "source", "ruleId", "requested", "effective", "admittedNames", "visibleNames", "nestedNames",
	"hiddenNatives", "notes", "approvalTransport", "cleanupPending", "configRevision", "toolkit",
];

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] projection table P, S, C, P+C, P+S+C, none and an unmatched model; diagnostics heard`, async () => {
		const box = sandbox();
		writeConfig(box, { execution: { version: 1, rules: RULES } });
		const pi = new RpcPi({ version, box, model: "m-p", extensions: [EMBEDDER, PROBE], env: { PCT_FAUX_MODELS: MODELS.join(",") } });
		try {
			let seen = 0;
			for (const model of MODELS) {
				if (model !== "m-p") {
					const r = await pi.command("set_model", { provider: "faux", modelId: model });
					assert.equal(r.success, true, JSON.stringify(r));
				}
				const p = await probe(pi);
				assert.deepEqual(watched(p.active), TABLE[model], `active tools for ${model}`);
				assert.ok(p.records.length > seen, `a record after the sync for ${model}`);
				seen = p.records.length;
				const rec = p.records.at(-1);
				assert.deepEqual(Object.keys(rec).filter((k) => k !== "ruleId"), RECORD_KEYS.filter((k) => k !== "ruleId"));
				assert.equal(rec.version, 1);
				assert.equal(rec.model.id, model);
				assert.equal(rec.approvalTransport, "dialog");
				assert.match(rec.configRevision, /^[0-9a-f]{64}$/);
				if (model === "m-x") {
					assert.equal(rec.source, "unmatched");
					assert.equal(rec.ruleId, undefined);
					assert.deepEqual(rec.requested, { patch: false, shell: false, code: false });
				} else {
					assert.equal(rec.source, "rules");
					assert.equal(rec.ruleId, RULES.find((r) => r.match.endsWith(model) || (model === "m-none" && r.id === "none")).id);
				}
				if (model === "m-pc") {
					assert.deepEqual(rec.effective, { directPatch: false, nestedPatch: true, directShell: false, code: true });
					assert.deepEqual(rec.nestedNames, ["apply_patch", "exec_command", "write_stdin"]);
					assert.deepEqual(rec.hiddenNatives, ["bash", "edit", "write"]);
				}
			}
			const text = await status(pi);
			assert.match(text, /\nExecution rules:\n {2}matched rule: none \(the current model matches no rule\)\n {2}requested: none\n/);
			// Back to P+S+C: the restored builtins are hidden again.
			await pi.command("set_model", { provider: "faux", modelId: "m-psc" });
			assert.deepEqual(watched((await probe(pi)).active), TABLE["m-psc"]);
			assert.match(await status(pi), /matched rule: PSC \(match faux\/m-psc\)\n {2}requested: patch, shell, code\n {2}effective: nested patch, direct shell, code\n {2}bash hidden: yes\n {2}edit\/write hidden: yes\n {2}notes: none/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] the rule decides whether the real exec_command is callable; model switch keeps it consistent`, async () => {
		const box = sandbox();
		writeConfig(box, {
			execution: { version: 1, rules: [{ id: "S", match: "faux-1", patch: false, shell: true, code: false }] },
		});
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: { cmd: "echo from-shell" } }] },
			{ text: "first done" },
			{ tools: [{ name: "exec_command", args: { cmd: "echo again" } }] },
			{ text: "second done" },
		];`);
		const pi = new RpcPi({ version, box, script, extensions: [EMBEDDER, PROBE] });
		try {
			let run = await pi.prompt("run it");
			let end = run.events.find((e) => e.type === "tool_execution_end");
			assert.equal(end.isError, false, JSON.stringify(end.result));
			assert.match(end.result.content.map((c) => c.text).join("\n"), /from-shell/);
			await pi.command("set_model", { provider: "faux", modelId: "faux-2" });
			assert.deepEqual(watched((await probe(pi)).active), ["bash", "edit", "read", "write"]);
			run = await pi.prompt("run it again");
			end = run.events.find((e) => e.type === "tool_execution_end");
			assert.equal(end.isError, true);
			assert.match(end.result.content.map((c) => c.text).join("\n"), /not found/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] P+C route: a policy hook denies a nested apply_patch before any dialog; nothing written`, async () => {
		const box = sandbox();
		writeConfig(box, {
			execution: { version: 1, rules: [{ id: "PC", match: "faux-1", patch: true, shell: false, code: true }] },
			codeMode: { approvalMode: "confirm" },
		});
		const hookLog = join(box.base, "hooks.jsonl");
		const patch = "*** Begin Patch\n*** Add File: denied.txt\n+no\n*** End Patch\n";
		const code = `return await tools.apply_patch(${JSON.stringify(patch)}).then(() => "applied", (e) => e.code + ": " + e.message);`;
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec", args: { code: ${JSON.stringify(code)} } }] },
			{ text: "done" },
		];`);
		// RPC mode: a dialog-capable UI exists, so an approval dialog would be shown if the hook did not deny first.
		const pi = new RpcPi({ version, box, script, extensions: [HOOKS, PROBE], env: { PCT_HOOK_LOG: hookLog }, ui: () => ({ confirmed: true }) });
		try {
			const p = await probe(pi);
			assert.deepEqual(watched(p.active), ["exec", "read", "wait"]);
			assert.deepEqual(p.records.at(-1).nestedNames, ["apply_patch", "exec_command", "write_stdin"]);
			assert.equal(p.records.at(-1).approvalTransport, "dialog");
			const run = await pi.prompt("patch inside a cell");
			const end = run.events.find((e) => e.type === "tool_execution_end");
			assert.equal(end.toolName, "exec");
			const text = end.result.content.map((c) => c.text).join("\n");
			assert.match(JSON.stringify(end.result.details?.result ?? text), /policy-denied/, text);
			assert.match(JSON.stringify(end.result.details?.result ?? text), /nested patches are off here/);
			assert.deepEqual(pi.uiRequests.filter((r) => r.method === "confirm"), [], "no approval dialog");
			assert.equal(existsSync(join(box.cwd, "denied.txt")), false);
			const calls = readFileSync(hookLog, "utf8").trim().split("\n").map((l) => JSON.parse(l));
			assert.deepEqual(calls.map((c) => [c.tool, c.path]), [["apply_patch", "nested"]]);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a provider-qualified rule matches only its provider (same model id, two providers)`, async () => {
		const box = sandbox();
		writeConfig(box, {
			execution: {
				version: 1,
				rules: [
					{ id: "other-provider", match: "faux2/*", patch: false, shell: true, code: false },
					{ id: "by-id", match: "faux-1", patch: true, shell: false, code: false },
				],
			},
		});
		const pi = new RpcPi({ version, box, extensions: [EMBEDDER, PROBE], env: { PCT_FAUX_PROVIDER2: "faux2" } });
		try {
			let p = await probe(pi);
			assert.equal(p.records.at(-1).ruleId, "by-id");
			assert.deepEqual(watched(p.active), ["apply_patch", "bash", "read"]);
			const r = await pi.command("set_model", { provider: "faux2", modelId: "faux-1" });
			assert.equal(r.success, true, JSON.stringify(r));
			p = await probe(pi);
			assert.equal(p.records.at(-1).ruleId, "other-provider");
			assert.deepEqual(p.records.at(-1).model, { provider: "faux2", id: "faux-1", api: p.records.at(-1).model.api });
			assert.deepEqual(watched(p.active), ["edit", "exec_command", "read", "write", "write_stdin"], "edit/write restored, bash hidden");
			assert.deepEqual(p.records.at(-1).hiddenNatives, ["bash"]);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a third-party apply_patch / exec_command / exec wins: groups go down, theirs untouched`, async () => {
		const box = sandbox();
		writeConfig(box, { execution: { version: 1, rules: [{ id: "all", match: "*", patch: true, shell: true, code: true }] } });
		const script = writeScript(box, `export default [
			{ tools: [{ name: "exec_command", args: {} }, { name: "apply_patch", args: {} }, { name: "exec", args: {} }] },
			{ text: "done" },
		];`);
		const pi = new RpcPi({ version, box, script, extensions: [THIRD_PARTY, EMBEDDER, PROBE] });
		try {
			const p = await probe(pi);
			for (const n of ["apply_patch", "exec_command", "exec"]) {
				assert.ok(p.active.includes(n), `${n} (theirs) stays active`);
				assert.ok(p.tools.find((t) => t.name === n).path.endsWith("third-party.ts"));
			}
			assert.ok(!p.active.includes("write_stdin") && !p.active.includes("wait"), "our siblings go down with their groups");
			assert.deepEqual(watched(p.active), ["apply_patch", "bash", "edit", "exec", "exec_command", "read", "write"]);
			const text = await status(pi);
			for (const title of ["Apply Patch", "Shell Sessions", "Code Mode"]) {
				assert.deepEqual(featureOf(text, title), { configured: "on", effective: "unavailable", reason: "name-taken" }, title);
			}
			assert.deepEqual(p.records.at(-1).hiddenNatives, []);
			const run = await pi.prompt("go");
			const ends = run.events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(ends.map((e) => e.result.content[0].text).sort(), ["third-party apply_patch", "third-party exec", "third-party exec_command"]);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] --tools allowlist: filtered names are missing (route notes), not conflicts; legacy says conflicting-tool-name`, async () => {
		const box = sandbox();
		writeConfig(box, { execution: { version: 1, rules: [{ id: "all", match: "*", patch: true, shell: true, code: true }] } });
		const tools = ["read", "bash", "edit", "write", "exec", "wait"];
		const pi = new RpcPi({ version, box, tools, extensions: [EMBEDDER, PROBE] });
		try {
			const p = await probe(pi);
			assert.deepEqual(watched(p.active), ["bash", "edit", "read", "write"], "no route admitted: our exec/wait go, natives stay");
			const text = await status(pi);
			assert.deepEqual(featureOf(text, "Shell Sessions"), { configured: "on", effective: "unavailable", reason: "shell-pair-unavailable" });
			assert.deepEqual(featureOf(text, "Code Mode"), { configured: "on", effective: "unavailable", reason: "code-shell-pair-unavailable" });
			assert.deepEqual(featureOf(text, "Apply Patch"), { configured: "on", effective: "unavailable", reason: "code-unavailable-did-not-promote-patch" });
			assert.match(text, /bash hidden: no\n {2}edit\/write hidden: no\n {2}notes: code-unavailable-did-not-promote-patch, patch-unavailable-kept-native-editing, shell-pair-unavailable, code-shell-pair-unavailable/);
			assert.deepEqual(p.records.at(-1).admittedNames, []);
		} finally {
			await pi.close();
		}
		const legacyBox = sandbox();
		writeConfig(legacyBox, { shellSessions: { enabled: true }, codeMode: { enabled: true } });
		const legacy = new RpcPi({ version, box: legacyBox, tools, extensions: [EMBEDDER, PROBE] });
		try {
			const text = await status(legacy);
			assert.deepEqual(featureOf(text, "Shell Sessions"), { configured: "on", effective: "unavailable", reason: "conflicting-tool-name" });
			assert.deepEqual(featureOf(text, "Code Mode"), { configured: "on", effective: "active", reason: "" });
			assert.deepEqual(watched((await probe(legacy)).active), ["bash", "edit", "exec", "read", "wait", "write"]);
		} finally {
			await legacy.close();
		}
	});

	test(`[pi ${version.name}] find_tools: query shows eligible, load makes the deferred tool callable on the next turn`, async () => {
		const box = sandbox();
		writeConfig(box, {
			execution: { version: 1, rules: [{ id: "p", match: "faux-1", patch: true, shell: false, code: false }] },
			toolDiscovery: { enabled: true, deferred: ["apply_patch"] },
		});
		const script = writeScript(box, `export default [
			{ tools: [{ name: "apply_patch", args: {} }] },
			{ tools: [{ name: "find_tools", args: {} }] },
			{ tools: [{ name: "find_tools", args: { query: "PATCH" } }] },
			{ tools: [{ name: "find_tools", args: { load: ["apply_patch", "bash"] } }] },
			{ tools: [{ name: "apply_patch", args: { patch: "*** Begin Patch\\n*** Add File: loaded.txt\\n+hello\\n*** End Patch" } }, { name: "find_tools", args: { load: ["apply_patch"] } }] },
			{ text: "done" },
		];`);
		const probeFilePath = box.base + "/probe.jsonl";
		const r = await runJson({ version, box, script, extensions: [EMBEDDER, PROBE], env: { PCT_PROBE_FILE: probeFilePath } });
		assert.equal(r.code, 0, r.stderr);
		const ends = r.toolEnds.map((e) => [e.toolName, e.isError, r.text(e)]);
		assert.deepEqual(ends[0].slice(0, 2), ["apply_patch", true]);
		assert.match(ends[0][2], /not found/, "deferred: not callable before the load");
		assert.deepEqual(ends[1], ["find_tools", true, "find_tools requires a query or a non-empty load list."]);
		assert.deepEqual(ends[2].slice(0, 2), ["find_tools", false]);
		const m = ends[2][2].match(/^Managed tools matching "PATCH":\n- apply_patch \[eligible\]: (.+)$/);
		assert.ok(m, ends[2][2]);
		assert.ok([...m[1]].length <= 140, "one-line summary of at most 140 characters");
		assert.deepEqual(ends[3], ["find_tools", false, "Loaded for the next turn: apply_patch\nRejected bash: not-managed"]);
		// The last turn's two calls may finish in either order.
		const last = Object.fromEntries(ends.slice(4).map((e) => [e[0], e]));
		assert.deepEqual(last.apply_patch.slice(0, 2), ["apply_patch", false], "callable on the next turn: " + last.apply_patch[2]);
		assert.equal(readFileSync(join(box.cwd, "loaded.txt"), "utf8"), "hello\n");
		assert.deepEqual(last.find_tools, ["find_tools", false, "Already loaded: apply_patch"], "idempotent");
		assert.equal(ends.length, 6);
		const turns = probeFile(probeFilePath).filter((x) => x.kind === "turn").map((x) => watched(x.active));
		assert.deepEqual(turns[0], ["bash", "edit", "find_tools", "read", "write"], "natives stay while the route is held back");
		assert.deepEqual(turns.at(-1), ["apply_patch", "bash", "find_tools", "read"]);
	});

	test(`[pi ${version.name}] loads survive /pct reload and a model change, and are forgotten when discovery is disabled`, async () => {
		const box = sandbox();
		const cfg = {
			execution: { version: 1, rules: [{ id: "p", match: "*", patch: true, shell: false, code: false }] },
			toolDiscovery: { enabled: true, deferred: ["apply_patch"] },
		};
		writeConfig(box, cfg);
		const script = writeScript(box, `export default [
			{ tools: [{ name: "find_tools", args: { load: ["apply_patch"] } }] },
			{ text: "loaded" },
		];`);
		const pi = new RpcPi({ version, box, script, extensions: [EMBEDDER, PROBE] });
		try {
			assert.ok(!(await probe(pi)).active.includes("apply_patch"));
			await pi.prompt("load it");
			assert.ok((await probe(pi)).active.includes("apply_patch"));
			await pi.prompt("/pct reload");
			assert.ok((await probe(pi)).active.includes("apply_patch"), "survives /pct reload");
			await pi.command("set_model", { provider: "faux", modelId: "faux-2" });
			assert.ok((await probe(pi)).active.includes("apply_patch"), "survives a model change");
			assert.match(featureOf(await status(pi), "Apply Patch").effective, /^active$/);
			assert.match(await status(pi), /managed deferred: 1\n {2}loaded this session: 1\n/);
			writeConfig(box, { ...cfg, toolDiscovery: { enabled: false, deferred: ["apply_patch"] } });
			await pi.prompt("/pct reload");
			assert.ok((await probe(pi)).active.includes("apply_patch"), "discovery off: the normal projection");
			writeConfig(box, cfg);
			await pi.prompt("/pct reload");
			const p = await probe(pi);
			assert.ok(!p.active.includes("apply_patch"), "re-enabled: the load was forgotten");
			assert.ok(p.active.includes("find_tools"));
			assert.equal(featureOf(await status(pi), "Apply Patch").effective, "deferred");
			await pi.command("new_session");
			assert.ok(!(await probe(pi)).active.includes("apply_patch"), "a new session hides deferred names again");
		} finally {
			await pi.close();
		}
	});
}
