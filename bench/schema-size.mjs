// What the tool list costs: the bytes of the tools exactly as the real Pi hands them to the model on the first
// request (name + description + parameters, as JSON), per preset and per Pi version, beside Pi alone.
// Usage: node bench/schema-size.mjs [--detail]   (Node >= 22.19; build the addon first: npm run build:debug)
// A faux provider (bench/schema-probe.ts) records the request's tools; nothing leaves the machine.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { NODE22, PI_VERSIONS, ROOT, sandbox, writeConfig } from "../__test__/helpers/pi.mjs";

const native = createRequire(import.meta.url)("../index.js");
const detail = process.argv.includes("--detail");
const PROBE = join(ROOT, "bench/schema-probe.ts");
const preset = (key, extra = {}) => ({ ...native.configPresetApply({}, key), ...extra });
const ALL_ON = {
	applyPatch: { enabled: true },
	shellSessions: { enabled: true },
	codeMode: { enabled: true },
	toolDiscovery: { enabled: true },
	hostTools: { enabled: true },
	webSearch: { enabled: true, backend: "sidecar" },
	imageGeneration: { enabled: true },
};
// Rows: a label, the toolkit config (null = Pi without the toolkit).
const ROWS = [
	["Pi alone (read, bash, edit, write)", null],
	["toolkit, every feature off", {}],
	["preset Pi's own + extras", preset("pi")],
	["preset Host tools", preset("host")],
	["preset Codex tools", preset("codex")],
	["Codex route: patch + shell + code + find_tools (flags)", { applyPatch: { enabled: true }, shellSessions: { enabled: true }, codeMode: { enabled: true }, toolDiscovery: { enabled: true } }],
	["every feature on", ALL_ON],
];

/** The tools of the first model request for one config. */
async function measure(version, config) {
	const box = sandbox("pct-schema-");
	if (config) writeConfig(box, config);
	const out = join(box.base, "tools.json");
	const args = [version.cli, "--no-session", "-ne", "-e", PROBE];
	if (config) args.push("-e", ROOT);
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

const bytes = (v) => Buffer.byteLength(JSON.stringify(v));
const fmt = (n) => n.toLocaleString("en-US");
for (const version of PI_VERSIONS) {
	console.log(`\nPi ${version.name}: bytes of the first request's tools (JSON of name + description + parameters)\n`);
	console.log("| configuration | tools | bytes | vs Pi alone |");
	console.log("| --- | --- | ---: | ---: |");
	let base = 0;
	for (const [label, config] of ROWS) {
		const tools = await measure(version, config);
		const total = bytes(tools);
		if (config === null) base = total;
		console.log(`| ${label} | ${tools.map((t) => t.name).join(", ")} | ${fmt(total)} | ${(total / base).toFixed(2)}× |`);
		if (detail) for (const t of tools) console.log(`|   ${t.name} | | ${fmt(bytes(t))} | |`);
	}
}
