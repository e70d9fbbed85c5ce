// Temp folders of the plain scripts (npm run demo, the benchmarks in bench/): each is removed when the process ends,
// whether it finishes, fails (a thrown error still emits "exit") or is stopped with SIGINT/SIGTERM, so runs leave
// nothing behind in /tmp. node:test suites clean up with their own hooks (__test__/helpers/pi.mjs).
// Importing this module changes nothing: the exit and signal handlers are installed on first use.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dirs = new Set();
const hooks = [];
let installed = false;

function install() {
	if (installed) return;
	installed = true;
	// "exit" listeners must be synchronous: nothing after them runs.
	process.on("exit", cleanUp);
	// A signal handler replaces Node's default "terminate at once", which would skip "exit"; exiting instead runs it.
	// 128 + signal number is the status a shell reports for a process killed by that signal.
	for (const [sig, n] of [["SIGINT", 2], ["SIGTERM", 15]]) process.on(sig, () => process.exit(128 + n));
}

function cleanUp() {
	// Hooks first: they stop processes that may still be writing into the folders.
	for (const fn of hooks.splice(0)) {
		try {
			fn();
		} catch (e) {
			console.error(`cleanup: ${e.message}`);
		}
	}
	for (const dir of dirs) {
		try {
			rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
		} catch (e) {
			console.error(`could not remove ${dir}: ${e.message}`);
		}
	}
	dirs.clear();
}

/** A fresh folder under the system temp dir (like mkdtempSync), removed when the process ends. */
export function tempDir(prefix) {
	const dir = mkdtempSync(join(tmpdir(), prefix));
	install();
	dirs.add(dir);
	return dir;
}

/** Runs `fn` (synchronous) when the process ends, before the temp folders are removed. */
export function onExit(fn) {
	install();
	hooks.push(fn);
}
