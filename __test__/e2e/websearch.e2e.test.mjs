// Web Search in the real Pi (both versions), offline: a loopback OpenAI server (helpers/openai-server.mjs) and the
// fetch-redirect test extension send https://api.openai.com and https://chatgpt.com requests to it, so the
// official-route check passes while nothing leaves the machine.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
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
		srv.reply(() => ({ sse: responseText("done"), headers: { "x-request-id": "req_native_1" } }));
		const r = await runOpenAI(version, srv, { config: { webSearch: { enabled: true, contextSize: "high" }, debug: true } });
		assert.equal(r.code, 0, r.stderr);
		// Debug: one metadata line for the changed request; never the key or the prompt.
		const lines = r.stderr.split("\n").filter((l) => l.startsWith("[pi-codex-toolkit] net "));
		assert.equal(lines.length, 1, r.stderr);
		assert.match(lines[0], /^\[pi-codex-toolkit\] net feature=web-search-native provider=openai api=openai-responses model=gpt-4\.1 host=api\.openai\.com duration_ms=\d+ status=200 request_id=req_native_1 blocks=web_search$/);
		assert.doesNotMatch(r.stderr, /sk-test-secret-token|find it/);
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

/** The faux model calls openai_web_search once per query, then echoes the results. */
function searchScript(box, queries) {
	return writeScript(box, `export default [
	{ tools: ${JSON.stringify(queries.map((q, i) => ({ name: "openai_web_search", args: { query: q }, id: `call-${i}` })))} },
	{ text: "done" },
];`);
}

/** A sidecar answer: a search with `n` sources (duplicates and fragments included) and a cited text. */
function answerWithSources(n) {
	const urls = [];
	for (let i = 0; i < n; i++) urls.push(`https://site${i}.test/page#frag${i}`);
	urls.splice(1, 0, "https://site0.test/page#again", "ftp://files.test/x");
	return responseJson([webSearchCallItem("q", urls), messageItem("Rust 9.9 is out.", [{ type: "url_citation", url: "https://site0.test/page#cite", title: "Site Zero", start_index: 0, end_index: 4 }])]);
}

