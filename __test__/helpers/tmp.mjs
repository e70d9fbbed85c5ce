// Temp folders for node:test files that are removed when the test process exits, passed or failed (the test
// standard: tests clean up their temp folders). Each test file runs in its own process under `node --test`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made = [];
process.on("exit", () => {
	for (const d of made) {
		try {
			rmSync(d, { recursive: true, force: true });
		} catch {
			// a folder a test made read-only; nothing else to do at exit
		}
	}
});

/** A fresh folder `<tmp>/<prefix>XXXXXX`, removed at process exit. */
export function tempDir(prefix) {
	const d = mkdtempSync(join(tmpdir(), prefix));
	made.push(d);
	return d;
}
