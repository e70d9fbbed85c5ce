// One session-id rule (docs/napi.md "Session ids"): the glue's check (`sessionIdValid`), the scratch root
// (`HostSession`), the audit file (`hostAuditAppend`) and the review store (`reviewList`) give the same verdict, refuse
// with the same message, and create nothing for a refused id.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { native } from "./helpers/addon.mjs";
import { tempDir } from "./helpers/tmp.mjs";

const GOOD = ["019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", "sess-3", "s-c", "s", "pid-4242", "a.b_c-d", "a".repeat(128)];
const BAD = ["", ".", "..", "../escape", "a/b", "a\\b", ".hidden", "-a", "_a", "a-", "a.", "a b", "a\nb", "é", "a".repeat(129)];

function entry(sessionId) {
	return {
		sessionId,
		toolCallId: "c1",
		tool: "read",
		args: {},
		decision: "allow",
		prompted: false,
		permissionWaitMs: 0,
		durationMs: 1,
		overheadMs: 0,
		totalMs: 1,
		ok: true,
	};
}

/** Each capability's verdict on `id` in a fresh agent dir: `true`, or the refusal message. */
async function verdicts(id) {
	const base = tempDir("pct-sid-");
	const ws = join(base, "ws");
	const agent = join(base, "agent");
	mkdirSync(ws);
	let host = true;
	try {
		new native.HostSession(ws, agent, id);
	} catch (e) {
		assert.equal(e.code, "INVALID_ARGUMENT", JSON.stringify(id));
		host = e.message;
	}
	const a = await native.hostAuditAppend(agent, entry(id));
	const audit = a.ok ? true : (assert.equal(a.code, "INVALID_ARGUMENT"), a.message);
	const r = await native.reviewList(agent, id);
	const review = r.ok ? true : (assert.equal(r.code, "invalid-session"), r.message);
	if (audit !== true) assert.equal(existsSync(join(agent, "pi-codex-toolkit", "audit")), false, "a refused id writes nothing");
	return { glue: native.sessionIdValid(id), host, audit, review };
}

test("the ids Pi and the suites use pass everywhere", async () => {
	for (const id of GOOD) {
		assert.deepEqual(await verdicts(id), { glue: true, host: true, audit: true, review: true }, id);
	}
});

test("a refused id is refused everywhere with one message that says what to pass", async () => {
	for (const id of BAD) {
		const v = await verdicts(id);
		assert.equal(v.glue, false, JSON.stringify(id));
		assert.equal(typeof v.host, "string", JSON.stringify(id));
		assert.equal(v.audit, v.host, JSON.stringify(id));
		assert.equal(v.review, v.host, JSON.stringify(id));
		assert.match(v.host, /pass Pi's own session id/);
	}
});
