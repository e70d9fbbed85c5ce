// Image Generation in the real Pi (both versions), offline: loopback OpenAI server + fetch-redirect extension
// (see websearch.e2e.test.mjs).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";
import { PNG_1X1_B64, startOpenAIServer } from "./helpers/openai-server.mjs";

const EXTS = [join(ROOT, "__test__/fixtures/fetch-redirect-ext.ts"), ROOT];
const servers = [];
after(async () => {
	for (const s of servers) await s.close();
});

function imageScript(box, calls) {
	return writeScript(box, `export default [
	{ tools: ${JSON.stringify(calls.map((args, i) => ({ name: "openai_generate_image", args, id: `img-${i}` })))} },
	{ text: "done" },
];`);
}

function artifacts(box) {
	const dir = join(box.agentDir, "artifacts", "pi-codex-toolkit");
	return existsSync(dir) ? readdirSync(dir) : [];
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] image (API key): PNG written exclusively under the agent dir and returned as an image block`, async () => {
		const srv = await startOpenAIServer();
		servers.push(srv);
		srv.reply((req) => (req.json?.prompt === "not a png"
			? { json: { data: [{ b64_json: Buffer.from("GIF89a not a png").toString("base64") }] } }
			: { json: { created: 1, data: [{ b64_json: PNG_1X1_B64 }] } }));
		const box = sandbox();
		writeConfig(box, { imageGeneration: { enabled: true }, permissions: { mode: "auto" }, debug: true });
		const r = await runJson({
			version, box, extensions: EXTS,
			script: imageScript(box, [{ prompt: "a red square", size: "1024x1024", quality: "low" }, { prompt: "not a png" }]),
			env: { OPENAI_API_KEY: "sk-test-image-key", PCT_TEST_FETCH_REDIRECT: srv.url },
		});
		assert.equal(r.code, 0, r.stderr);
		const ok = r.toolEnds.find((e) => e.toolCallId === "img-0");
		assert.equal(ok?.isError, false, ok && r.text(ok));
		const path = ok.result.details.path;
		const { traceId, ...details } = ok.result.details;
		assert.match(traceId, /^pct-[0-9a-f]{16}$/, "the call's trace id (docs/host.md \"Trace ids\")");
		assert.deepEqual(details, { path, mimeType: "image/png" });
		assert.ok(path.startsWith(join(box.agentDir, "artifacts", "pi-codex-toolkit") + "/") && path.endsWith(".png"), path);
		assert.equal(r.text(ok), `Image saved to ${path}`);
		assert.deepEqual(readFileSync(path), Buffer.from(PNG_1X1_B64, "base64"));
		const img = ok.result.content.find((c) => c.type === "image");
		assert.deepEqual({ mimeType: img.mimeType, data: img.data }, { mimeType: "image/png", data: PNG_1X1_B64 });
		// The non-PNG answer is refused and writes nothing.
		const bad = r.toolEnds.find((e) => e.toolCallId === "img-1");
		assert.equal(bad.isError, true);
		assert.match(r.text(bad), /^invalid-image: the decoded bytes are not a PNG/);
		assert.equal(artifacts(box).length, 1);
		// The request: one POST per call to the fixed endpoint, gpt-image-2, background auto.
		const reqs = srv.requests;
		assert.equal(reqs.length, 2);
		assert.equal(`${reqs[0].host}${reqs[0].path}`, "api.openai.com/v1/images/generations");
		assert.equal(reqs[0].headers.authorization, "Bearer sk-test-image-key");
		const first = reqs.find((q) => q.json.prompt === "a red square").json;
		assert.deepEqual(first, { prompt: "a red square", model: "gpt-image-2", background: "auto", quality: "low", size: "1024x1024" });
		// Debug lines: metadata only, never the key or the prompt.
		const lines = r.stderr.split("\n").filter((l) => l.startsWith("[pi-codex-toolkit] net "));
		assert.equal(lines.length, 2, r.stderr);
		assert.ok(lines.every((l) => /feature=image-generation provider=openai api=openai-responses model=gpt-image-2 host=api\.openai\.com /.test(l)), lines.join("\n"));
		assert.doesNotMatch(r.stderr, /sk-test-image-key|red square|not a png/);
	});

	test(`[pi ${version.name}] image (Codex OAuth): chatgpt.com endpoint with chatgpt-account-id`, async () => {
		const srv = await startOpenAIServer();
		servers.push(srv);
		srv.reply(() => ({ json: { data: [{ b64_json: PNG_1X1_B64 }] } }));
		const box = sandbox();
		const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
		const jwt = `${b64({ alg: "none" })}.${b64({ "https://api.openai.com/auth": { chatgpt_account_id: "acct_img" } })}.sig`;
		writeFileSync(join(box.agentDir, "auth.json"), JSON.stringify({ "openai-codex": { type: "oauth", access: jwt, refresh: "r", expires: Date.now() + 3600_000, accountId: "acct_img" } }));
		writeConfig(box, { imageGeneration: { enabled: true }, permissions: { mode: "auto" } });
		const r = await runJson({ version, box, extensions: EXTS, script: imageScript(box, [{ prompt: "a cat" }]), env: { PCT_TEST_FETCH_REDIRECT: srv.url } });
		assert.equal(r.code, 0, r.stderr);
		const end = r.toolEnds.find((e) => e.toolName === "openai_generate_image");
		assert.equal(end?.isError, false, end && r.text(end));
		assert.equal(srv.requests.length, 1);
		const req = srv.requests[0];
		assert.equal(`${req.host}${req.path}`, "chatgpt.com/backend-api/codex/images/generations");
		assert.equal(req.headers["chatgpt-account-id"], "acct_img");
		assert.equal(req.headers.authorization, `Bearer ${jwt}`);
		assert.deepEqual(req.json, { prompt: "a cat", model: "gpt-image-2", background: "auto", quality: "auto", size: "auto" });
		assert.equal(artifacts(box).length, 1);
	});
}

// Image Generation is high risk (docs/permissions.md "Image Generation"): headless `ask` refuses it before anything is
// sent, and Plan mode refuses it even under `auto`.
for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] image: refused headless in ask and in Plan under auto; nothing is sent`, async () => {
		const srv = await startOpenAIServer();
		servers.push(srv);
		srv.reply(() => ({ json: { created: 1, data: [{ b64_json: PNG_1X1_B64 }] } }));
		const env = { OPENAI_API_KEY: "sk-test-image-key", PCT_TEST_FETCH_REDIRECT: srv.url };
		const box = sandbox();
		writeConfig(box, { imageGeneration: { enabled: true }, permissions: { mode: "ask" } });
		const r = await runJson({ version, box, extensions: EXTS, script: imageScript(box, [{ prompt: "a red square" }]), env });
		const end = r.toolEnds.find((e) => e.toolCallId === "img-0");
		assert.match(r.text(end), /^TOOL_DENIED: openai_generate_image needs the user's confirmation in permission mode ask/);
		const plan = sandbox();
		writeConfig(plan, { imageGeneration: { enabled: true }, permissions: { mode: "auto" } });
		const pi = new RpcPi({ version, box: plan, extensions: EXTS, script: imageScript(plan, [{ prompt: "a blue square" }]), env });
		try {
			await pi.prompt("/pct mode plan", 180000);
			await pi.prompt("go", 180000);
			const e = pi.events.find((x) => x.type === "tool_execution_end" && x.toolName === "openai_generate_image");
			assert.match(toolText(e), /^EDIT_DISABLED_IN_PLAN: openai_generate_image is disabled in Plan mode/);
		} finally {
			await pi.close();
		}
		assert.equal(srv.requests.length, 0, "nothing was sent");
		assert.equal(artifacts(box).length + artifacts(plan).length, 0);
		const lines = readFileSync(join(plan.agentDir, "pi-codex-toolkit", "audit", readdirSync(join(plan.agentDir, "pi-codex-toolkit", "audit"))[0]), "utf8");
		assert.match(lines, /"tool":"openai_generate_image".*"decision":"denied-plan"/);
	});
}
