// Delegate mechanism benchmark (docs/agents.md "How a delegate runs"): what one delegate costs from spawn to its final
// answer, for the two ways Pi can run a child, interleaved pairs (rpc, json, rpc, ...), ratio rpc/json pair by pair:
//  - rpc:  `pi --mode rpc --no-session` + one `prompt` command on stdin, until `agent_end` (what Task uses: it carries
//          the extension UI protocol, so the delegate's cards can be shown in the parent);
//  - json: `pi --mode json --no-session -p <prompt>` (what Pi's own subagent example uses), until the process exits.
// Both load this toolkit and the faux model (one scripted answer), offline, in a fresh sandbox per sample.
//   node_modules/node/bin/node bench/agents.mjs [--runs N]
import { spawn } from "node:child_process";
import { sandbox, writeScript, writeToolConfig, PI_VERSIONS, NODE22, FAUX, ROOT } from "../__test__/helpers/pi.mjs";

const i = process.argv.indexOf("--runs");
const runs = i >= 0 ? Number(process.argv[i + 1]) : 5;
const version = PI_VERSIONS[PI_VERSIONS.length - 1];

function once(mode) {
	const box = sandbox("pct-bench-agents-");
	writeToolConfig(box, { hostTools: { enabled: true } });
	const script = writeScript(box, `export default [{ text: "answer" }];`);
	const args = [version.cli, "--no-session", "-ne", "-e", FAUX, "-e", ROOT, "--provider", "faux", "--model", "faux-1", "--tools", "Read,Glob,Grep"];
	if (mode === "json") args.push("--mode", "json", "-p", "go");
	else args.push("--mode", "rpc");
	const env = { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0", PCT_FAUX_SCRIPT: script };
	const t0 = performance.now();
	return new Promise((resolve) => {
		const c = spawn(NODE22, args, { cwd: box.cwd, env, stdio: [mode === "rpc" ? "pipe" : "ignore", "pipe", "ignore"] });
		let done = false;
		let buf = "";
		c.stdout.on("data", (d) => {
			buf += d;
			if (process.env.DEBUG_BENCH) process.stderr.write(d);
			if (mode === "rpc" && !done && buf.includes('"type":"agent_end"')) {
				done = true;
				const ms = performance.now() - t0;
				c.stdin.end();
				c.on("close", () => resolve(ms));
			}
		});
		if (mode === "rpc") c.stdin.write(`${JSON.stringify({ id: "1", type: "prompt", message: "go" })}\n`);
		else c.on("close", () => resolve(performance.now() - t0));
	});
}

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const rpc = [];
const json = [];
const ratios = [];
await once("rpc"); // warm the jiti and compile caches of this machine once
for (let r = 0; r < runs; r++) {
	const a = await once("rpc");
	const b = await once("json");
	rpc.push(a);
	json.push(b);
	ratios.push(a / b);
}
console.log(`Pi ${version.name}, ${runs} pairs: rpc median ${median(rpc).toFixed(0)} ms, json median ${median(json).toFixed(0)} ms, ratio rpc/json median ${median(ratios).toFixed(2)}`);
