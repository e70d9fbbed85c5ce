// Helpers for the Shell Sessions addon suite: a manager with bash, the process table, small waits.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { native } from "./addon.mjs";

// Recovery files go under the OS temp dir: give this test process its own (the addon reads TMPDIR per file).
const privateTmp = mkdtempSync(join(tmpdir(), "pct-shell-test-"));
process.env.TMPDIR = privateTmp;
process.on("exit", () => rmSync(privateTmp, { recursive: true, force: true }));

export const BASH = { shell: "/bin/bash", args: ["-c"] };

/** A manager plus `exec`/`write` shorthands that run in `cwd` with bash. */
export function shellManager(options, cwd = "/tmp") {
	const m = new native.ShellManager(options);
	const ctx = (extra = {}) => ({ cwd, shell: BASH, ...extra });
	return {
		m,
		exec: (args, extra, callId) => m.exec(args, ctx(extra), callId),
		write: (args, extra, callId) => m.writeStdin(args, ctx(extra), callId),
	};
}

/** Process state letter from /proc (R, S, Z, ...) or null when the pid is gone. */
export function procState(pid) {
	try {
		const s = readFileSync(`/proc/${pid}/stat`, "utf8");
		return s.slice(s.lastIndexOf(")") + 2).split(" ")[0];
	} catch {
		return null;
	}
}

/** Live (non-zombie) pids whose process group is `pgid`, from the process table. */
export function liveGroupMembers(pgid) {
	const out = [];
	for (const name of readdirSync("/proc")) {
		if (!/^\d+$/.test(name)) continue;
		try {
			const s = readFileSync(`/proc/${name}/stat`, "utf8");
			const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
			if (Number(f[2]) === pgid && f[0] !== "Z" && f[0] !== "X") out.push(Number(name));
		} catch {}
	}
	return out;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
