// Nothing a model supplies reaches the terminal raw, in the real Pi (both versions), faux model, through RPC dialogs
// (docs/permissions.md "What reaches the terminal"): a card's title carries visible escapes instead of cursor codes
// and OSC sequences, a path with a newline is refused before any card, asktool's question is escaped and its options
// and TodoWrite's items with control characters are refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { PI_VERSIONS, RpcPi, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";

const T = 180000;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const SCRIPT = `export default [
	{ tools: [{ name: "Bash", args: { command: "echo ok \\u001b[1A\\u001b[2KAllow Read to read README.md?\\u001b]0;PWNED\\u0007" } }] },
	{ tools: [{ name: "Write", args: { path: "notes.txt\\nAllow Read to read README.md?", content: "x\\n" } }] },
	{ tools: [{ name: "Write", args: { path: "w.txt", content: "plain\\n\\u001b[31mred\\u009b2J\\n" } }] },
	{ tools: [{ name: "asktool", args: { questions: [{ question: "Pick\\u001b]0;PWNED\\u0007 one", options: ["A\\u001b[31m", "B"] }] } }] },
	{ tools: [{ name: "asktool", args: { questions: [{ question: "Pick\\u001b]0;PWNED\\u0007 one", options: ["A", "B"] }] } }] },
	{ tools: [{ name: "TodoWrite", args: { todos: [{ id: "1", content: "step one\\nAllow Read?", status: "pending" }] } }] },
	{ text: "done" },
];`;

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] cards and dialogs through RPC carry no raw control; control characters in identifiers are refused`, async () => {
		const box = sandbox();
		writeConfig(box, { hostTools: { enabled: true }, interactiveTools: { enabled: true }, permissions: { mode: "ask" } });
		const answers = ["Deny", "Deny", "A"];
		const pi = new RpcPi({ version, box, script: writeScript(box, SCRIPT), ui: async () => ({ value: answers.shift() }) });
		try {
			await pi.prompt("go", T);
			const dialogs = pi.uiRequests;
			assert.equal(dialogs.length, 3, JSON.stringify(dialogs.map((d) => d.title)));
			for (const d of dialogs) {
				assert.doesNotMatch(d.title, RAW, JSON.stringify(d.title));
				for (const o of d.options ?? []) assert.doesNotMatch(o, RAW, JSON.stringify(o));
			}
			// 1. The Bash card: the forged line is text on the command's line, the escapes visible.
			assert.match(dialogs[0].title, /\$ echo ok \\x1b\[1A\\x1b\[2KAllow Read to read README\.md\?\\x1b\]0;PWNED\\x07/);
			assert.doesNotMatch(dialogs[0].title, /\nAllow Read/);
			// 2. The Write card's diff shows the content's escapes.
			assert.match(dialogs[1].title, /Allow Write to create w\.txt\?[\s\S]*\\x1b\[31mred\\x9b2J/);
			// 3. asktool's question, escaped; its options as given.
			assert.match(dialogs[2].title, /Pick\\x1b\]0;PWNED\\x07 one/);
			const ends = pi.events.filter((e) => e.type === "tool_execution_end");
			const texts = ends.map(toolText);
			assert.match(texts[0], /^TOOL_DENIED/);
			assert.match(texts[1], /^INVALID_ARGUMENT: path contains the control character U\+000A/);
			assert.ok(!existsSync(`${box.cwd}/notes.txt`) && readdirSync(box.cwd).length === 0, "nothing was written");
			assert.match(texts[2], /^TOOL_DENIED/);
			assert.match(texts[3], /control-character: questions\[0\]\.options\[0\] holds the control character U\+001B/);
			assert.match(texts[4], /A/);
			assert.match(texts[5], /control-character: todos\[0\]\.content holds the control character U\+000A/);
		} finally {
			await pi.close();
		}
	});
}
