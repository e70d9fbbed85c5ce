// The seed's sensitive paths in the real Pi (both versions), faux model (docs/permissions.md "Sensitive paths"):
// under `auto`, Read, Write, Edit's MV and Glob refuse `~/.ssh` and `~/.aws` (also through a symlink in the
// workspace) with SENSITIVE_PATH and audit it; a headless Bash naming `~/.ssh` is refused, and in RPC mode it shows a
// card even under `auto`, without a session choice. HOME is the sandbox's own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";

const T = 180000;

/** A sandbox whose HOME holds a fake key and credentials file, and a workspace link into `~/.ssh`. */
function homeBox() {
	const box = sandbox();
	const home = join(box.base, "home");
	mkdirSync(join(home, ".ssh"), { recursive: true });
	mkdirSync(join(home, ".aws"), { recursive: true });
	writeFileSync(join(home, ".ssh", "id_rsa"), "PRIVATE-KEY-BYTES\n");
	writeFileSync(join(home, ".aws", "credentials"), "[default]\naws_secret_access_key = x\n");
	writeFileSync(join(home, "notes.txt"), "public\n");
	symlinkSync(join(home, ".ssh"), join(box.cwd, "keys"));
	writeFileSync(join(box.cwd, "a.txt"), "a\n");
	writeConfig(box, { hostTools: { enabled: true }, permissions: { mode: "auto" } });
	return { box, home };
}

function audit(box) {
	const dir = join(box.agentDir, "pi-codex-toolkit", "audit");
	const files = existsSync(dir) ? readdirSync(dir) : [];
	return files.flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").map((l) => JSON.parse(l)));
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] under auto, the file tools refuse the sensitive paths and a headless command naming one does not run`, async () => {
		const { box, home } = homeBox();
		const script = writeScript(
			box,
			`export default [
	{ tools: [{ name: "Read", args: { path: ${JSON.stringify(join(home, ".ssh", "id_rsa"))} } }] },
	{ tools: [{ name: "Read", args: { path: "keys/id_rsa" } }] },
	{ tools: [{ name: "Write", args: { path: ${JSON.stringify(join(home, ".aws", "credentials"))}, content: "stolen\\n" } }] },
	{ tools: [{ name: "Glob", args: { pattern: "*", path: ${JSON.stringify(home)} } }] },
	{ tools: [{ name: "Bash", args: { command: "cat ~/.ssh/id_rsa" } }] },
	{ tools: [{ name: "Bash", args: { command: "echo fine" } }] },
	{ text: "done" },
];`,
		);
		const r = await runJson({ version, box, script, env: { HOME: home }, timeoutMs: T });
		const texts = r.toolEnds.map(toolText);
		assert.equal(r.toolEnds.length, 6, r.stderr.slice(-2000));
		for (const i of [0, 1, 2]) assert.match(texts[i], /^SENSITIVE_PATH: .*(~\/\.ssh|~\/\.aws), a sensitive path/, texts[i]);
		assert.equal(readFileSync(join(home, ".aws", "credentials"), "utf8"), "[default]\naws_secret_access_key = x\n");
		// Glob of the home folder lists the ordinary file and never enters the sensitive ones.
		assert.match(texts[3], /notes\.txt/);
		assert.doesNotMatch(texts[3], /id_rsa|credentials/);
		assert.match(texts[4], /^SENSITIVE_PATH: Bash names ~\/\.ssh/, texts[4]);
		assert.doesNotMatch(texts.join("\n"), /PRIVATE-KEY-BYTES/);
		assert.match(texts[5], /fine/);
		const lines = audit(box);
		const denied = lines.filter((l) => l.decision === "denied-sensitive");
		assert.deepEqual(denied.map((l) => [l.tool, l.errorCode]), [["Read", "SENSITIVE_PATH"], ["Read", "SENSITIVE_PATH"], ["Write", "SENSITIVE_PATH"], ["Bash", "SENSITIVE_PATH"]]);
		assert.equal(denied[3].sensitive, "~/.ssh");
	});

	test(`[pi ${version.name}] under auto, a command naming a sensitive path still shows a card, with no session choice`, async () => {
		const { box, home } = homeBox();
		const script = writeScript(
			box,
			`export default [
	{ tools: [{ name: "Bash", args: { command: "cat $HOME/.ssh/id_rsa" } }] },
	{ tools: [{ name: "Bash", args: { command: "echo no card" } }] },
	{ text: "done" },
];`,
		);
		const pi = new RpcPi({ version, box, script, env: { HOME: home }, ui: async () => ({ value: "Deny" }) });
		try {
			await pi.prompt("go", T);
			const cards = pi.uiRequests.filter((q) => q.method === "select");
			assert.equal(cards.length, 1, "one card: the sensitive command; the other ran under auto");
			assert.match(cards[0].title, /This command names ~\/\.ssh, a sensitive path/);
			assert.deepEqual(cards[0].options, ["Allow once", "Deny"]);
			const ends = pi.events.filter((e) => e.type === "tool_execution_end");
			assert.match(toolText(ends[0]), /^TOOL_DENIED: The user denied permission/);
			assert.match(toolText(ends[1]), /no card/);
			const line = audit(box).find((l) => l.tool === "Bash" && l.decision === "deny");
			assert.equal(line?.sensitive, "~/.ssh");
		} finally {
			await pi.close();
		}
	});
}
