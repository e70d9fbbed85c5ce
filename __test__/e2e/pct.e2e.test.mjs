// /pct through the real Pi (both versions), driven in RPC mode with scripted dialog answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { PI_VERSIONS, RpcPi, runJson, sandbox, writeConfig } from "../helpers/pi.mjs";

/** Answers select dialogs from a queue of option matchers (string prefix or regexp). */
function selectQueue(choices) {
	const q = [...choices];
	return (req) => {
		if (req.method !== "select") return { cancelled: true };
		const want = q.shift();
		if (want === undefined) return { cancelled: true };
		const hit = req.options.find((o) => (want instanceof RegExp ? want.test(o) : o.startsWith(want)));
		if (!hit) throw new Error(`no option ${want} in ${JSON.stringify(req.options)}`);
		return { value: hit };
	};
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] /pct status lists every feature; usage line for unknown subcommands`, async () => {
		const pi = new RpcPi({ version });
		try {
			const { notifications } = await pi.prompt("/pct status all");
			const text = notifications.join("\n");
			assert.match(text, /^model: faux-1  provider: faux  api: /m);
			assert.match(text, new RegExp(`^config: ${pi.box.configPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
			for (const title of ["Web Search", "Remote Compaction", "Image Generation", "Computer Use", "Apply Patch", "Shell Sessions", "Code Mode", "Tool Discovery"]) {
				assert.match(text, new RegExp(`^${title}\\n  configured: off\\n  effective: (off|unavailable)\\n  reason: [A-Z].*\\. \\[[a-z-]+\\]$`, "m"), title);
			}
			assert.doesNotMatch(text, /Config error:/);
			const usage = await pi.prompt("/pct bogus");
			assert.deepEqual(usage.notifications, [
				"Usage: /pct [config|status [all]|reload|jobs [show <id>|stop <id>|stop all]|review [show <n>|rollback <n>|rollback all]|permission [ask|accept-edits|auto|default|revoke <tool>|revoke all]|mode [plan|agent]|todos|agents|worktree [new [name]|list|merge [token]|leave|delete <id> [force]]]",
			]);
			// Plain /pct status fits one screen: the summary first, features by state, Task subagents, then the way to more.
			const short = (await pi.prompt("/pct status")).notifications.join("\n");
			const lines = short.split("\n");
			assert.match(lines[0], /^Pi Codex Toolkit: (\d+ (active|deferred|unavailable|off)( · )?)+ · running: nothing$/);
			assert.ok(lines.length <= 15, short);
			assert.match(short, /^Off: .*Web Search.*\(\/pct config turns them on\)$/m);
			assert.match(short, /^Task subagents: off \(subagents\.enabled in \/pct config\)$/m);
			assert.match(short, /^Permission mode: ask · operation mode: Agent$/m);
			assert.equal(lines.at(-1), "/pct status all: every feature's reason and details, the model, the execution rules.");
			assert.doesNotMatch(short, /configured: /);
			assert.match(text, /^Task subagents: off/m, "status all names Task subagents too");
			// Every sub-command of the table dispatches (none answers with the usage line); todos was missing once.
			const todos = await pi.prompt("/pct todos");
			assert.equal(todos.notifications.length, 1);
			assert.doesNotMatch(todos.notifications[0], /^Usage:/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] start-up warning once with a UI; /pct reload with invalid, valid and missing file`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: "yes" } });
		const pi = new RpcPi({ version, box });
		try {
			const bad = "Pi Codex Toolkit config error: invalid-config (applyPatch.enabled must be true or false); using all-off defaults.";
			let r = await pi.prompt("/pct status all");
			assert.deepEqual(pi.notifications.filter((n) => n === bad).length, 1, "one start-up warning");
			assert.match(r.notifications.join("\n"), /^Config error: invalid-config \(applyPatch\.enabled must be true or false\)$/m);
			r = await pi.prompt("/pct reload");
			assert.deepEqual(r.notifications, [bad]);
			writeConfig(box, { applyPatch: { enabled: false } });
			r = await pi.prompt("/pct reload");
			assert.deepEqual(r.notifications, ["Pi Codex Toolkit configuration reloaded."]);
			writeConfig(box, "{ not json");
			r = await pi.prompt("/pct reload");
			assert.deepEqual(r.notifications, ["Pi Codex Toolkit config error: invalid-json; using last known good settings."]);
			r = await pi.prompt("/pct status all");
			assert.match(r.notifications.join("\n"), /^Config error: invalid-json$/m);
			const { rmSync } = await import("node:fs");
			rmSync(box.configPath);
			r = await pi.prompt("/pct reload");
			assert.deepEqual(r.notifications, ["Pi Codex Toolkit configuration reloaded."]);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] README quick start: {"applyPatch":{"enabled":true}} then /pct status; off features say why`, async () => {
		const box = sandbox();
		writeConfig(box, '{"applyPatch":{"enabled":true}}');
		const pi = new RpcPi({ version, box });
		try {
			const text = (await pi.prompt("/pct status all")).notifications.join("\n");
			assert.match(text, /^Apply Patch\n {2}configured: on\n {2}effective: active\n/m);
			assert.match(text, /^Shell Sessions\n {2}configured: off\n {2}effective: off\n {2}reason: Turned off: turn it on with \/pct config \(shellSessions\.enabled\)\. \[off-in-config\]$/m);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a config over a million JSON values: Pi starts, one warning, status names the limit`, async () => {
		const box = sandbox();
		writeConfig(box, JSON.stringify({ applyPatch: { enabled: true }, bulk: new Array(1_100_000).fill(0) }));
		const pi = new RpcPi({ version, box });
		try {
			const detail = "invalid-config (configuration file is larger than the 1048576-byte limit)";
			const r = await pi.prompt("/pct status all");
			const warning = `Pi Codex Toolkit config error: ${detail}; using all-off defaults.`;
			assert.equal(pi.notifications.filter((n) => n === warning).length, 1, "one start-up warning");
			const text = r.notifications.join("\n");
			assert.ok(text.includes(`Config error: ${detail}`), text);
			assert.match(text, /^Apply Patch\n  configured: off\n/m, "all-off defaults in force");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] /pct config toggles a setting and saves; unknown fields survive`, async () => {
		const box = sandbox();
		writeConfig(box, { imageGeneration: { enabled: false, later: 1 }, custom: { x: [1] } });
		const pi = new RpcPi({ version, box, ui: selectQueue(["Tool Discovery: off", "Debug metadata: off", "Save"]) });
		try {
			const r = await pi.prompt("/pct config");
			assert.deepEqual(r.notifications, ["Pi Codex Toolkit configuration saved."]);
			const saved = JSON.parse(readFileSync(box.configPath, "utf8"));
			assert.deepEqual(saved, { imageGeneration: { enabled: false, later: 1 }, custom: { x: [1] }, toolDiscovery: { enabled: true }, debug: true });
			assert.equal(readFileSync(box.configPath, "utf8"), JSON.stringify(saved, null, 2) + "\n");
			assert.equal(pi.uiRequests[0].title, "Pi Codex Toolkit settings");
			assert.ok(pi.uiRequests[0].options.includes("Save") && pi.uiRequests[0].options.includes("Cancel"));
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] /pct config: a file changed meanwhile is refused (stale-revision) and the draft stays open`, async () => {
		const box = sandbox();
		writeConfig(box, {});
		let step = 0;
		const pi = new RpcPi({
			version,
			box,
			ui: (req) => {
				step++;
				if (step === 1) return { value: req.options.find((o) => o.startsWith("Debug metadata")) };
				if (step === 2) {
					writeConfig(box, { remoteCompaction: { enabled: true } }); // another writer
					return { value: "Save" };
				}
				// Cancel with unsaved changes asks before discarding them
				return { value: req.title.startsWith("Discard") ? "Discard changes" : "Cancel" };
			},
		});
		try {
			const r = await pi.prompt("/pct config");
			assert.deepEqual(r.notifications, ["Could not save: the configuration file changed; reload and review the draft.", "Pi Codex Toolkit configuration: changes discarded."]);
			assert.equal(pi.uiRequests.length, 4, "the menu came back after the refused save, then the discard question");
			assert.equal(pi.uiRequests[3].title, "Discard the unsaved changes?");
			assert.ok(pi.uiRequests[2].options.includes("Debug metadata: on"), "the draft kept the edit");
			assert.deepEqual(JSON.parse(readFileSync(box.configPath, "utf8")), { remoteCompaction: { enabled: true } });
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] execution rules editor: legacy preview, add, duplicate id refused, save drops legacy flags`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true }, codeMode: { enabled: false, approvalMode: "always" } });
		const answers = [
			{ value: /^Execution rules: /},
			{ value: /^1\. rule-1  \*  P$/ }, // the legacy preview row
			{ value: /^Back$/ },
			{ value: /^Add rule$/ },
			{ value: /^2\. rule-2  \*  —$/ },
			{ value: /^Id: rule-2$/ },
			{ input: "rule-1" }, // duplicate
			{ value: /^Back$/ },
			{ value: /^Back$/ },
			{ value: /^Save$/ },
		];
		const pi = new RpcPi({
			version,
			box,
			ui: (req) => {
				const a = answers.shift();
				if (!a) return { cancelled: true };
				if (a.input !== undefined) return { value: a.input };
				const hit = req.options.find((o) => a.value.test(o));
				if (!hit) throw new Error(`no ${a.value} in ${JSON.stringify(req.options)}`);
				return { value: hit };
			},
		});
		try {
			const r = await pi.prompt("/pct config");
			assert.deepEqual(r.notifications, ['Rule id "rule-1" is already used by another rule.', "Pi Codex Toolkit configuration saved."]);
			assert.deepEqual(JSON.parse(readFileSync(box.configPath, "utf8")), {
				applyPatch: {},
				codeMode: { approvalMode: "always" },
				execution: {
					version: 1,
					rules: [
						{ id: "rule-1", match: "*", patch: true, shell: false, code: false },
						{ id: "rule-2", match: "*", patch: false, shell: false, code: false },
					],
				},
			});
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] rules editor: opening it on a legacy config and going Back leaves the draft as it was`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true } });
		const pi = new RpcPi({ version, box, ui: selectQueue([/^Execution rules: /, /^Back$/, /^Debug metadata: off$/, /^Save$/]) });
		try {
			const r = await pi.prompt("/pct config");
			assert.deepEqual(r.notifications, ["Pi Codex Toolkit configuration saved."]);
			assert.deepEqual(JSON.parse(readFileSync(box.configPath, "utf8")), { applyPatch: { enabled: true }, debug: true });
			assert.ok(pi.uiRequests[2].options.includes("Apply Patch: on"), "the switch rows are still shown");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] /pct config over an invalid file: the save is refused with advice and the file is kept`, async () => {
		const box = sandbox();
		writeConfig(box, "{ hand-edited");
		const pi = new RpcPi({ version, box, ui: selectQueue([/^Debug metadata: off$/, /^Save$/, /^Cancel$/]) });
		try {
			const r = await pi.prompt("/pct config");
			// (the start-up warning may land in the same window)
			const mine = r.notifications.filter((n) => !n.startsWith("Pi Codex Toolkit config error:"));
			// Cancel with the unsaved draft asks to discard it; the unanswered question discards (docs/config.md).
			assert.deepEqual(mine, [
				"Could not save: the configuration file is not valid (invalid-json); fix or remove it, then run /pct reload.",
				"Pi Codex Toolkit configuration: changes discarded.",
			]);
			assert.equal(readFileSync(box.configPath, "utf8"), "{ hand-edited");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] without a UI: /pct config prints the path, /pct status goes to stderr`, async () => {
		const box = sandbox();
		const script = new URL("../fixtures/text-only.mjs", import.meta.url).pathname;
		const r = await runJson({ version, box, script, prompt: "/pct config" });
		assert.match(r.stderr, new RegExp(`Pi Codex Toolkit config: ${box.configPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
		assert.equal(existsSync(box.configPath), false, "nothing written");
		const s = await runJson({ version, box, script, prompt: "/pct status all" });
		assert.match(s.stderr, /^Apply Patch\n  configured: off/m);
	});

	test(`[pi ${version.name}] two Pi processes saving concurrently: one applies, the other is refused, the file stays valid`, async () => {
		const box = sandbox();
		writeConfig(box, {});
		let release;
		const gate = new Promise((r) => (release = r));
		let waiting = 0;
		const mk = (row) => {
			let n = 0;
			return async (req) => {
				n++;
				if (n === 1) return { value: req.options.find((o) => o.startsWith(row)) };
				if (n === 2) {
					if (++waiting === 2) release();
					await gate; // both drafts are based on the same revision
					return { value: "Save" };
				}
				return { value: "Cancel" };
			};
		};
		const a = new RpcPi({ version, box, ui: mk("Debug metadata") });
		const b = new RpcPi({ version, box, ui: mk("Tool Discovery") });
		try {
			const [ra, rb] = await Promise.all([a.prompt("/pct config"), b.prompt("/pct config")]);
			const all = [...ra.notifications, ...rb.notifications];
			assert.equal(all.filter((n) => n === "Pi Codex Toolkit configuration saved.").length, 1, JSON.stringify(all));
			assert.equal(all.filter((n) => /^Could not save: the configuration (file changed|lock .* is held by pid \d+ \(running\))/.test(n)).length, 1, JSON.stringify(all));
			const saved = JSON.parse(readFileSync(box.configPath, "utf8"));
			assert.ok(saved.debug === true || saved.toolDiscovery?.enabled === true);
			assert.ok(!(saved.debug === true && saved.toolDiscovery?.enabled === true));
		} finally {
			await Promise.all([a.close(), b.close()]);
		}
	});
}