const SIDECAR_CONFIG = { webSearch: { enabled: true, sidecarModel: { provider: "openai", model: "gpt-4.1", thinkingLevel: "auto" } }, debug: true };

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] sidecar (API key): one POST with only the query; answer with de-duplicated, capped sources`, async () => {
		const srv = await server();
		srv.reply(() => ({ json: answerWithSources(25), headers: { "x-request-id": "req_test_1" } }));
		const box = sandbox();
		writeConfig(box, SIDECAR_CONFIG);
		const r = await runJson({ version, box, extensions: EXTS, script: searchScript(box, ["latest rust release"]), env: { OPENAI_API_KEY: "sk-test-secret-token", PCT_TEST_FETCH_REDIRECT: srv.url } });
		assert.equal(r.code, 0, r.stderr);
		const end = r.toolEnds.find((e) => e.toolName === "openai_web_search");
		assert.ok(end, JSON.stringify(r.events.map((e) => e.type)));
		assert.equal(end.isError, false, r.text(end));
		const text = r.text(end);
		assert.match(text, /^Rust 9\.9 is out\.\n\nSources:\n- \[Site Zero\]\(https:\/\/site0\.test\/page\)\n- \[https:\/\/site1\.test\/page\]\(https:\/\/site1\.test\/page\)\n/);
		assert.equal(text.split("\n").filter((l) => l.startsWith("- [")).length, 20);
		assert.doesNotMatch(text, /#frag|ftp:/);
		assert.equal(srv.requests.length, 1);
		const req = srv.requests[0];
		assert.equal(req.method, "POST");
		assert.equal(`${req.host}${req.path}`, "api.openai.com/v1/responses");
		assert.equal(req.headers.authorization, "Bearer sk-test-secret-token");
		assert.deepEqual(req.json, {
			model: "gpt-4.1", input: "latest rust release",
			tools: [{ type: "web_search", search_context_size: "medium", external_web_access: true }],
			tool_choice: "required", include: ["web_search_call.action.sources"], store: false,
		});
		// Debug: one metadata line, never the token, the query or the answer.
		const lines = r.stderr.split("\n").filter((l) => l.startsWith("[pi-codex-toolkit] net "));
		assert.deepEqual(lines.length, 1, r.stderr);
		assert.match(lines[0], /feature=web-search-sidecar provider=openai api=openai-responses model=gpt-4\.1 host=api\.openai\.com duration_ms=\d+ status=200 request_id=req_test_1 blocks=web_search_call,text$/);
		assert.doesNotMatch(r.stderr, /sk-test-secret-token|latest rust release|Rust 9\.9/);
	});

	test(`[pi ${version.name}] sidecar errors: HTTP 500, invalid JSON, missing search call, redirect not followed, timeout`, async () => {
		const srv = await server();
		srv.reply((req) => {
			switch (req.json?.input) {
				case "q500": return { status: 500, json: { error: { message: "boom" } } };
				case "qjson": return { text: "<html>not json</html>", headers: { "content-type": "application/json" } };
				case "qnosearch": return { json: responseJson([messageItem("I did not search.")]) };
				case "qredirect": return { redirect: `${srv.url}/elsewhere` };
				case "qhang": return { hang: true };
				default: return { status: 404, json: {} };
			}
		});
		const box = sandbox();
		writeConfig(box, SIDECAR_CONFIG);
		const queries = ["q500", "qjson", "qnosearch", "qredirect", "qhang"];
		const r = await runJson({ version, box, extensions: EXTS, script: searchScript(box, queries), env: { OPENAI_API_KEY: "sk-test", PCT_TEST_FETCH_REDIRECT: srv.url, PCT_TEST_NET_TIMEOUT_MS: "1500" } });
		assert.equal(r.code, 0, r.stderr);
		const byId = Object.fromEntries(r.toolEnds.map((e) => [e.toolCallId, e]));
		const expect = { q500: /^http-error: HTTP 500; /, qjson: /^invalid-json: /, qnosearch: /^missing-search-call: /, qredirect: /^http-error: HTTP 302 \(a redirect: never followed\); /, qhang: /^timeout: no complete answer within 1\.5 s; / };
		queries.forEach((q, i) => {
			const end = byId[`call-${i}`];
			assert.ok(end, `no result for ${q}`);
			assert.equal(end.isError, true, q);
			assert.match(r.text(end), expect[q], q);
		});
		// Each query was sent exactly once (no retry), the redirect target never.
		for (const q of queries) assert.equal(srv.requests.filter((x) => x.json?.input === q).length, 1, q);
		assert.equal(srv.to("/elsewhere").length, 0);
	});
}

/** An answer whose JSON text is exactly `bytes` bytes long (ASCII padding in the answer text). */
function answerOfBytes(bytes) {
	const msg = messageItem("");
	const answer = responseJson([webSearchCallItem("q", ["https://a.test/"]), msg], { id: "resp_fixed" });
	const base = JSON.stringify(answer).length;
	msg.content[0].text = "a".repeat(bytes - base);
	const body = JSON.stringify(answer);
	assert.equal(body.length, bytes);
	return body;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] sidecar: the body is read with a cap (at it, one byte over, streamed past it); URLs stay inside their Markdown link`, async () => {
		const CAP = 64 * 1024;
		const evil = "https://x.example/)[click](javascript:alert(1)";
		const srv = await server();
		srv.reply((req) => {
			switch (req.json?.input) {
				case "qat": return { text: answerOfBytes(CAP), headers: { "content-type": "application/json" } };
				case "qover": return { text: answerOfBytes(CAP + 1), headers: { "content-type": "application/json" } };
				// no content-length: the cap is found while streaming (1 MiB in 16 KiB chunks)
				case "qstream": return { chunks: Array.from({ length: 64 }, () => " ".repeat(16 * 1024)) };
				case "qevil": return { json: responseJson([webSearchCallItem("q", [evil]), messageItem("An answer.")]) };
				default: return { status: 404, json: {} };
			}
		});
		const box = sandbox();
		writeConfig(box, SIDECAR_CONFIG);
		const queries = ["qat", "qover", "qstream", "qevil"];
		const r = await runJson({ version, box, extensions: EXTS, script: searchScript(box, queries), env: { OPENAI_API_KEY: "sk-test", PCT_TEST_FETCH_REDIRECT: srv.url, PCT_TEST_NET_BODY_CAP_BYTES: String(CAP) } });
		assert.equal(r.code, 0, r.stderr);
		const byId = Object.fromEntries(r.toolEnds.map((e) => [e.toolCallId, e]));
		const at = byId["call-0"];
		assert.equal(at.isError, false, r.text(at));
		// the answer is bounded like other tool output: 50 KiB and a note
		assert.match(r.text(at), /\n\[answer cut at 51200 of \d+ bytes\]\n\nSources:\n- \[https:\/\/a\.test\/\]\(https:\/\/a\.test\/\)$/);
		for (const id of ["call-1", "call-2"]) {
			assert.equal(byId[id].isError, true, id);
			assert.match(r.text(byId[id]), new RegExp(`^response-too-large: the body is larger than the ${CAP}-byte cap; `), id);
		}
		const ev = byId["call-3"];
		assert.equal(ev.isError, false, r.text(ev));
		const row = r.text(ev).split("\n").find((l) => l.startsWith("- ["));
		assert.equal(row, "- [https://x.example/\\)\\[click\\]\\(javascript:alert\\(1\\)](https://x.example/%29%5Bclick%5D%28javascript:alert%281%29)");
		const lines = r.stderr.split("\n").filter((l) => l.startsWith("[pi-codex-toolkit] net "));
		assert.equal(lines.filter((l) => l.endsWith(" error=response-too-large")).length, 2, r.stderr);
	});
}

