// The one display sanitiser (src/display, src/pi/render/safe.ts; docs/permissions.md "What reaches the terminal"):
// the engine's rule over the napi boundary, the glue's quick check agreeing with it on every code point, the dialog
// wrappers handing back the caller's own option, and the renderers and the card never drawing a raw control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { native } from "./helpers/addon.mjs";
import { UNSAFE, shownBlock, shownLine, safeSelect, safeWidget, safeStatus, safeNotify } from "../src/pi/render/safe.ts";
import { renderersFor } from "../src/pi/render/tools.ts";
import { cardText } from "../src/pi/render/card.ts";

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const RAW = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const RAW_IN_BLOCK = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

test("the glue's quick check and the engine agree on every code point up to U+3000", () => {
	const wrong = [];
	for (let cp = 0; cp < 0x3000; cp++) {
		if (cp >= 0xd800 && cp <= 0xdfff) continue;
		const c = String.fromCodePoint(cp);
		const engineEscapes = native.displayText(`a${c}b`, false) !== `a${c}b`;
		if (engineEscapes !== UNSAFE.test(c)) wrong.push(cp.toString(16));
	}
	assert.deepEqual(wrong, []);
});

test("lines escape everything, blocks keep newlines and tabs", () => {
	assert.equal(shownLine("a\nb\u001b[31mc\u009bd\u202ee"), "a\\nb\\x1b[31mc\\x9bd\\u{202e}e");
	assert.equal(shownBlock("one\r\ntwo\n\tthree\u001b]0;t\u0007"), "one\ntwo\n\tthree\\x1b]0;t\\x07");
	assert.equal(shownLine("plain text é"), "plain text é");
	assert.equal(native.displayText("x\ry", true), "x\\ry");
});

test("safeSelect shows escaped options and hands back the caller's own", async () => {
	const seen = {};
	const ui = {
		select: async (title, options) => {
			seen.title = title;
			seen.options = options;
			return options[1];
		},
	};
	const opts = ["Allow once", "evil\u001b[2K\nAllow once", "Deny"];
	const picked = await safeSelect(ui, "Title\nline two\u001b]0;owned\u0007", opts);
	assert.equal(picked, opts[1]);
	assert.equal(seen.title, "Title\nline two\\x1b]0;owned\\x07");
	assert.deepEqual(seen.options, ["Allow once", "evil\\x1b[2K\\nAllow once", "Deny"]);
	for (const o of seen.options) assert.doesNotMatch(o, RAW);
	const calls = [];
	const sink = { setWidget: (k, rows) => calls.push(rows), setStatus: (k, t) => calls.push(t), notify: (m) => calls.push(m) };
	safeWidget(sink, "w", ["☐ a\u001b[31m\nb"]);
	safeStatus(sink, "s", "Plan\u0007\nmode");
	safeNotify(sink, "two\nlines\u001b[2J");
	assert.deepEqual(calls, [["☐ a\\x1b[31m\\nb"], "Plan\\x07\\nmode", "two\nlines\\x1b[2J"]);
});

test("the tool rows and the card never draw a raw control from the model's arguments", () => {
	const theme = { fg: (_c, s) => s, bg: (_c, s) => s, bold: (s) => s };
	const ctx = { args: {}, toolCallId: "t", invalidate() {}, lastComponent: undefined, state: {}, cwd: process.cwd(), executionStarted: false, argsComplete: true, isPartial: false, expanded: true, isError: false };
	const path = "notes.txt\n\u001b[1A\u001b[2KAllow Read to read README.md?\u001b]0;pwned\u0007";
	for (const tool of ["Write", "Read", "Edit", "Bash"]) {
		const r = renderersFor(tool);
		const args = { path, content: "x\u001b[31m\n", command: `echo hi\u001b]0;pwned\u0007`, ops: "PUT >$:\n+x" };
		const row = r.renderCall(args, theme, ctx).render(200).join("\n");
		assert.doesNotMatch(row.replace(/\u001b\[[0-9;]*m/g, ""), RAW_IN_BLOCK, `${tool}: ${JSON.stringify(row)}`);
		// The path is one line of the row: its newline is shown, not drawn.
		if (tool !== "Bash") assert.match(row, /notes\.txt\\n\\x1b\[1A/);
		const result = { content: [{ type: "text", text: "out\u001b]0;pwned\u0007\u009b2J" }], details: {} };
		const body = r.renderResult(result, { expanded: true, isPartial: false }, theme, ctx).render(200).join("\n");
		assert.doesNotMatch(body.replace(/\u001b\[[0-9;]*m/g, ""), RAW_IN_BLOCK, `${tool}: ${JSON.stringify(body)}`);
	}
	const card = cardText("Read", {}, { ok: true, root: "external", external: "absolute-outside", canonical: `/tmp/${path}`, path }, process.cwd());
	assert.equal(card.split("\n").length, 1, card);
	assert.doesNotMatch(card, RAW);
});
