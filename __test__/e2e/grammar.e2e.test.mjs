// The Lark grammars in a real Responses request (docs/patch.md "Grammar", docs/code.md): the real Pi (both
// versions) on openai-codex with a ChatGPT login sends its model request to the loopback OpenAI server
// (helpers/openai-server.mjs, through the fetch-redirect test extension), which records it. apply_patch and exec go
// out as custom tools whose format is Codex's Lark grammar, byte for byte; a GPT model trained on Codex's
// freeform apply_patch sees exactly that tool.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readFileSync, writeFileSync } from "node:fs";
import { PI_VERSIONS, ROOT, RpcPi, sandbox, writeConfig } from "../helpers/pi.mjs";
import { responseText, startOpenAIServer } from "./helpers/openai-server.mjs";

// Codex's grammars as recorded with the commit checked (docs/codex-parity.md), not the toolkit's own constants: the
// request must carry what Codex sends.
const CODEX = join(ROOT, "__test__/fixtures/codex");
const APPLY_PATCH_LARK = readFileSync(join(CODEX, "apply_patch.lark"), "utf8");
const EXEC_SOURCE_GRAMMAR = readFileSync(join(CODEX, "exec.lark"), "utf8");

const EXTS = [join(ROOT, "__test__/fixtures/fetch-redirect-ext.ts"), ROOT];

/** A ChatGPT OAuth login in auth.json (a JWT whose claim carries chatgpt_account_id) and SSE transport. */
function codexLogin(box, accountId = "acct_test_1") {
	const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
	const jwt = `${b64({ alg: "none", typ: "JWT" })}.${b64({ "https://api.openai.com/auth": { chatgpt_account_id: accountId }, exp: Math.floor(Date.now() / 1000) + 3600 })}.sig`;
	writeFileSync(join(box.agentDir, "auth.json"), JSON.stringify({ "openai-codex": { type: "oauth", access: jwt, refresh: "refresh-test", expires: Date.now() + 3600_000, accountId } }));
	writeFileSync(join(box.agentDir, "settings.json"), JSON.stringify({ transport: "sse" }));
}

const servers = [];
after(async () => {
	for (const s of servers) await s.close();
});

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] a real Responses request carries apply_patch and exec as custom tools with the toolkit's Lark grammars`, async () => {
		const srv = await startOpenAIServer();
		servers.push(srv);
		srv.reply(() => ({ sse: responseText("ok") }));
		const box = sandbox();
		codexLogin(box);
		writeConfig(box, { applyPatch: { enabled: true }, codeMode: { enabled: true }, shellSessions: { enabled: true } });
		const pi = new RpcPi({ version, box, provider: "openai-codex", model: "gpt-5.6-luna", extensions: EXTS, env: { PCT_TEST_FETCH_REDIRECT: srv.url } });
		try {
			await pi.prompt("hello");
		} finally {
			await pi.close();
		}
		// The tool list travels in `tools` (Pi 0.87.1) or in an `additional_tools` input item (Pi 1.6.0).
		const toolsOf = (q) => [...(q.json?.tools ?? []), ...(q.json?.input ?? []).filter((i) => i.type === "additional_tools").flatMap((i) => i.tools ?? [])];
		const req = srv.requests.find((q) => toolsOf(q).length > 0);
		assert.ok(req, `no model request with tools was recorded: ${JSON.stringify(srv.requests.map((q) => [q.path, Object.keys(q.json ?? {})]))}`);
		const sent = toolsOf(req);
		const tool = (name) => sent.find((t) => t.name === name);
		assert.deepEqual(
			{ ...tool("apply_patch"), description: undefined },
			{ type: "custom", name: "apply_patch", description: undefined, format: { type: "grammar", syntax: "lark", definition: APPLY_PATCH_LARK } },
			JSON.stringify(tool("apply_patch")),
		);
		assert.deepEqual(tool("exec")?.format, { type: "grammar", syntax: "lark", definition: EXEC_SOURCE_GRAMMAR }, JSON.stringify(tool("exec")));
		assert.equal(tool("exec").type, "custom");
	});
}