/** A ChatGPT OAuth login in auth.json (a JWT whose claim carries chatgpt_account_id) and SSE transport. */
export function codexLogin(box, accountId = "acct_test_1") {
	const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
	const jwt = `${b64({ alg: "none", typ: "JWT" })}.${b64({ "https://api.openai.com/auth": { chatgpt_account_id: accountId }, exp: Math.floor(Date.now() / 1000) + 3600 })}.sig`;
	writeFileSync(join(box.agentDir, "auth.json"), JSON.stringify({ "openai-codex": { type: "oauth", access: jwt, refresh: "refresh-test", expires: Date.now() + 3600_000, accountId } }));
	writeFileSync(join(box.agentDir, "settings.json"), JSON.stringify({ transport: "sse" }));
	return jwt;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] sidecar (Codex OAuth): Pi's provider stream, SSE aggregated, only the query sent`, async () => {
		const srv = await server();
		srv.reply(() => ({ sse: responseEvents([webSearchCallItem("q", ["https://a.test/x#y", "https://b.test/"]), messageItem("Codex says hi.", [{ type: "url_citation", url: "https://b.test/", title: "B", start_index: 0, end_index: 1 }])]) }));
		const box = sandbox();
		const jwt = codexLogin(box);
		writeConfig(box, { webSearch: { enabled: true, sidecarModel: { provider: "openai-codex", model: "gpt-5.6-luna", thinkingLevel: "auto" } } });
		const r = await runJson({ version, box, extensions: EXTS, script: searchScript(box, ["codex query"]), env: { PCT_TEST_FETCH_REDIRECT: srv.url } });
		assert.equal(r.code, 0, r.stderr);
		const end = r.toolEnds.find((e) => e.toolName === "openai_web_search");
		assert.equal(end?.isError, false, end && r.text(end));
		assert.equal(r.text(end), "Codex says hi.\n\nSources:\n- [https://a.test/x](https://a.test/x)\n- [B](https://b.test/)");
		assert.equal(srv.requests.length, 1);
		const req = srv.requests[0];
		assert.equal(`${req.host}${req.path}`, "chatgpt.com/backend-api/codex/responses");
		assert.equal(req.headers["chatgpt-account-id"], "acct_test_1");
		assert.equal(req.headers.authorization, `Bearer ${jwt}`);
		assert.equal(req.json.tool_choice, "required");
		assert.deepEqual(req.json.tools, [{ type: "web_search", search_context_size: "medium", external_web_access: true }]);
		assert.ok(req.json.include.includes("web_search_call.action.sources"));
		// Effort auto: no reasoning override (the service default), never the main model's level.
		assert.equal(req.json.reasoning, undefined);
		// Only the query: one user input, no conversation.
		const inputs = JSON.stringify(req.json.input);
		assert.match(inputs, /codex query/);
		assert.doesNotMatch(inputs, /find it|go/);
	});
}

