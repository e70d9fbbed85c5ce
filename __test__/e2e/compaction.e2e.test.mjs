// Remote Compaction in the real Pi (both versions), offline (docs/compaction.md): the main model is
// openai-codex with a ChatGPT login; the loopback OpenAI server (helpers/openai-server.mjs) answers both the model
// requests and the compaction request, reached through the fetch-redirect test extension. RPC `compact` triggers it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { PI_VERSIONS, ROOT, RpcPi, sandbox, writeConfig } from "../helpers/pi.mjs";
import { responseEvents, responseText, startOpenAIServer } from "./helpers/openai-server.mjs";

const EXTS = [join(ROOT, "__test__/fixtures/fetch-redirect-ext.ts"), ROOT];
const MARKER = /^\[pi-codex-toolkit\.remote-compaction-v2:[0-9a-f-]{36}\]/;
const CHECKPOINT = { type: "compaction", id: "cmp_1", encrypted_content: "ENCRYPTED-CHECKPOINT" };

/** A ChatGPT OAuth login in auth.json (a JWT whose claim carries chatgpt_account_id) and SSE transport. */
function codexLogin(box, accountId = "acct_test_1") {
	const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
	const jwt = `${b64({ alg: "none", typ: "JWT" })}.${b64({ "https://api.openai.com/auth": { chatgpt_account_id: accountId }, exp: Math.floor(Date.now() / 1000) + 3600 })}.sig`;
	writeFileSync(join(box.agentDir, "auth.json"), JSON.stringify({ "openai-codex": { type: "oauth", access: jwt, refresh: "refresh-test", expires: Date.now() + 3600_000, accountId } }));
	writeFileSync(join(box.agentDir, "settings.json"), JSON.stringify({ transport: "sse", compaction: { keepRecentTokens: 1 } }));
}

const servers = [];
after(async () => {
	for (const s of servers) await s.close();
});

const isCompaction = (req) => (req.json?.input ?? []).some((i) => i.type === "compaction_trigger");
const texts = (input) => input.map((i) => (typeof i.content === "string" ? i.content : (i.content ?? []).map((c) => c.text ?? "").join(""))).join("\n");

/** A Pi on openai-codex/gpt-5.6-luna (ChatGPT login) with Remote Compaction on; `compaction` scripts its reply. */
async function start(version, compaction, env = {}) {
	const srv = await startOpenAIServer();
	servers.push(srv);
	srv.reply((req) => (isCompaction(req) ? compaction(req) : { sse: responseText(`answer ${srv.requests.length}`) }));
	const box = sandbox();
	codexLogin(box);
	writeConfig(box, { remoteCompaction: { enabled: true }, debug: true });
	const pi = new RpcPi({ version, box, provider: "openai-codex", model: "gpt-5.6-luna", extensions: EXTS, env: { PCT_TEST_FETCH_REDIRECT: srv.url, ...env } });
	await pi.prompt("first question about the parser");
	await pi.prompt("second question about the lexer");
	return { srv, pi };
}

