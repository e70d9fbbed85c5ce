// A missing engine binary in the real Pi (0.87.1 and 1.6.0): the package is copied without its binary and without
// node_modules, so the loader finds neither the file next to index.js nor the platform package — what a user gets
// when npm skipped the optional dependency. Pi starts, /pct status explains (triple, packages looked for, fix), the
// start-up warning appears once, and no toolkit tool exists (docs/release.md §Missing binary).
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, toolText, writeConfig, writeScript } from "../helpers/pi.mjs";
import { platformTriple } from "../../src/pi/native.ts";

const TRIPLE = platformTriple();
const VERSION = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;

/** The package as npm would unpack it, minus the platform package: package.json, loader, types, TypeScript glue and
 * its bundle (the manifest's entry, docs/release.md "The bundled entry"). */
function packageWithoutBinary(box) {
	const dir = join(box.base, "pkg");
	mkdirSync(dir);
	for (const f of ["package.json", "index.js", "index.d.ts", "src", "dist"]) cpSync(join(ROOT, f), join(dir, f), { recursive: true, filter: (p) => !p.endsWith(".rs") });
	return dir;
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] no engine binary: Pi starts, /pct status names triple, packages and fix; one warning; no tool`, async () => {
		const box = sandbox();
		try {
			writeConfig(box, { applyPatch: { enabled: true }, shellSessions: { enabled: true } });
			const pkg = packageWithoutBinary(box);
			const pi = new RpcPi({ version, box, extensions: [pkg] });
			let text;
			try {
				const { notifications } = await pi.prompt("/pct status");
				text = notifications.at(-1);
				assert.match(text, new RegExp(`^Pi Codex Toolkit is off: its native engine could not be loaded on ${TRIPLE}\\.`));
				assert.match(text, new RegExp(`looked for: pi-codex-toolkit\\.${TRIPLE}\\.node next to index\\.js; npm package pi-codex-toolkit-${TRIPLE}@${VERSION.replace(/\./g, "\\.")}`));
				assert.match(text, /\n {2}fix: reinstall so npm fetches pi-codex-toolkit-/);
				// The start-up warning plus this status: the same text twice, never more.
				assert.equal(pi.notifications.filter((n) => n === text).length, 2, JSON.stringify(pi.notifications));
				const cmds = await pi.command("get_commands");
				assert.ok(cmds.data.commands.some((c) => c.name === "pct"));
			} finally {
				assert.equal(await pi.close(), 0, pi.stderr);
			}

			// Json mode: the model calls apply_patch; Pi has no such tool, and the warning goes to stderr once.
			const script = writeScript(box, `export default [
				{ tools: [{ name: "apply_patch", args: { patch: "*** Begin Patch\\n*** Add File: a.txt\\n+x\\n*** End Patch" } }] },
				{ text: "done" },
			];`);
			const r = await runJson({ version, box, script, extensions: [pkg] });
			assert.equal(r.code, 0, r.stderr);
			assert.equal(r.toolEnds.length, 1);
			assert.equal(r.toolEnds[0].isError, true);
			assert.match(toolText(r.toolEnds[0]), /apply_patch/i);
			assert.doesNotMatch(toolText(r.toolEnds[0]), /Applied patch/);
			assert.equal(r.stderr.split(text).length - 1, 1, r.stderr);
		} finally {
			rmSync(box.base, { recursive: true, force: true });
		}
	});
}
