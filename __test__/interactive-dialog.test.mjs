// asktool's TUI dialog (src/pi/tools/interactive-dialog.ts) driven with raw key sequences through a stand-in for
// Pi's ctx.ui.custom: tabs, single and multi-select, the free-text row, Esc and an aborted turn.
import { test } from "node:test";
import assert from "node:assert/strict";
import { showAskDialog } from "../src/pi/tools/interactive-dialog.ts";
import { visibleWidth } from "@earendil-works/pi-tui";
import { native } from "./helpers/addon.mjs";

const KEY = { down: "\x1b[B", up: "\x1b[A", enter: "\r", tab: "\t", space: " ", esc: "\x1b" };
const theme = { fg: (_c, s) => s, bg: (_c, s) => s, bold: (s) => s };

/** A ctx whose custom() mounts the component, feeds `keys` (strings or functions of the component), then waits. */
function fakeCtx(keys, screens = []) {
	return {
		ui: {
			custom(factory) {
				return new Promise((resolve) => {
					const c = factory({ requestRender() {} }, theme, {}, resolve);
					for (const k of keys) {
						screens.push(c.render(70).join("\n"));
						if (typeof k === "function") k(c);
						else c.handleInput(k);
					}
				});
			},
		},
	};
}

const L = native.interactiveLimits();
const QS = [
	{ question: "Which database?", options: ["pg", "sqlite"], multiSelect: false },
	{ question: "Which tags?", options: ["x", "y"], multiSelect: true },
	{ question: "Your name?", options: [], multiSelect: false },
];

test("tabs: a choice, two toggled options with Done, a typed answer, then Submit", async () => {
	const screens = [];
	const keys = [KEY.down, KEY.enter, KEY.space, KEY.down, KEY.space, KEY.down, KEY.down, KEY.enter, KEY.enter, "h", "i", KEY.enter, KEY.enter];
	const replies = await showAskDialog(fakeCtx(keys, screens), QS, L);
	assert.deepEqual(replies, [{ kind: "choices", chosen: ["sqlite"] }, { kind: "choices", chosen: ["x", "y"] }, { kind: "text", text: "hi" }]);
	assert.match(screens[0], /□ Q1 .*□ Q2 .*□ Q3 .*✓ Submit/);
	assert.match(screens[0], /> pg\n  sqlite\n  Other \(type an answer\)\n  Skip this question/);
	assert.match(screens[4], /\[x\] x\n> \[ \] y/);
	assert.match(screens.at(-1), /Submit these answers\?[\s\S]*Q1: Which database\? → sqlite[\s\S]*Q2: Which tags\? → x, y[\s\S]*Q3: Your name\? → hi/);
	for (const s of screens) for (const line of s.split("\n")) assert.ok(visibleWidth(line) <= 70, line);
});

test("Esc closes the dialog: questions still open come back undefined (skipped); the Skip row skips", async () => {
	const replies = await showAskDialog(fakeCtx([KEY.up, KEY.down, KEY.down, KEY.down, KEY.enter, KEY.esc]), QS, L);
	assert.deepEqual(replies, [{ kind: "skip" }, undefined, undefined]);
});

test("an aborted turn closes the dialog with what was answered", async () => {
	const ac = new AbortController();
	const one = [QS[0]];
	const replies = await showAskDialog(fakeCtx([KEY.down, () => ac.abort()]), one, L, ac.signal);
	assert.deepEqual(replies, [undefined]);
});

test("one question: no tabs, the answer submits at once; Other with an empty line skips", async () => {
	const screens = [];
	const replies = await showAskDialog(fakeCtx([KEY.down, KEY.down, KEY.enter, KEY.enter], screens), [QS[0]], L);
	assert.deepEqual(replies, [{ kind: "skip" }]);
	assert.doesNotMatch(screens[0], /Submit/);
	assert.match(screens.at(-1), /Your answer:/);
});

test("no custom UI (RPC mode answers undefined): the caller falls back to sequential dialogs", async () => {
	assert.equal(await showAskDialog({ ui: { custom: async () => undefined } }, QS, L), undefined);
});
