// Failures are data (docs/render.md "Errors", src/pi/failure.ts) through the real Pi: on 1.6.0 a failing toolkit
// call is an error result with `details.errorCode` and its structured fields (Bash's exit code and streams, Read's
// Glob suggestion, Edit's live tag, apply_patch's outcome); on 0.87.1 it is the thrown `CODE: message` text. And a
// call that cannot succeed fails before its permission card (docs/host.md "Before the card"): no dialog for it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";

const script = (box, steps) => writeScript(box, `export default ${JSON.stringify(steps)};`);
const one = (name, args) => ({ tools: [{ name, args }] });

for (const version of PI_VERSIONS) {
	const asData = version.name !== "0.87.1";

	test(`[pi ${version.name}] a failing call is ${asData ? "an error result with details.errorCode and its fields" : "the thrown CODE: message text"}`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, applyPatch: { enabled: true }, shellSessions: { enabled: true }, permissions: { mode: "auto" } });
		mkdirSync(join(box.cwd, "src"));
		writeFileSync(join(box.cwd, "a.txt"), "one\ntwo\n");
		const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-no such line\n+x\n*** End Patch";
		const r = await runJson({
			version,
			box,
			script: script(box, [
				one("Read", { path: "src" }),
				one("Bash", { command: "echo out; echo err >&2; exit 3" }),
				one("Edit", { path: "a.txt", tag: "ABCD", ops: "PUT 1.=1:\n+ONE" }),
				one("apply_patch", { patch }),
				one("write_stdin", { session_id: 4242, chars: "" }),
				{ text: "done" },
			]),
		});
		const [read, bash, edit, applied, stdin] = r.toolEnds;
		assert.deepEqual(r.toolEnds.map((e) => [e.toolName, e.isError]), [["Read", true], ["Bash", true], ["Edit", true], ["apply_patch", true], ["write_stdin", true]], r.stderr);
		// The model reads the same text on both versions.
		assert.match(toolText(read), /^INVALID_ARGUMENT: src is a directory; Read takes a file\./);
		assert.match(toolText(bash), /^TOOL_FAILED: /);
		assert.match(toolText(edit), /^EDIT_TAG_UNKNOWN: tag ABCD is not the current tag of a\.txt/);
		assert.match(toolText(applied), /^apply_patch failed \(no-change\)/);
		assert.match(toolText(stdin), /^invalid-session|session/);
		if (asData) {
			assert.deepEqual(read.result.details.suggestion, { tool: "Glob", path: "src", pattern: "*" });
			assert.equal(read.result.details.errorCode, "INVALID_ARGUMENT");
			const b = bash.result.details;
			assert.deepEqual([b.errorCode, b.exitCode, b.stdout, b.stderr], ["TOOL_FAILED", 3, "out\n", "err\n"]);
			assert.equal(edit.result.details.errorCode, "EDIT_TAG_UNKNOWN");
			assert.match(edit.result.details.liveTag, /^[0-9A-F]{4}$/);
			assert.deepEqual([applied.result.details.errorCode, applied.result.details.outcome], ["context-mismatch", "no-change"]);
			assert.equal(stdin.result.details.errorCode, "invalid-session");
		} else {
			for (const e of r.toolEnds) assert.equal(e.result.details?.errorCode, undefined, `${e.toolName}: 0.87 keeps the text form`);
		}
	});

	test(`[pi ${version.name}] a call that cannot succeed fails before any card: no decision spent on it`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, applyPatch: { enabled: true }, permissions: { mode: "ask" } });
		mkdirSync(join(box.cwd, "dir"));
		writeFileSync(join(box.cwd, "a.txt"), "one\ntwo\n");
		const pi = new RpcPi({
			version,
			box,
			script: script(box, [
				one("Edit", { path: "a.txt", tag: "zz", ops: "PUT 1.=1:\n+ONE" }),
				one("Edit", { path: "missing.txt", tag: "ABCD", ops: "PUT 1.=1:\n+ONE" }),
				one("Edit", { path: "a.txt", tag: "ABCD", ops: "FROB 1" }),
				one("Write", { path: "dir", content: "x\n" }),
				one("Read", { path: "../no-such-file.txt" }),
				one("apply_patch", { patch: "*** Begin Patch\n*** Frobnicate: a.txt\n*** End Patch" }),
				one("Write", { path: "ok.txt", content: "fine\n" }),
				one("apply_patch", { patch: "*** Begin Patch\n*** Add File: p.txt\n+hello\n*** End Patch" }),
				{ text: "done" },
			]),
			ui: (req) => (req.method === "select" ? { value: req.options.find((o) => o === "Allow once") } : { cancelled: true }),
		});
		try {
			const { events } = await pi.prompt("go");
			const ends = events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(ends.map((e) => [e.toolName, e.isError]), [["Edit", true], ["Edit", true], ["Edit", true], ["Write", true], ["Read", true], ["apply_patch", true], ["Write", false], ["apply_patch", false]], ends.map(toolText).join("\n---\n"));
			const texts = ends.map(toolText);
			assert.match(texts[0], /^EDIT_TAG_REQUIRED: 'ZZ' is not a tag/);
			assert.match(texts[1], /^NOT_FOUND: missing\.txt does not exist, and no file you were shown is named missing\.txt with tag ABCD\./);
			assert.match(texts[2], /^EDIT_PARSE_FAILED: /);
			assert.match(texts[3], /^INVALID_ARGUMENT: dir is a directory/);
			assert.match(texts[4], /^NOT_FOUND: /);
			assert.match(texts[5], /^apply_patch failed|invalid-patch/);
			// Two cards in all: the calls that could succeed. apply_patch's card shows the patch as its row does (each file
			// with its counts, then its lines), not the raw envelope.
			const cards = pi.uiRequests.filter((q) => q.method === "select");
			assert.equal(cards.length, 2, JSON.stringify(cards.map((c) => c.title)));
			assert.match(cards[0].title, /^Allow Write to create ok\.txt\?/);
			assert.equal(cards[1].title, "Allow apply_patch to change p.txt? (+1 -0)\nA p.txt +1 -0\n  + hello");
			if (asData) assert.deepEqual(ends.slice(0, 6).map((e) => e.result.details.errorCode), ["EDIT_TAG_REQUIRED", "NOT_FOUND", "EDIT_PARSE_FAILED", "INVALID_ARGUMENT", "NOT_FOUND", "invalid-hunk"]);
		} finally {
			await pi.close();
		}
	});
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] words: review names who changed a file and the later change that blocks a rollback`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true }, hostTools: { enabled: true }, permissions: { mode: "auto" } });
		const add = "*** Begin Patch\n*** Add File: a.txt\n+one\n*** End Patch";
		const update = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** End Patch";
		const titles = [];
		const pi = new RpcPi({
			version,
			box,
			script: script(box, [one("apply_patch", { patch: add }), one("Write", { path: "w.txt", content: "w\n" }), one("apply_patch", { patch: update }), { text: "done" }]),
			ui: (req) => (titles.push(req.title), { cancelled: true }),
		});
		try {
			const { events } = await pi.prompt("go");
			assert.deepEqual(events.filter((e) => e.type === "tool_execution_end").map((e) => e.isError), [false, false, false]);
			await pi.prompt("/pct review");
			assert.deepEqual(pi.uiRequests.at(-1).options.slice(0, 3), ["#1 A a.txt  apply_patch  +1 -0  active", "#2 A w.txt  Write  +1 -0  active", "#3 M a.txt  apply_patch  +1 -1  active"]);
			const shown = await pi.prompt("/pct review show 3");
			assert.match(shown.notifications[0], /^#3 M a\.txt  apply_patch  \+1 -1  active \(modified\)\n--- a\/a\.txt/);
			assert.doesNotMatch(shown.notifications[0], /message/);
			const rb = await pi.prompt("/pct review rollback 1");
			assert.equal(rb.notifications.length, 0, JSON.stringify(rb.notifications));
			assert.equal(
				titles.at(-1),
				"Rollback of #1 apply_patch a.txt refused: #3 apply_patch a.txt changed the file after it. Roll back from the newest: #3 apply_patch a.txt → #1 apply_patch a.txt.",
			);
		} finally {
			await pi.close();
		}
	});
}
