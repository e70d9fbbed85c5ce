// src/pi/sessions.ts: the ids of Pi's session list, read from each file's first entry, are exactly the ids Pi's own
// `SessionManager.listAll()` lists (both Pi versions), over the files that list treats specially.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sessionIds } from "../src/pi/sessions.ts";

const header = (id, extra = {}) => JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-12-07T00:00:00.000Z", cwd: "/w", ...extra });
const message = (text) => JSON.stringify({ type: "message", id: "m", parentId: null, timestamp: "2026-12-07T00:00:01.000Z", message: { role: "user", content: [{ type: "text", text }], timestamp: 1 } });

/** An agent folder with every kind of file the list has a rule for; returns the ids Pi must list. */
function agentDir(base) {
	const sessions = join(base, "sessions");
	const a = join(sessions, "--a--");
	const b = join(base, "elsewhere", "--b--");
	mkdirSync(a, { recursive: true });
	mkdirSync(b, { recursive: true });
	const w = (dir, name, text) => writeFileSync(join(dir, name), text);
	w(a, "1_plain.jsonl", [header("plain"), message("hi"), message("there")].join("\n") + "\n");
	// Blank, malformed and falsy lines before the header are skipped, as Pi's parser does.
	w(a, "2_late.jsonl", ["", "   ", "{not json", "null", "0", header("late"), message("x")].join("\n"));
	w(a, "3_crlf.jsonl", [header("crlf"), message("x")].join("\r\n"));
	w(a, "4_cr.jsonl", [header("cr"), message("x")].join("\r"));
	// A header longer than one read step (16 KiB), and one cut exactly at a step's end by its line break.
	w(a, "5_long.jsonl", [header("long", { cwd: "/" + "x".repeat(40_000) }), message("x")].join("\n"));
	const exact = header("exact", { cwd: "" });
	w(a, "6_exact.jsonl", header("exact", { cwd: "/" + "y".repeat(16 * 1024 - exact.length - 2) }) + "\n" + message("x"));
	w(a, "7_no-newline.jsonl", header("no-newline"));
	// Not listed: another entry first, nothing parseable, an empty file, a header without an id, another extension.
	w(a, "8_message-first.jsonl", [message("x"), header("message-first")].join("\n"));
	w(a, "9_junk.jsonl", "{\n[\nnot json\n");
	w(a, "10_empty.jsonl", "");
	w(a, "11_no-id.jsonl", JSON.stringify({ type: "session", version: 3 }) + "\n");
	w(a, "12_other.json", header("other-ext"));
	mkdirSync(join(a, "13_folder.jsonl"));
	// A file straight in sessions/ is not in a project folder: not listed. A linked folder is.
	w(sessions, "14_stray.jsonl", header("stray"));
	w(b, "15_linked.jsonl", header("linked"));
	symlinkSync(b, join(sessions, "--b-link--"));
	// More files than are read at once.
	for (let i = 0; i < 25; i++) w(b, `many-${i}.jsonl`, [header(`many-${i}`), message(String(i))].join("\n"));
	return ["plain", "late", "crlf", "cr", "long", "exact", "no-newline", "linked", ...Array.from({ length: 25 }, (_, i) => `many-${i}`)];
}

test("sessionIds lists exactly the sessions Pi's SessionManager.listAll lists, on Pi 0.87.1 and 1.6.0", async (t) => {
	const base = mkdtempSync(join(tmpdir(), "pct-sessions-"));
	t.after(() => rmSync(base, { recursive: true, force: true }));
	const want = agentDir(base).sort();
	assert.deepEqual((await sessionIds(base)).sort(), want);
	const saved = process.env.PI_CODING_AGENT_DIR;
	process.env.PI_CODING_AGENT_DIR = base;
	try {
		for (const dir of ["pi-087", "pi-1x"]) {
			const { SessionManager } = await import(`../node_modules/${dir}/dist/index.js`);
			// Pi lists the id-less header too, with an undefined id: no scratch folder can be named by it.
			const listed = (await SessionManager.listAll()).map((s) => s.id).filter((id) => typeof id === "string");
			assert.deepEqual(listed.sort(), want, dir);
		}
	} finally {
		if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
		else process.env.PI_CODING_AGENT_DIR = saved;
	}
});

test("sessionIds: no sessions folder is no session; an unreadable one is an error (the sweep then removes nothing)", async (t) => {
	const base = mkdtempSync(join(tmpdir(), "pct-sessions-"));
	t.after(() => rmSync(base, { recursive: true, force: true }));
	assert.deepEqual(await sessionIds(base), []);
	writeFileSync(join(base, "sessions"), "a file where the folder should be");
	await assert.rejects(sessionIds(base), { code: "ENOTDIR" });
});
