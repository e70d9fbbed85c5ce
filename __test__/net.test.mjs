// Network glue against the addon (no Pi): the native payload transform's copy-on-write and pass-through, route
// inspection, the sidecar and image request checks, the exclusive PNG write, the debug line, postJson's redirect,
// abort and timeout handling against a loopback server. End-to-end coverage through the real Pi is in
// __test__/e2e/websearch.e2e.test.mjs and image.e2e.test.mjs.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";
import { PNG_1X1_B64, startOpenAIServer } from "./e2e/helpers/openai-server.mjs";
import { underTimer } from "./helpers/timer.mjs";

process.removeAllListeners("warning");
const { injectWebSearch } = await import("../src/pi/net/websearch.ts");
const { postJson } = await import("../src/pi/net/http.ts");

const servers = [];
const dirs = [];
after(async () => {
	for (const s of servers) await s.close();
	for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test("native transform: copy-on-write, merge, include, tool_choice only when absent", () => {
	const messages = [{ role: "user", content: "hi" }];
	const payload = { model: "gpt-4.1", input: messages, tools: [{ type: "function", name: "read" }], include: ["reasoning.encrypted_content"] };
	const frozen = JSON.stringify(payload);
	const out = injectWebSearch(payload, "cached", "low");
	assert.equal(JSON.stringify(payload), frozen, "the original payload is unchanged");
	assert.equal(out.input, messages, "messages are shared, not copied");
	assert.deepEqual(out.tools, [{ type: "function", name: "read" }, { type: "web_search", search_context_size: "low", external_web_access: false }]);
	assert.deepEqual(out.include, ["reasoning.encrypted_content", "web_search_call.action.sources"]);
	assert.equal(out.tool_choice, "auto");
	// An existing entry is merged, its explicit fields win; an explicit tool_choice stays.
	const merged = injectWebSearch({ tools: [{ type: "web_search", search_context_size: "high" }], tool_choice: "required" }, "live", "low");
	assert.deepEqual(merged.tools, [{ type: "web_search", search_context_size: "high", external_web_access: true }]);
	assert.equal(merged.tool_choice, "required");
	// Applying twice changes nothing the second time.
	assert.equal(injectWebSearch(out, "cached", "low"), undefined);
});

test("native transform: odd payloads pass through unchanged", () => {
	for (const p of [null, "text", 3, [1, 2], { tools: "x" }, { tools: [], include: "x" }, { tools: [], include: null }, { tools: {} }]) {
		assert.equal(injectWebSearch(p, "live", "medium"), undefined, JSON.stringify(p));
	}
	// Absent tools/include are created.
	assert.deepEqual(injectWebSearch({ model: "m" }, "live", "medium"), {
		model: "m", tools: [{ type: "web_search", search_context_size: "medium", external_web_access: true }],
		include: ["web_search_call.action.sources"], tool_choice: "auto",
	});
});

test("route inspection: every reason, fixed endpoints", () => {
	const ok = native.netRouteInspect({ provider: "openai", id: "gpt-4.1", api: "openai-responses", baseUrl: "https://api.openai.com/v1", auth: "api-key" });
	assert.equal(ok.ok, true);
	assert.equal(ok.responsesUrl, "https://api.openai.com/v1/responses");
	assert.equal(ok.imagesUrl, "https://api.openai.com/v1/images/generations");
	const cases = [
		[{}, "current-model-missing"],
		[{ provider: "anthropic", id: "c", api: "x" }, "unsupported-provider"],
		[{ provider: "openai", id: "m", api: "openai-completions" }, "unsupported-api"],
		[{ provider: "openai", id: "m", api: "openai-responses", baseUrl: "http://127.0.0.1:9/v1", auth: "api-key" }, "unofficial-endpoint"],
		[{ provider: "openai", id: "m", api: "openai-responses", baseUrl: "https://api.openai.com/v1", auth: "none" }, "missing-openai-auth"],
		[{ provider: "openai-codex", id: "m", api: "openai-codex-responses", baseUrl: "https://chatgpt.com/backend-api", auth: "api-key" }, "credential-mismatch"],
	];
	for (const [facts, reason] of cases) {
		const r = native.netRouteInspect(facts);
		assert.equal(r.ok, false);
		assert.equal(r.reason, reason);
		assert.match(r.message, new RegExp(`^${reason}: .+; .+`));
	}
});

test("sidecar and image request checks; timeout seam; failure messages", () => {
	const r = native.netSidecarRequest(JSON.stringify({ query: "q" }), "gpt-4.1", "live", "high");
	assert.equal(r.ok, true);
	assert.deepEqual(JSON.parse(r.body).tools, [{ type: "web_search", search_context_size: "high", external_web_access: true }]);
	for (const bad of [{}, { query: "" }, { query: "q", extra: 1 }]) {
		const e = native.netSidecarRequest(JSON.stringify(bad), "m", "live", "low");
		assert.equal(e.error.code, "invalid-arguments", JSON.stringify(bad));
	}
	assert.equal(native.netImageRequest(JSON.stringify({ prompt: "p", quality: "ultra" })).error.code, "invalid-arguments");
	assert.equal(native.netTimeoutMs("sidecar"), 30000);
	assert.equal(native.netTimeoutMs("image"), 300000);
	assert.equal(native.netTimeoutMs("compaction"), 180000);
	assert.match(native.netFailure("timeout", "x").message, /^timeout: x; /);
	assert.throws(() => native.netFailure("bogus", ""), (e) => e.code === "invalid-input");
});

test("image save: PNG only, exclusive new files under the agent dir", async () => {
	const agent = mkdtempSync(join(tmpdir(), "pct-net-"));
	dirs.push(agent);
	const a = await native.netImageSave(JSON.stringify({ data: [{ b64_json: PNG_1X1_B64 }] }), agent);
	const b = await native.netImageSave(JSON.stringify({ data: [{ b64_json: PNG_1X1_B64 }] }), agent);
	assert.ok(a.ok && b.ok);
	assert.notEqual(a.path, b.path);
	assert.deepEqual(readFileSync(a.path), Buffer.from(PNG_1X1_B64, "base64"));
	const bad = await native.netImageSave(JSON.stringify({ data: [{ b64_json: Buffer.from("<svg/>").toString("base64") }] }), agent);
	assert.equal(bad.error.code, "invalid-image");
	assert.equal(readdirSync(join(agent, "artifacts", "pi-codex-toolkit")).length, 2);
});

test("debug line: metadata only", () => {
	const line = native.netDebugLine({ feature: "image-generation", provider: "openai", api: "openai-responses", model: "gpt-image-2", endpoint: "https://api.openai.com/v1/images/generations", durationMs: 5, status: 200, requestId: "Bearer sk-secret", blocks: ["image"] });
	assert.equal(line, "[pi-codex-toolkit] net feature=image-generation provider=openai api=openai-responses model=gpt-image-2 host=api.openai.com duration_ms=5 status=200 request_id=? blocks=image");
});

test("postJson: redirects are not followed, abort and timeout have their codes, nothing is retried", async () => {
	const srv = await startOpenAIServer();
	servers.push(srv);
	srv.reply((req) => (req.path === "/redirect" ? { redirect: `${srv.url}/target` } : req.path === "/hang" ? { hang: true } : { json: { ok: 1 } }));
	const dbg = { enabled: false, feature: "f", provider: "p", api: "a", model: "m" };
	const r = await postJson(`${srv.url}/redirect`, {}, "{}", "sidecar", undefined, dbg);
	assert.equal(r.ok, false);
	assert.equal(r.error.code, "http-error");
	assert.match(r.error.message, /HTTP 302 \(a redirect: never followed\)/);
	assert.equal(srv.to("/target").length, 0);
	// The feature's timeout comes from Rust; the test build's seam shortens it (docs/release.md "Test seams").
	process.env.PCT_TEST_NET_TIMEOUT_MS = "200";
	let t;
	try {
		t = await postJson(`${srv.url}/hang`, {}, "{}", "sidecar", undefined, dbg);
	} finally {
		delete process.env.PCT_TEST_NET_TIMEOUT_MS;
	}
	assert.equal(t.error.code, "timeout");
	const ctl = new AbortController();
	const pending = postJson(`${srv.url}/hang`, {}, "{}", "sidecar", ctl.signal, dbg);
	// Abort once the request is in flight (the server holds it), not after a guessed delay.
	for (const end = Date.now() + 20000; srv.to("/hang").length < 2 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
	assert.equal(srv.to("/hang").length, 2, "the second request reached the server");
	ctl.abort();
	assert.equal((await pending).error.code, "aborted");
	const pre = new AbortController();
	pre.abort();
	assert.equal((await postJson(`${srv.url}/ok`, {}, "{}", "sidecar", pre.signal, dbg)).error.code, "aborted");
	assert.equal(srv.to("/ok").length, 0);
	assert.equal(srv.to("/hang").length, 2);
	const ok = await postJson(`${srv.url}/ok`, {}, "{}", "sidecar", undefined, dbg);
	assert.deepEqual(JSON.parse(ok.text), { ok: 1 });
});

test("prepareRequest checks the route again with what Pi resolved for this very request (base URL, credential kind)", async () => {
	const { prepareRequest } = await import("../src/pi/net/route.ts");
	const model = { provider: "openai", id: "gpt-5", api: "openai-responses", baseUrl: "https://api.openai.com/v1" };
	const registry = (auth, oauth = false) => ({
		hasConfiguredAuth: () => true,
		isUsingOAuth: () => oauth,
		getApiKeyAndHeaders: async () => auth,
	});
	// The model's static route is official, so the sync-time check passed; Pi's answer for the request decides.
	const ok = await prepareRequest(registry({ ok: true, apiKey: "sk-test", headers: { "x-extra": "1" } }), model);
	assert.equal(ok.route?.kind, "openai", JSON.stringify(ok));
	assert.equal(ok.route.responsesUrl, "https://api.openai.com/v1/responses");
	assert.deepEqual(ok.headers, { "x-extra": "1" });
	// A base URL Pi resolves at request time (a provider override, a proxy) is refused before anything is sent.
	for (const baseUrl of ["https://proxy.example/v1", "http://api.openai.com/v1", "https://api.openai.com.evil.example/v1"]) {
		const r = await prepareRequest(registry({ ok: true, apiKey: "sk-test", baseUrl }), model);
		assert.equal(r.code, "unofficial-endpoint", `${baseUrl}: ${JSON.stringify(r)}`);
		assert.equal(r.route, undefined);
		assert.equal(r.apiKey, undefined, "no credential leaves a refused preparation");
	}
	// The credential kind is read again: an OAuth credential on the API-key route is a mismatch.
	const mism = await prepareRequest(registry({ ok: true, apiKey: "tok" }, true), model);
	assert.equal(mism.code, "credential-mismatch", JSON.stringify(mism));
	// No credential at all.
	assert.equal((await prepareRequest(registry({ ok: true }), model)).code, "missing-openai-auth");
});

test("image save of a 48 MiB PNG runs off Node's main thread: a 2 ms timer keeps ticking", async (t) => {
	const agent = mkdtempSync(join(tmpdir(), "pct-net-"));
	dirs.push(agent);
	// The largest image accepted: 48 MiB exactly (PNG signature, then filler).
	const png = Buffer.alloc(48 * 1024 * 1024, 7);
	Buffer.from(PNG_1X1_B64, "base64").copy(png, 0, 0, 8);
	const body = JSON.stringify({ data: [{ b64_json: png.toString("base64") }] });
	const { result: saved, ms, ticks, maxGap } = await underTimer(() => native.netImageSave(body, agent));
	assert.equal(saved.ok, true, saved.error?.message);
	assert.equal(statSync(saved.path).size, png.length);
	// A synchronous export lets no timer run before it answers: the loop turned while this one wrote. (The residual
	// stall, napi's copy of the 64 MiB base64 text in and out, is the diagnostic below, not a pass/fail bound.)
	assert.ok(ticks >= 1, `the event loop never turned while netImageSave ran (${ms.toFixed(1)} ms)`);
	t.diagnostic(`netImageSave 48 MiB: ${ms.toFixed(1)} ms, max timer gap ${maxGap.toFixed(1)} ms, ${ticks} ticks`);
});

test("postJson: a connection that breaks or is refused is network-error, with the cause, and is not retried", async () => {
	const { createServer } = await import("node:net");
	let connections = 0;
	const breaker = createServer((sock) => {
		connections++;
		sock.destroy();
	});
	await new Promise((r) => breaker.listen(0, "127.0.0.1", r));
	const port = breaker.address().port;
	const dbg = { enabled: false, feature: "f", provider: "p", api: "a", model: "m" };
	try {
		const r = await postJson(`http://127.0.0.1:${port}/v1/responses`, {}, "{}", "sidecar", undefined, dbg);
		assert.equal(r.ok, false);
		assert.equal(r.error.code, "network-error");
		assert.match(r.error.message, /^network-error: .*(other side closed|socket|ECONNRESET)/i);
		assert.match(r.error.message, /check the network connection or proxy settings, then try again \(it was not retried\)/);
		assert.equal(connections, 1, "one connection: nothing was retried");
	} finally {
		await new Promise((r) => breaker.close(r));
	}
	// The port is closed now: the connection is refused.
	const refused = await postJson(`http://127.0.0.1:${port}/v1/responses`, {}, "{}", "sidecar", undefined, dbg);
	assert.equal(refused.error.code, "network-error");
	assert.match(refused.error.message, /ECONNREFUSED/);
});

test("prepareRequest: without Pi's model registry the route is provider-unavailable, and nothing is sent", async () => {
	const { prepareRequest } = await import("../src/pi/net/route.ts");
	const model = { provider: "openai", id: "gpt-5.5", api: "openai-responses", baseUrl: "https://api.openai.com/v1" };
	for (const registry of [undefined, {}]) {
		const r = await prepareRequest(registry, model);
		assert.equal(r.code, "provider-unavailable");
		assert.match(r.message, /^provider-unavailable: Pi's model registry is not available in this context; retry from a session with a model\.$/);
	}
	const f = native.netFailure("provider-unavailable", "no provider stream for custom");
	assert.equal(f.code, "provider-unavailable");
	assert.match(f.message, /^provider-unavailable: no provider stream for custom; Pi has no stream for the executor's provider; pick another executor with \/pct config/);
});

test("the Codex executor's effort menu: auto plus exactly the thinking levels Pi reports for that model; auto only elsewhere", async () => {
	const { executorEfforts } = await import("../src/pi/net/facts.ts");
	const models = {
		"openai-codex/gpt-5.6-luna": { provider: "openai-codex", id: "gpt-5.6-luna", api: "openai-codex-responses", reasoning: true, thinkingLevelMap: { minimal: null, xhigh: "xhigh" } },
		"openai-codex/gpt-5.4-mini": { provider: "openai-codex", id: "gpt-5.4-mini", api: "openai-codex-responses", reasoning: true, thinkingLevelMap: {} },
		"openai-codex/plain": { provider: "openai-codex", id: "plain", api: "openai-codex-responses", reasoning: false },
		"openai/gpt-5.5": { provider: "openai", id: "gpt-5.5", api: "openai-responses", reasoning: true, thinkingLevelMap: { xhigh: "xhigh" } },
	};
	const registry = { find: (provider, id) => models[`${provider}/${id}`] };
	// xhigh only where the model maps it, minimal gone where it maps it to null; never a second auto.
	assert.deepEqual(executorEfforts(registry, "openai-codex", "gpt-5.6-luna"), ["auto", "off", "low", "medium", "high", "xhigh"]);
	assert.deepEqual(executorEfforts(registry, "openai-codex", "gpt-5.4-mini"), ["auto", "off", "minimal", "low", "medium", "high"]);
	assert.deepEqual(executorEfforts(registry, "openai-codex", "plain"), ["auto", "off"]);
	// The openai API-key route takes auto only (as the config schema enforces); an unknown model or no registry too.
	assert.deepEqual(executorEfforts(registry, "openai", "gpt-5.5"), ["auto"]);
	assert.deepEqual(executorEfforts(registry, "openai-codex", "missing"), ["auto"]);
	assert.deepEqual(executorEfforts(undefined, "openai-codex", "gpt-5.6-luna"), ["auto"]);
});
