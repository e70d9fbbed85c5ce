// Web Search (sidecar) and Image Generation demo (docs/net.md), offline: a loopback OpenAI server from the e2e
// helpers answers, and the test-only fetch-redirect extension sends the https://api.openai.com requests there, so
// the official-route check passes while nothing leaves the machine. The scripted model searches once and generates
// one image; logged: what the model saw and what the "OpenAI" server received.
import { join } from "node:path";
import { messageItem, PNG_1X1_B64, responseJson, startOpenAIServer, webSearchCallItem } from "../__test__/e2e/helpers/openai-server.mjs";

export default async function ({ version, helpers, log }) {
	const srv = await startOpenAIServer();
	try {
		srv.reply((req) =>
			req.path.endsWith("/images/generations")
				? { json: { created: 1, data: [{ b64_json: PNG_1X1_B64 }] } }
				: {
						json: responseJson([
							webSearchCallItem("napi-rs latest", ["https://napi.rs/docs#intro", "https://github.com/napi-rs/napi-rs/releases"]),
							messageItem("napi-rs 3 is the current major line.", [{ type: "url_citation", url: "https://napi.rs/docs#v3", title: "napi-rs docs", start_index: 0, end_index: 7 }]),
						]),
					},
		);
		const box = helpers.sandbox("pct-demo-net-");
		helpers.writeConfig(box, {
			webSearch: { enabled: true, sidecarModel: { provider: "openai", model: "gpt-4.1", thinkingLevel: "auto" } },
			imageGeneration: { enabled: true },
		});
		const script = helpers.writeScript(
			box,
			`export default [
	{ tools: [{ name: "openai_web_search", args: { query: "napi-rs latest version" } }] },
	{ tools: [{ name: "openai_generate_image", args: { prompt: "a tiny red square", size: "1024x1024", quality: "low" } }] },
	{ text: "done" },
];`,
		);
		const r = await helpers.runJson({
			version,
			box,
			extensions: [join(helpers.ROOT, "__test__/fixtures/fetch-redirect-ext.ts"), helpers.ROOT],
			script,
			prompt: "look it up and draw it",
			env: { OPENAI_API_KEY: "sk-demo-key", PCT_TEST_FETCH_REDIRECT: srv.url },
		});
		for (const end of r.toolEnds) {
			const args = r.events.find((e) => e.type === "tool_execution_start" && e.toolCallId === end.toolCallId)?.args;
			log(`\n→ ${end.toolName} ${JSON.stringify(args)}${end.isError ? "  (error)" : ""}`);
			log(helpers.toolText(end).replace(/\n$/, "").replace(/^/gm, "  │ "));
			const images = (end.result?.content ?? []).filter((c) => c.type === "image");
			if (images.length) log(`  │ + ${images.length} image block(s): ${images.map((i) => `${i.mimeType}, ${i.data.length} base64 chars`).join("; ")}`);
		}
		if (r.toolEnds.length === 0) log(r.stderr);
		log("\nWhat the loopback \"OpenAI\" server received (the key is never logged; only the query and the prompt left):");
		for (const q of srv.requests) log(`  ${q.method} https://${q.host}${q.path}  ${JSON.stringify(q.json).slice(0, 160)}`);
	} finally {
		await srv.close();
	}
}
