// Benchmarks of the foundation, each beside a named baseline in the same run, reported as a ratio:
//  (a) load cost in the real Pi: start-up to the first event with the toolkit vs without it (baseline: Pi alone);
//  (b) config read+validate and save latency vs plain Node fs (readFileSync+JSON.parse; writeFileSync+renameSync).
// Usage: node bench/config.mjs [--quick]
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { native } from "../__test__/helpers/addon.mjs";
import { FAUX, NODE22, PI_VERSIONS, ROOT, sandbox } from "../__test__/helpers/pi.mjs";
import { onExit, tempDir } from "../scripts/tmp.mjs";

const quick = process.argv.includes("--quick");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The Pi being timed, spawned here rather than by the helpers: killed at exit (this hook runs before the one that
// removes the sandboxes) so an interrupted run's Pi cannot write into its sandbox after it is removed.
let timed = null;
onExit(() => timed?.kill("SIGKILL"));

function firstEventMs(version, withToolkit, box) {
	const args = [version.cli, "--no-session", "-ne", "-e", FAUX, ...(withToolkit ? ["-e", ROOT] : []), "--provider", "faux", "--model", "faux-1", "--mode", "rpc"];
	return new Promise((resolve, reject) => {
		const t0 = performance.now();
		const child = spawn(NODE22, args, {
			cwd: box.cwd,
			env: { ...process.env, PI_CODING_AGENT_DIR: box.agentDir, TMPDIR: box.tmp, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" },
			stdio: ["pipe", "pipe", "ignore"],
		});
		timed = child;
		child.stdout.once("data", () => {
			const ms = performance.now() - t0;
			child.kill("SIGKILL");
			resolve(ms);
		});
		child.stdin.write(JSON.stringify({ id: "1", type: "get_state" }) + "\n");
		child.on("error", reject);
	});
}

async function loadCost() {
	const rounds = quick ? 3 : 9;
	const rows = [];
	for (const version of PI_VERSIONS) {
		const box = sandbox("pct-bench-");
		await firstEventMs(version, true, box); // warm jiti and compile caches
		await firstEventMs(version, false, box);
		const base = [], tk = [];
		for (let i = 0; i < rounds; i++) {
			base.push(await firstEventMs(version, false, box));
			tk.push(await firstEventMs(version, true, box));
		}
		rows.push({ pi: version.name, "pi alone ms": median(base).toFixed(0), "pi + toolkit ms": median(tk).toFixed(0), ratio: (median(tk) / median(base)).toFixed(2) });
	}
	console.log("\n(a) Pi start-up to first RPC event (median of", rounds, "runs, warm caches)");
	console.table(rows);
}

async function configLatency() {
	const dir = tempDir("pct-bench-cfg-");
	const p = join(dir, "pi-codex-toolkit.json");
	const raw = { ...native.configDefaults(), execution: { version: 1, rules: Array.from({ length: 20 }, (_, i) => ({ id: `r${i}`, match: `gpt-${i}*`, patch: true, shell: i % 2 === 0, code: false })) } };
	writeFileSync(p, JSON.stringify(raw, null, 2) + "\n");
	const n = quick ? 200 : 2000;
	const time = (fn) => { const t0 = performance.now(); for (let i = 0; i < n; i++) fn(); return ((performance.now() - t0) / n) * 1000; };
	const readOurs = time(() => native.configRead(p));
	const readBase = time(() => JSON.parse(readFileSync(p, "utf8")));
	let rev = native.configRead(p).revision;
	const m = quick ? 50 : 300;
	let t0 = performance.now();
	for (let i = 0; i < m; i++) {
		raw.debug = !raw.debug;
		const out = await native.configSave(p, raw, rev);
		if (!out.ok) throw new Error(out.message);
		rev = out.revision;
	}
	const saveOurs = ((performance.now() - t0) / m) * 1000;
	t0 = performance.now();
	for (let i = 0; i < m; i++) {
		raw.debug = !raw.debug;
		writeFileSync(p + ".tmp", JSON.stringify(raw, null, 2) + "\n");
		renameSync(p + ".tmp", p);
	}
	const saveBase = ((performance.now() - t0) / m) * 1000;
	console.log("\n(b) config latency, microseconds per operation");
	console.table([
		{ op: "read + validate (+SHA-256)", "toolkit µs": readOurs.toFixed(1), "baseline µs": readBase.toFixed(1), baseline: "readFileSync + JSON.parse", ratio: (readOurs / readBase).toFixed(2) },
		{ op: "save (lock, re-read, fsync, rename)", "toolkit µs": saveOurs.toFixed(1), "baseline µs": saveBase.toFixed(1), baseline: "writeFileSync + renameSync (no lock, no fsync)", ratio: (saveOurs / saveBase).toFixed(2) },
	]);
}

await loadCost();
await configLatency();
