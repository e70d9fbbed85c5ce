// Web Search in the real Pi (both versions), offline: a loopback OpenAI server (helpers/openai-server.mjs) and the
// fetch-redirect test extension send https://api.openai.com and https://chatgpt.com requests to it, so the
// official-route check passes while nothing leaves the machine.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, writeConfig, writeScript } from "../helpers/pi.mjs";
import { messageItem, responseEvents, responseJson, responseText, responseToolCall, startOpenAIServer, webSearchCallItem } from "./helpers/openai-server.mjs";

const REDIRECT = join(ROOT, "__test__/fixtures/fetch-redirect-ext.ts");
const EXTS = [REDIRECT, ROOT];

const servers = [];
async function server() {
	const s = await startOpenAIServer();
	servers.push(s);
	return s;
}
after(async () => {
	for (const s of servers) await s.close();
});

/** A json-mode run on the official openai route (API key), everything redirected to `srv`. */
function runOpenAI(version, srv, { box, config, prompt = "find it", model = "gpt-4.1", env = {}, script } = {}) {
	box ??= sandbox();
	writeConfig(box, config);
	return runJson({ version, box, extensions: EXTS, provider: "openai", model, prompt, script, env: { OPENAI_API_KEY: "sk-test-secret-token", PCT_TEST_FETCH_REDIRECT: srv.url, ...env } });
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] native: the model request carries the hosted web_search tool (live), sources included`, async () => {
		const srv = await server();
		srv.reply(() => ({ sse: responseText("done") }));
		const r = await runOpenAI(version, srv, { config: { webSearch: { enabled: true, contextSize: "high" } } });
		assert.equal(r.code, 0, r.stderr);
		const calls = srv.to("/v1/responses");
		assert.equal(calls.length, 1, JSON.stringify(srv.requests.map((q) => q.path)));
		const body = calls[0].json;
		assert.equal(calls[0].host, "api.openai.com");
		const ws = body.tools.filter((t) => t.type === "web_search");
		assert.deepEqual(ws, [{ type: "web_search", search_context_size: "high", external_web_access: true }]);
		assert.ok(body.include.includes("web_search_call.action.sources"), JSON.stringify(body.include));
		assert.equal(body.tool_choice, "auto");
		// Other tools (Pi's own) are still there; the sidecar tool is not offered under the native backend.
		assert.ok(body.tools.some((t) => t.type === "function"));
		assert.ok(!body.tools.some((t) => t.name === "openai_web_search"));
	});

	test(`[pi ${version.name}] native: cached mode sends external_web_access false; feature off changes nothing`, async () => {
		const srv = await server();
		srv.reply(() => ({ sse: responseText("done") }));
		let r = await runOpenAI(version, srv, { config: { webSearch: { enabled: true, mode: "cached" } } });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(srv.requests.at(-1).json.tools.find((t) => t.type === "web_search").external_web_access, false);
		r = await runOpenAI(version, srv, { config: { webSearch: { enabled: false } } });
		assert.equal(r.code, 0, r.stderr);
		const body = srv.requests.at(-1).json;
		assert.ok(!(body.tools ?? []).some((t) => t.type === "web_search"));
		assert.ok(!(body.include ?? []).includes("web_search_call.action.sources"));
	});
}
