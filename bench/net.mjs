// Network features: (1) the native Web Search payload transform (`injectWebSearch`: head to Rust, copy-on-write
// shallow copy) on a 200-message Responses payload, beside a JSON deep-copy of the same payload (what a naive
// copy-then-edit transform costs); goal < 0.2 ms per request. (2) The sidecar's own overhead over the raw HTTP round
// trip to a loopback server: request building + validation in Rust, `postJson` (fetch read at call time, deadline,
// manual redirects) and the answer parsing/source extraction in Rust, minus a bare `fetch` POST + `text()` of the same
// body in the same run; goal < 1 ms per call.
// Usage: node bench/net.mjs [--quick]   (Node >= 22.6 for the .ts glue; build the addon with --release first)
process.removeAllListeners("warning");
const { injectWebSearch } = await import("../src/pi/net/websearch.ts");
const { postJson } = await import("../src/pi/net/http.ts");
const { native } = await import("../src/pi/native.ts");
const { startOpenAIServer, responseJson, webSearchCallItem, messageItem } = await import("../__test__/e2e/helpers/openai-server.mjs");

const quick = process.argv.includes("--quick");

// ---- (1) native transform ----
const tools = Array.from({ length: 24 }, (_, i) => ({
	type: "function",
	name: `tool_${i}`,
	description: `Tool number ${i}: `.repeat(8),
	parameters: { type: "object", properties: { a: { type: "string" }, b: { type: "number" }, c: { type: "array", items: { type: "string" } } }, required: ["a"] },
	strict: false,
}));
const input = [];
for (let i = 0; i < 200; i++) {
	if (i % 4 === 1) input.push({ type: "function_call", call_id: `call_${i}`, name: "tool_1", arguments: JSON.stringify({ a: "x".repeat(80), b: i }) });
	else if (i % 4 === 2) input.push({ type: "function_call_output", call_id: `call_${i - 1}`, output: "line of tool output\n".repeat(20) });
	else input.push({ role: i % 2 ? "assistant" : "user", content: [{ type: i % 2 ? "output_text" : "input_text", text: "Some conversation text. ".repeat(25) }] });
}
const payload = { model: "gpt-4.1", input, tools, include: ["reasoning.encrypted_content"], stream: true, store: false, prompt_cache_key: "abc" };

function perOp(fn, n) {
	for (let i = 0; i < Math.min(200, n); i++) fn(); // warm-up
	const t = performance.now();
	for (let i = 0; i < n; i++) fn();
	return (performance.now() - t) / n;
}

const N1 = quick ? 500 : 5000;
let sink = 0;
const transform = perOp(() => {
	const out = injectWebSearch(payload, "live", "medium");
	sink += out.tools.length;
}, N1);
const deepCopy = perOp(() => {
	const out = JSON.parse(JSON.stringify(payload));
	sink += out.tools.length;
}, N1);
// The transform must not have touched the original (copy-on-write).
if (payload.tools.length !== 24 || payload.include.length !== 1 || "tool_choice" in payload) throw new Error("payload mutated");
console.log(`native transform, 200-message payload (${(JSON.stringify(payload).length / 1024).toFixed(0)} KiB):`);
console.log(`  injectWebSearch      ${(transform * 1000).toFixed(1)} µs/request`);
console.log(`  JSON deep copy       ${(deepCopy * 1000).toFixed(1)} µs/request   (baseline)`);
console.log(`  ratio                ${(transform / deepCopy).toFixed(3)}x of the baseline; goal < 200 µs: ${transform < 0.2 ? "met" : "NOT met"}`);

// ---- (2) sidecar overhead ----
const server = await startOpenAIServer();
const sources = Array.from({ length: 25 }, (_, i) => `https://site${i}.test/page#f${i}`);
const answer = responseJson([webSearchCallItem("q", sources), messageItem("An answer with some text. ".repeat(20), [{ type: "url_citation", url: "https://site0.test/page", title: "Zero", start_index: 0, end_index: 2 }])]);
server.reply(() => ({ json: answer }));
const url = `${server.url}/v1/responses`;
const debug = { enabled: false, feature: "web-search-sidecar", provider: "openai", api: "openai-responses", model: "gpt-4.1" };
const headers = { authorization: "Bearer sk-bench" };

async function raw() {
	const body = JSON.stringify({ model: "gpt-4.1", input: "bench query", tools: [{ type: "web_search" }], tool_choice: "required", include: ["web_search_call.action.sources"], store: false });
	const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
	return (await res.text()).length;
}
async function sidecar() {
	const req = native.netSidecarRequest(JSON.stringify({ query: "bench query" }), "gpt-4.1", "live", "medium");
	const r = await postJson(url, headers, req.body, native.netTimeoutMs("sidecar"), undefined, debug);
	if (!r.ok) throw new Error(r.error.message);
	const a = native.netSidecarParse("json", r.text);
	if (!a.ok || a.sources.length !== 20) throw new Error("bad parse");
	return a.text.length;
}
const N2 = quick ? 200 : 2000;
for (let i = 0; i < 100; i++) {
	await raw();
	await sidecar();
}
// Interleaved, so load changes on the shared machine hit both sides alike.
let tRaw = 0;
let tSide = 0;
for (let i = 0; i < N2; i++) {
	let t = performance.now();
	sink += await raw();
	tRaw += performance.now() - t;
	t = performance.now();
	sink += await sidecar();
	tSide += performance.now() - t;
}
await server.close();
const rawMs = tRaw / N2;
const sideMs = tSide / N2;
console.log(`sidecar call over the loopback round trip (${N2} calls each, interleaved):`);
console.log(`  raw fetch POST + text  ${(rawMs * 1000).toFixed(0)} µs/call   (baseline)`);
console.log(`  sidecar path           ${(sideMs * 1000).toFixed(0)} µs/call`);
console.log(`  overhead               ${((sideMs - rawMs) * 1000).toFixed(0)} µs/call (${(sideMs / rawMs).toFixed(2)}x); goal < 1000 µs: ${sideMs - rawMs < 1 ? "met" : "NOT met"}`);
if (sink < 0) console.log(sink);