/** `/pct status` lines of one feature block. */
function block(text, title) {
	const start = text.indexOf(`\n${title}\n`);
	assert.ok(start >= 0, text);
	const end = text.indexOf("\n\n", start + 1);
	return text.slice(start + 1, end < 0 ? undefined : end);
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] /pct status: native on the official route, unofficial-endpoint via models.json, credential-mismatch, off in config`, async () => {
		// Official openai route with an API key: native, image via api-key.
		let box = sandbox();
		writeConfig(box, { webSearch: { enabled: true }, imageGeneration: { enabled: true } });
		let pi = new RpcPi({ version, box, provider: "openai", model: "gpt-4.1", extensions: EXTS, env: { OPENAI_API_KEY: "sk-test" } });
		try {
			const text = (await pi.prompt("/pct status all")).notifications.join("\n");
			const ws = block(text, "Web Search");
			assert.match(ws, /^  configured: on\n  effective: active\n  requested backend: auto\n  effective backend: native\n  web search executor: openai\/gpt-4\.1\n  web search executor effort: auto\n/m);
			assert.match(block(text, "Image Generation"), /\n  backend: api-key$/);
			assert.match(block(text, "Remote Compaction"), /\n  reason: Turned off: turn it on with \/pct config \(remoteCompaction\.enabled\)\. \[off-in-config\]$/m);
			assert.doesNotMatch(text, /not built/);
		} finally {
			await pi.close();
		}
		// A models.json baseUrl to loopback: unofficial-endpoint for both features.
		box = sandbox();
		writeConfig(box, { webSearch: { enabled: true }, imageGeneration: { enabled: true } });
		writeFileSync(join(box.agentDir, "models.json"), JSON.stringify({ providers: { openai: { baseUrl: "http://127.0.0.1:9/v1" } } }));
		pi = new RpcPi({ version, box, provider: "openai", model: "gpt-4.1", extensions: EXTS, env: { OPENAI_API_KEY: "sk-test" } });
		try {
			const text = (await pi.prompt("/pct status all")).notifications.join("\n");
			assert.match(block(text, "Web Search"), /\n  effective: unavailable\n  reason: The current model uses a custom base URL: .* \[unofficial-endpoint\]\n[\s\S]*effective backend: unavailable/);
			assert.match(block(text, "Image Generation"), /\n  effective: unavailable\n  reason: .* \[unofficial-endpoint\]\n/);
		} finally {
			await pi.close();
		}
		// An API key stored for openai-codex: credential-mismatch (Codex needs the ChatGPT login).
		box = sandbox();
		writeConfig(box, { webSearch: { enabled: true, backend: "native" } });
		writeFileSync(join(box.agentDir, "models.json"), JSON.stringify({ providers: { "openai-codex": { apiKey: "sk-wrong-kind" } } }));
		pi = new RpcPi({ version, box, provider: "openai-codex", model: "gpt-5.6-luna", extensions: EXTS });
		try {
			const text = (await pi.prompt("/pct status all")).notifications.join("\n");
			assert.match(block(text, "Web Search"), /\n  effective: unavailable\n  reason: The credential does not fit the provider: .* \[credential-mismatch\]\n/);
		} finally {
			await pi.close();
		}
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] /pct config executor picker: official routes with a matching credential, within the scoped models`, async () => {
		const box = sandbox();
		const answers = [/^Web Search executor:/, "openai/gpt-4.1", /^Web Search executor effort:/, "auto", "Cancel"];
		const ui = (req) => {
			if (req.method !== "select") return { cancelled: true };
			const want = answers.shift();
			const hit = req.options.find((o) => (want instanceof RegExp ? want.test(o) : o === want));
			return hit === undefined ? { cancelled: true } : { value: hit };
		};
		const pi = new RpcPi({ version, box, ui, provider: "openai", model: "gpt-4.1", extensions: EXTS, env: { OPENAI_API_KEY: "sk-test" }, args: ["--models", "openai/gpt-4.1,openai/gpt-4o,openai-codex/gpt-5.6-luna"] });
		try {
			await pi.prompt("/pct config");
			const titles = pi.uiRequests.map((r) => r.title);
			const picker = pi.uiRequests.find((r) => r.title === "Web Search executor");
			assert.ok(picker, JSON.stringify(titles));
			// The codex model has no ChatGPT login: not offered; models outside the scope are not offered.
			assert.deepEqual(picker.options, ["none", "openai/gpt-4.1", "openai/gpt-4o"]);
			const effort = pi.uiRequests.find((r) => r.title === "Web Search executor effort");
			assert.deepEqual(effort.options, ["auto"]);
		} finally {
			await pi.close();
		}
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] Codex OAuth route: native injection in the model request; sidecar errors (HTTP 500, missing search call, incomplete stream, timeout)`, async () => {
		// Native on the Codex route: the main model is openai-codex with a ChatGPT login.
		const srv = await server();
		srv.reply(() => ({ sse: responseText("done") }));
		let box = sandbox();
		codexLogin(box);
		writeConfig(box, { webSearch: { enabled: true, mode: "cached" } });
		let r = await runJson({ version, box, extensions: EXTS, provider: "openai-codex", model: "gpt-5.6-luna", prompt: "hello", env: { PCT_TEST_FETCH_REDIRECT: srv.url } });
		assert.equal(r.code, 0, r.stderr);
		const body = srv.to("/backend-api/codex/responses").at(-1).json;
		assert.deepEqual(body.tools.filter((t) => t.type === "web_search"), [{ type: "web_search", search_context_size: "medium", external_web_access: false }]);
		assert.ok(body.include.includes("web_search_call.action.sources"));

		// Sidecar errors through Pi's provider stream.
		const errs = await server();
		errs.reply((req) => {
			const q = JSON.stringify(req.json?.input ?? "");
			if (q.includes("c500")) return { status: 500, json: { error: { message: "boom" } } };
			if (q.includes("cnosearch")) return { sse: responseEvents([messageItem("no search")]) };
			if (q.includes("ccut")) return { sse: responseEvents([webSearchCallItem("q", [])]).slice(0, 3) };
			if (q.includes("chang")) return { hang: true };
			return { status: 404, json: {} };
		});
		box = sandbox();
		codexLogin(box);
		writeConfig(box, { webSearch: { enabled: true, backend: "sidecar", sidecarModel: { provider: "openai-codex", model: "gpt-5.6-luna", thinkingLevel: "auto" } } });
		const queries = ["c500", "cnosearch", "ccut", "chang"];
		r = await runJson({ version, box, extensions: EXTS, script: searchScript(box, queries), env: { PCT_TEST_FETCH_REDIRECT: errs.url, PCT_TEST_NET_TIMEOUT_MS: "1500" } });
		assert.equal(r.code, 0, r.stderr);
		const byId = Object.fromEntries(r.toolEnds.map((e) => [e.toolCallId, e]));
		const expect = { c500: /^http-error: HTTP 500; /, cnosearch: /^missing-search-call: /, ccut: /^incomplete-response: /, chang: /^timeout: / };
		queries.forEach((q, i) => {
			const end = byId[`call-${i}`];
			assert.ok(end, q);
			assert.equal(end.isError, true, q);
			assert.match(r.text(end), expect[q], `${q}: ${r.text(end)}`);
		});
		for (const q of queries) assert.equal(errs.requests.filter((x) => JSON.stringify(x.json?.input ?? "").includes(q)).length, 1, q);
	});
}
