// System tools some suites need (README "Set up (from a clone)"). A missing one fails the test with the command that
// installs it: a skip would let a run without the tool pass without ever testing what needs it.
import { spawnSync } from "node:child_process";
import assert from "node:assert/strict";

/** Whether `cmd args` runs and exits 0. */
export const have = (cmd, args) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

/**
 * Fails the calling test unless every `[cmd, args]` in `tools` runs; the message names what is missing and `install`.
 * @param {Array<[string, string[]]>} tools
 * @param {string} install the command that installs them, e.g. "apt-get install -y tmux"
 */
export function requireTools(tools, install) {
	const missing = tools.filter(([cmd, args]) => !have(cmd, args)).map(([cmd]) => cmd);
	assert.deepEqual(missing, [], `missing ${missing.join(", ")}: this test needs it; install with \`${install}\` (README "Set up (from a clone)")`);
}
