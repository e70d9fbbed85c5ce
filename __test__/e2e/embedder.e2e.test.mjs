// The embedder seam in the real Pi: createPiCodexToolkit from another file, without a pinned sourcePath.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, runJson, sandbox, writeToolConfig as writeConfig, writeScript, toolText } from "../helpers/pi.mjs";
// These tests are about the tools, not the permission policy: their configs allow every call (writeToolConfig).

const EMBEDDER = join(ROOT, "__test__/fixtures/embedder-unpinned.ts");

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] an unpinned embedder owns the toolkit's registrations (proven by their schemas)`, async () => {
		const box = sandbox();
		writeConfig(box, { applyPatch: { enabled: true } });
		const script = writeScript(box, `export default [
			{ tools: [{ name: "apply_patch", args: { patch: "*** Begin Patch\\n*** Add File: hello.txt\\n+hi\\n*** End Patch" } }] },
			{ text: "done" },
		];`);
		const r = await runJson({ version, box, script, extensions: [EMBEDDER] });
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.toolEnds[0].isError, false, toolText(r.toolEnds[0]));
		assert.equal(readFileSync(join(box.cwd, "hello.txt"), "utf8"), "hi\n");

		const pi = new RpcPi({ version, box, extensions: [EMBEDDER] });
		try {
			const { notifications } = await pi.prompt("/pct status all");
			assert.match(notifications.join("\n"), /^Apply Patch\n  configured: on\n  effective: active\n/m);
		} finally {
			await pi.close();
		}
	});
}
