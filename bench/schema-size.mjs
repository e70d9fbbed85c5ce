// What the tool list costs: the bytes of the tools exactly as the real Pi hands them to the model on the first
// request (name + description + parameters, as JSON), per preset and per Pi version, beside Pi alone, before and
// after the trim of docs/rules.md "What the tool list costs", and against the documented targets.
// Usage: node bench/schema-size.mjs [--detail] [--pi 1.6.0] [--root DIR] [--json]
//   (Node >= 22.19; build the addon first: npm run build:debug). `--root` measures another checkout of the toolkit
//   (how bench/schema-size.before.json was recorded, from the commit it names); `--json` prints the raw numbers.
// A faux provider (bench/schema-probe.ts) records the request's tools; nothing leaves the machine.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { NODE22, PI_VERSIONS, ROOT, sandbox, writeConfig } from "../__test__/helpers/pi.mjs";
import { ALL_ON, CODEX_ROUTE, presetConfig } from "./helpers/configs.mjs";

const arg = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const detail = process.argv.includes("--detail");
const asJson = process.argv.includes("--json");
const root = resolve(arg("--root") ?? ROOT);
const PROBE = join(ROOT, "bench/schema-probe.ts");
/** The first-request targets (docs/rules.md "What the tool list costs"), measured in Pi 1.6.0. */
export const TARGETS = { host: 4200, all: 9000, route: 6500 };
// Rows: a key, a label, the toolkit config (null = Pi without the toolkit), the target key.
export const ROWS = [
	["pi", "Pi alone (read, bash, edit, write)", null],
	["off", "toolkit, every feature off", {}],
	["pi-preset", "preset Pi's own + extras", presetConfig("pi")],
	["host", "preset Host tools (with find_tools)", presetConfig("host"), "host"],
	["codex", "preset Codex tools", presetConfig("codex")],
	["route", "Codex route: preset Codex tools + find_tools", CODEX_ROUTE, "route"],
	["flags", "flags: patch + shell + code + find_tools, Pi's four kept", { applyPatch: { enabled: true }, shellSessions: { enabled: true }, codeMode: { enabled: true }, toolDiscovery: { enabled: true } }],
	["all", "every feature on", ALL_ON, "all"],
];

/** The tools (and the system prompt) of the first model request for one config. */
export async function measure(version, config, extensionRoot = ROOT) {
	const box = sandbox("pct-schema-");
	if (config) writeConfig(box, config);
	const out = join(box.base, "tools.json");
	const args = [version.cli, "--no-session", "-ne", "-e", PROBE];
	if (config) args.push("-e", extensionRoot);
	args.push("--provider", "faux", "--model", "faux-1", "--mode", "json", "go");
	const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_SCHEMA_OUT: out };
	delete env.NODE_OPTIONS;
	const child = spawn(NODE22, args, { cwd: box.cwd, env, stdio: ["ignore", "ignore", "pipe"] });
	let stderr = "";
	child.stderr.on("data", (d) => (stderr += d));
	const [code] = await once(child, "close");
	if (code !== 0 || !existsSync(out)) throw new Error(`pi ${version.name} exited ${code}: ${stderr.slice(-1500)}`);
	return JSON.parse(readFileSync(out, "utf8"));
}

/** Bytes of one tool or a tool list as the model receives it (JSON of name + description + parameters). */
export const bytes = (v) => Buffer.byteLength(JSON.stringify(v));

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
	const fmt = (n) => (n === undefined ? "—" : n.toLocaleString("en-US"));
	const beforeFile = join(ROOT, "bench/schema-size.before.json");
	const before = existsSync(beforeFile) ? JSON.parse(readFileSync(beforeFile, "utf8")) : { versions: {} };
	const raw = {};
	for (const version of PI_VERSIONS.filter((v) => !arg("--pi") || v.name === arg("--pi"))) {
		raw[version.name] = {};
		const was = before.versions[version.name] ?? {};
		if (!asJson) {
			console.log(`\nPi ${version.name}: bytes of the first request's tools (JSON of name + description + parameters)`);
			console.log(`before = ${before.commit ?? "—"} (bench/schema-size.before.json); targets hold in Pi 1.6.0\n`);
			console.log("| configuration | tools | before | after | after / before | vs Pi alone | target |");
			console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
		}
		let base = 0;
		for (const [key, label, config, target] of ROWS) {
			const { tools } = await measure(version, config, root);
			const total = bytes(tools);
			if (config === null) base = total;
			raw[version.name][key] = { total, tools: Object.fromEntries(tools.map((t) => [t.name, bytes(t)])) };
			if (asJson) continue;
			const prev = was[key]?.total;
			const goal = target ? `≤ ${fmt(TARGETS[target])} ${total <= TARGETS[target] ? "✓" : "✗"}` : "";
			console.log(`| ${label} | ${tools.map((t) => t.name).join(", ")} | ${fmt(prev)} | ${fmt(total)} | ${prev ? (total / prev).toFixed(2) + "×" : "—"} | ${(total / base).toFixed(2)}× | ${goal} |`);
			if (detail) for (const t of tools) console.log(`|   ${t.name} | | ${fmt(was[key]?.tools?.[t.name])} | ${fmt(bytes(t))} | | | |`);
		}
	}
	if (asJson) console.log(JSON.stringify({ versions: raw }, null, 1));
}
