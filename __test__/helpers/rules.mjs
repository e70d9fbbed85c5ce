// Helpers of the rules end-to-end suite: the probe and stub fixtures, and reading what the probe saw.
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./pi.mjs";

export const EMBEDDER = join(ROOT, "__test__/fixtures/embedder-stubs.ts");
export const PROBE = join(ROOT, "__test__/fixtures/rules-probe.ts");
export const THIRD_PARTY = join(ROOT, "__test__/fixtures/third-party.ts");
export const HOOKS = join(ROOT, "__test__/fixtures/rules-hooks-ext.ts");

/** The names a projection is judged on: Pi's four default builtins and the toolkit's execution names. */
export const WATCHED = ["read", "bash", "edit", "write", "apply_patch", "exec_command", "write_stdin", "exec", "wait", "find_tools"];

/** Runs `/probe` in an RpcPi and returns {active, tools, records}. */
export async function probe(pi) {
	const { notifications } = await pi.prompt("/probe");
	const hit = notifications.find((n) => n.startsWith("{"));
	if (!hit) throw new Error("no probe answer: " + JSON.stringify(notifications) + pi.stderr.slice(-1000));
	return JSON.parse(hit);
}

/** The watched subset of an active list, sorted. */
export function watched(active) {
	return active.filter((n) => WATCHED.includes(n)).sort();
}

/** The json-mode probe file's records: {kind: "diagnostics", rec} | {kind: "turn", active}. */
export function probeFile(path) {
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** `/pct status` as text. */
export async function status(pi) {
	return (await pi.prompt("/pct status all")).notifications.join("\n");
}

/**
 * The block of one feature in a status text: {configured, effective, reason}. `reason` is the stable code the reason
 * line ends with (`[code]`), "" for an active feature (it has no reason line).
 */
export function featureOf(text, title) {
	const m = text.match(new RegExp(`^${title}\\n  configured: (on|off)\\n  effective: (\\w+)\\n(?:  reason: .* \\[([a-z-]+)\\]$)?`, "m"));
	if (!m) throw new Error(`no ${title} block in:\n${text}`);
	return { configured: m[1], effective: m[2], reason: m[3] ?? "" };
}