/** The newest compaction entry Pi stored, read through RPC. */
async function lastCompaction(pi) {
	const r = await pi.command("get_messages");
	const msgs = r.data?.messages ?? [];
	return msgs.filter((m) => m.role === "compactionSummary").at(-1);
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] remote compaction: the request, the stored compaction, the replay on the next request`, async () => {
		const { srv, pi } = await start(version, () => ({ sse: responseEvents([CHECKPOINT]) }));
		try {
			const r = await pi.command("compact", {}, 120000);
			assert.equal(r.success, true, JSON.stringify(r) + pi.stderr.slice(-2000));
			// The compaction request: official host and path, headers, captured input and the trigger last.
			const reqs = srv.requests.filter(isCompaction);
			assert.equal(reqs.length, 1, JSON.stringify(srv.requests.map((q) => q.path)));
			const req = reqs[0];
			assert.equal(`${req.host}${req.path}`, "chatgpt.com/backend-api/codex/responses");
			assert.equal(req.headers["chatgpt-account-id"], "acct_test_1");
			assert.equal(req.headers["openai-beta"], "responses=experimental");
			assert.ok(req.headers.originator);
			assert.match(req.headers.authorization, /^Bearer /);
			assert.equal(req.json.model, "gpt-5.6-luna");
			assert.equal(req.json.stream, true);
			assert.deepEqual(req.json.input.at(-1), { type: "compaction_trigger" });
			// Pi's active tools as its provider describes them: `tools` (Pi 0.87) or an additional_tools input item (1.x).
			const declared = [...(req.json.tools ?? []), ...req.json.input.filter((i) => i.type === "additional_tools").flatMap((i) => i.tools)];
			assert.ok(declared.some((t) => t.type === "function" && t.name === "read"), JSON.stringify(req.json).slice(0, 800));
			assert.match(texts(req.json.input), /first question about the parser[\s\S]*second question about the lexer/);
			// Debug: one metadata line, never the token or the conversation.
			const lines = pi.stderr.split("\n").filter((l) => l.includes("feature=remote-compaction"));
			assert.equal(lines.length, 1, pi.stderr.slice(-1500));
			assert.match(lines[0], /host=chatgpt\.com .*status=200 .*blocks=compaction$/);
			assert.doesNotMatch(pi.stderr, /first question about the parser|Bearer/);
			// Stored: marker + readable excerpt (Pi's summary message).
			const stored = await lastCompaction(pi);
			assert.ok(stored, "a compaction summary is in the session");
			assert.match(stored.summary, MARKER);
			assert.match(stored.summary, /user: first question about the parser/);
			// The next model request carries the retained input followed by the checkpoint, not the summary text.
			await pi.prompt("third question");
			const next = srv.requests.filter((q) => !isCompaction(q)).at(-1).json;
			const at = next.input.findIndex((i) => i.type === "compaction");
			assert.ok(at > 0, JSON.stringify(next.input).slice(0, 2000));
			assert.deepEqual(next.input[at], CHECKPOINT);
			assert.match(texts(next.input.slice(0, at)), /first question about the parser[\s\S]*second question about the lexer/);
			assert.doesNotMatch(JSON.stringify(next.input), /remote-compaction-v2/);
			assert.match(texts(next.input.slice(at + 1)), /third question/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] remote compaction: another model does not match, the readable summary stays`, async () => {
		const { srv, pi } = await start(version, () => ({ sse: responseEvents([CHECKPOINT]) }));
		try {
			assert.equal((await pi.command("compact", {}, 120000)).success, true, pi.stderr.slice(-2000));
			const models = (await pi.command("get_available_models")).data?.models ?? [];
			const other = models.find((m) => m.provider === "openai-codex" && m.id !== "gpt-5.6-luna");
			assert.ok(other, "another openai-codex model is available");
			const set = await pi.command("set_model", { provider: other.provider, modelId: other.id });
			assert.equal(set.success, true, JSON.stringify(set));
			await pi.prompt("after switching");
			const next = srv.requests.filter((q) => !isCompaction(q)).at(-1).json;
			assert.equal(next.model, other.id);
			assert.ok(!next.input.some((i) => i.type === "compaction"), "no checkpoint for another model");
			assert.match(texts(next.input), /\[pi-codex-toolkit\.remote-compaction-v2:[0-9a-f-]{36}\]\nuser: first question/);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] remote compaction: a server error falls back to Pi's own compaction with a warning`, async () => {
		const { srv, pi } = await start(version, () => ({ status: 500, json: { error: { message: "boom" } } }));
		try {
			const r = await pi.command("compact", {}, 120000);
			assert.equal(r.success, true, JSON.stringify(r) + pi.stderr.slice(-2000));
			assert.equal(srv.requests.filter(isCompaction).length, 1);
			assert.ok(pi.notifications.some((n) => /^Remote Compaction: .*Pi's own compaction runs instead\.$/s.test(n)), JSON.stringify(pi.notifications) + pi.stderr.slice(-1500));
			const stored = await lastCompaction(pi);
			assert.ok(stored, "Pi's compaction stored a summary");
			assert.doesNotMatch(stored.summary, MARKER);
			// The session stays usable.
			await pi.prompt("still there?");
			assert.ok(srv.requests.filter((q) => !isCompaction(q)).at(-1).json.input.some((i) => /still there/.test(JSON.stringify(i))));
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] remote compaction: a server that never answers times out at 180 s (a clock 100 times faster: 1.8 s) and Pi's own compaction runs`, async () => {
		// The test build's shortened clock divides every feature's own timeout by 100 (docs/release.md "Test seams"):
		// the message names the timeout the compaction request ran under, so another timeout fails here.
		const { srv, pi } = await start(version, () => ({ hang: true }), { PCT_TEST_NET_TIMEOUT_MS: "/100" });
		try {
			const r = await pi.command("compact", {}, 120000);
			assert.equal(r.success, true, JSON.stringify(r) + pi.stderr.slice(-2000));
			assert.equal(srv.requests.filter(isCompaction).length, 1, "sent once, not retried");
			const warning = pi.notifications.find((n) => /^Remote Compaction: /.test(n));
			assert.match(warning ?? JSON.stringify(pi.notifications), /timeout: no complete answer within 1\.8 s/);
			assert.match(warning, /Pi's own compaction runs instead\.$/);
			const stored = await lastCompaction(pi);
			assert.ok(stored, "Pi's compaction stored a summary");
			assert.doesNotMatch(stored.summary, MARKER);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] remote compaction: custom instructions leave it to Pi's own compaction (nothing sent)`, async () => {
		const { srv, pi } = await start(version, () => ({ sse: responseEvents([CHECKPOINT]) }));
		try {
			const r = await pi.command("compact", { customInstructions: "focus on the lexer" }, 120000);
			assert.equal(r.success, true, JSON.stringify(r) + pi.stderr.slice(-2000));
			assert.equal(srv.requests.filter(isCompaction).length, 0);
			assert.doesNotMatch((await lastCompaction(pi)).summary, MARKER);
		} finally {
			await pi.close();
		}
	});
}
