// The toolkit's Codex tools beside Codex's own definitions as last checked (docs/codex-parity.md; the facts recorded
// in __test__/fixtures/codex/ with the commit of each Codex file read): what a GPT model trained on Codex is trained
// to send — the freeform grammars byte for byte, the tool names, the parameter names — must stay what Codex sends.
// A difference the toolkit keeps on purpose is listed here by name, so a new one fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { APPLY_PATCH_LARK } from "../src/pi/tools/patch.ts";
import { EXEC_SOURCE_GRAMMAR, execSchema, waitSchema } from "../src/pi/tools/code.ts";
import { execCommandSchema, writeStdinSchema } from "../src/pi/tools/shell.ts";

const DIR = join(import.meta.dirname, "fixtures", "codex");
const codex = JSON.parse(readFileSync(join(DIR, "tools.json"), "utf8"));
const shown = (schema) => Object.keys(schema.properties).sort();

test("the freeform grammars are Codex's, byte for byte", () => {
	assert.equal(APPLY_PATCH_LARK, readFileSync(join(DIR, "apply_patch.lark"), "utf8"));
	assert.equal(EXEC_SOURCE_GRAMMAR, readFileSync(join(DIR, "exec.lark"), "utf8"));
});

test("exec_command, write_stdin and wait show Codex's parameter names; the differences are the listed ones", () => {
	// exec_command: a subset of Codex's names (shell, tty, login and the sandbox fields are refused by name in Rust).
	const exec = shown(execCommandSchema);
	assert.deepEqual(exec.filter((p) => !codex.tools.exec_command.params.includes(p)), []);
	assert.ok(exec.includes("cmd"));
	assert.deepEqual(codex.tools.exec_command.params.filter((p) => !exec.includes(p)), ["justification", "login", "prefix_rule", "sandbox_permissions", "shell", "tty"]);
	// write_stdin: all of Codex's names, plus closing stdin and stopping the session (Codex stops with Ctrl-C bytes).
	const write = shown(writeStdinSchema);
	assert.deepEqual(codex.tools.write_stdin.params.filter((p) => !write.includes(p)), []);
	assert.deepEqual(write.filter((p) => !codex.tools.write_stdin.params.includes(p)), ["closeStdin", "terminate"]);
	// wait: exactly Codex's names.
	assert.deepEqual(shown(waitSchema), codex.tools.wait.params);
	// exec: the freeform tool's one string (`code`) carries the program; `uses` narrows the nested tools.
	assert.deepEqual(execSchema.required, ["code"]);
});
