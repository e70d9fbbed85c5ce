// A loopback stand-in for api.openai.com and chatgpt.com, for offline end-to-end tests (docs/net.md §Testing).
// It records every request (method, original host, path, headers, body — zstd bodies decompressed, JSON parsed) and
// answers from a script: JSON, SSE event lists, raw text, a redirect, or a request that never answers (timeouts).
// Pi reaches it through __test__/fixtures/fetch-redirect-ext.ts, which rewrites https://api.openai.com and
// https://chatgpt.com requests to this server (PCT_TEST_FETCH_REDIRECT=<server.url>), so the official-route check
// still passes. Shared with the Remote Compaction suite: keep this API stable.
//
//   const server = await startOpenAIServer();
//   server.reply((req, n) => ({ sse: responseText("hi") }));   // or server.queue(reply1, reply2, ...)
//   ... run Pi with env { PCT_TEST_FETCH_REDIRECT: server.url, OPENAI_API_KEY: "sk-test" } ...
//   server.requests  // [{ method, host, path, headers, text, json }]
//   await server.close();
//
// Reply shapes: { json, status?, headers? } | { sse: [event objects], status? } | { text, status?, headers? }
// | { redirect: url, status? } | { hang: true } (never answers; close() ends it)
// | { chunks: [strings], status?, headers? } (written one by one, chunked: no content-length).
import { createServer } from "node:http";
import { zstdDecompressSync, gunzipSync } from "node:zlib";

/** The header the redirect extension sets to the original host (api.openai.com or chatgpt.com). */
export const ORIGINAL_HOST_HEADER = "x-pct-original-host";

/** Starts the server on an ephemeral loopback port. */
export async function startOpenAIServer() {
	const requests = [];
	const sockets = new Set();
	const queued = [];
	let handler = null;
	const server = createServer((req, res) => {
		const chunks = [];
		req.on("data", (c) => chunks.push(c));
		req.on("end", () => {
			let body = Buffer.concat(chunks);
			const enc = String(req.headers["content-encoding"] ?? "");
			try {
				if (enc === "zstd") body = zstdDecompressSync(body);
				else if (enc === "gzip") body = gunzipSync(body);
			} catch {
				// Keep the raw bytes: the test will see an unparsable body.
			}
			const text = body.toString("utf8");
			let json;
			try { json = JSON.parse(text); } catch { json = undefined; }
			const record = {
				method: req.method,
				host: String(req.headers[ORIGINAL_HOST_HEADER] ?? req.headers.host ?? ""),
				path: req.url,
				headers: { ...req.headers },
				text,
				json,
			};
			requests.push(record);
			const n = requests.length - 1;
			const reply = queued.length > 0 ? queued.shift() : handler ? handler(record, n) : { status: 404, json: { error: { message: `no reply scripted for ${req.method} ${req.url}` } } };
			send(res, reply);
		});
	});
	server.on("connection", (s) => {
		sockets.add(s);
		s.on("close", () => sockets.delete(s));
	});
	await new Promise((r) => server.listen(0, "127.0.0.1", r));
	const { port } = server.address();
	return {
		url: `http://127.0.0.1:${port}`,
		port,
		requests,
		/** Answers every request not covered by `queue` with `fn(request, index)`. */
		reply(fn) { handler = fn; },
		/** Answers the next requests with these replies, in order. */
		queue(...replies) { queued.push(...replies); },
		/** Requests to one path (e.g. "/v1/responses"). */
		to(path) { return requests.filter((r) => r.path === path); },
		async close() {
			for (const s of sockets) s.destroy();
			await new Promise((r) => server.close(() => r()));
		},
	};
}

function send(res, reply) {
	if (!reply || reply.hang) return; // never answers; the socket is destroyed by close()
	const status = reply.status ?? (reply.redirect ? 302 : 200);
	if (reply.redirect) {
		res.writeHead(status, { location: reply.redirect });
		return res.end();
	}
	if (reply.sse) {
		res.writeHead(status, { "content-type": "text/event-stream", "cache-control": "no-cache", ...(reply.headers ?? {}) });
		for (const ev of reply.sse) res.write(`event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`);
		return res.end();
	}
	if (reply.chunks) {
		res.writeHead(status, { "content-type": "application/json", ...(reply.headers ?? {}) });
		for (const c of reply.chunks) res.write(c);
		return res.end();
	}
	if (reply.json !== undefined) {
		res.writeHead(status, { "content-type": "application/json", ...(reply.headers ?? {}) });
		return res.end(JSON.stringify(reply.json));
	}
	res.writeHead(status, { "content-type": "text/plain", ...(reply.headers ?? {}) });
	res.end(reply.text ?? "");
}

let seq = 0;
const rid = (p) => `${p}_${++seq}`;

/** Wraps output items into the streamed Responses events (created, added, done per item, completed). */
export function responseEvents(items, { id = rid("resp"), usage = { input_tokens: 10, output_tokens: 5, total_tokens: 15 } } = {}) {
	const events = [{ type: "response.created", response: { id, object: "response", status: "in_progress", output: [] } }];
	items.forEach((item, output_index) => {
		if (item.type === "message") {
			const text = item.content.map((c) => c.text).join("");
			events.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", content: [] } });
			events.push({ type: "response.content_part.added", item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
			events.push({ type: "response.output_text.delta", item_id: item.id, output_index, content_index: 0, delta: text });
			events.push({ type: "response.output_text.done", item_id: item.id, output_index, content_index: 0, text });
			events.push({ type: "response.content_part.done", item_id: item.id, output_index, content_index: 0, part: item.content[0] });
		} else if (item.type === "function_call") {
			events.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", arguments: "" } });
			events.push({ type: "response.function_call_arguments.delta", item_id: item.id, output_index, delta: item.arguments });
			events.push({ type: "response.function_call_arguments.done", item_id: item.id, output_index, arguments: item.arguments });
		} else {
			events.push({ type: "response.output_item.added", output_index, item });
		}
		events.push({ type: "response.output_item.done", output_index, item });
	});
	events.push({ type: "response.completed", response: { id, object: "response", status: "completed", output: items, usage } });
	return events;
}

/** A final assistant message item (optionally with url_citation annotations). */
export function messageItem(text, annotations = []) {
	return { type: "message", id: rid("msg"), role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations }] };
}

/** A function call item (the model calling a Pi tool). */
export function functionCallItem(name, args) {
	return { type: "function_call", id: rid("fc"), call_id: rid("call"), name, arguments: JSON.stringify(args), status: "completed" };
}

/** A hosted web_search_call item with `action.sources`. */
export function webSearchCallItem(query, sources = []) {
	return { type: "web_search_call", id: rid("ws"), status: "completed", action: { type: "search", query, sources: sources.map((url) => (typeof url === "string" ? { type: "url", url } : url)) } };
}

/** The streamed model answer: plain text. */
export const responseText = (text) => responseEvents([messageItem(text)]);
/** The streamed model answer: one tool call. */
export const responseToolCall = (name, args) => responseEvents([functionCallItem(name, args)]);

/** A non-streaming Responses body (what the API-key sidecar POST gets back). */
export function responseJson(items, { id = rid("resp"), status = "completed" } = {}) {
	return { id, object: "response", status, output: items, usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 } };
}

/** A 1x1 transparent PNG, base64 (what the image endpoint answers in data[0].b64_json). */
export const PNG_1X1_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
