// Helpers of the code-cell suites: a CodeManager with a scriptable host gate, and small polling utilities.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
export const native = require("../../index.js");

/** A gate allowing every call and granting file locks a lease (optionally after a delay, or denying with policy-denied). */
export function allowGate({ delayMs = 0, deny = false } = {}) {
	let seq = 0;
	return async (req) => {
		if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
		if (deny) return { allow: false, code: "policy-denied", reason: "denied by test" };
		return req?.phase === "lock" ? { allow: true, lease: `test-lease-${++seq}` } : { allow: true };
	};
}

/** A new manager; `gate` answers nested-call checks, `shell` attaches a native ShellManager when given. */
export function newManager({ gate = allowGate(), shell } = {}) {
	const m = new native.CodeManager(gate);
	if (shell && m.attachShell) m.attachShell(shell);
	return m;
}

/** Runs a program to completion (30 s yield) and returns the read. */
export async function runCell(m, code, extra = {}, options = {}) {
	const r = await m.exec({ code, yield_time_ms: 30000, ...extra }, options);
	if (r.ok === false) throw new Error(`exec refused: ${r.code}: ${r.message}`);
	return r;
}

