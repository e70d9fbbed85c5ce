// Shell Sessions benchmarks, each beside a named baseline in the same run, reported as a ratio:
//  (a) exec_command latency to a completed result for `true` and `echo hi` vs Node's child_process.spawn of the
//      same shell command (baseline: spawn + wait for close);
//  (b) throughput of 1 GiB of output through the capture path (decode, preview budget, recovery file) vs
//      `cat > /dev/null` of the same stream (the physical limit of the pipe), with the peak RSS of the capturing
//      process;
//  (c) 16 concurrent sessions producing output, to completion, vs 16 concurrent child_process.spawn;
//  (d) terminate of a running `sleep` to a confirmed `terminated` result (SIGTERM to the group, the PCT_JOB marker
//      scan of /proc for escaped descendants, confirmation) vs child_process.spawn(detached) + kill(-pgid) + close.
// Usage: node bench/shell.mjs [--quick] [--only latency|throughput|concurrent|terminate]   (build with `npx napi build --platform --release` first)
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { native } from "../__test__/helpers/addon.mjs";
import { tempDir } from "../scripts/tmp.mjs";

const quick = process.argv.includes("--quick");
const SH = { shell: "/bin/bash", args: ["-c"] };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const tmp = tempDir("pct-bench-shell-");
process.env.TMPDIR = tmp; // recovery files of this run

function spawnToClose(cmd) {
	return new Promise((resolve, reject) => {
		const c = spawn(SH.shell, [...SH.args, cmd], { stdio: ["pipe", "pipe", "pipe"] });
		let out = 0;
		c.stdout.on("data", (d) => (out += d.length));
		c.stderr.on("data", () => {});
		c.on("error", reject);
		c.on("close", (code) => resolve({ code, out }));
	});
}

async function execToCompletion(m, cmd, yieldMs = 60000) {
	const ctx = { cwd: tmp, shell: SH };
	let r = await m.exec({ cmd, yield_time_ms: yieldMs }, ctx);
	if (!r.ok) throw new Error(r.text);
	while (r.details.status === "running") {
		r = await m.writeStdin({ session_id: r.details.sessionId, yield_time_ms: yieldMs, maxOutputBytes: 1024 }, ctx);
		if (!r.ok) throw new Error(r.text);
	}
	return r.details;
}

async function latency() {
	const m = new native.ShellManager();
	const rounds = quick ? 30 : 300;
	const rows = [];
	for (const cmd of ["true", "echo hi"]) {
		for (let i = 0; i < 10; i++) (await execToCompletion(m, cmd), await spawnToClose(cmd)); // warm-up
		const ours = [], base = [];
		for (let i = 0; i < rounds; i++) {
			let t = performance.now();
			const d = await execToCompletion(m, cmd);
			ours.push(performance.now() - t);
			if (d.status !== "completed") throw new Error("not completed");
			t = performance.now();
			await spawnToClose(cmd);
			base.push(performance.now() - t);
		}
		rows.push({
			command: cmd,
			"exec_command median ms": median(ours).toFixed(2),
			"exec_command p90 ms": p90(ours).toFixed(2),
			"child_process.spawn median ms": median(base).toFixed(2),
			"ratio (median)": (median(ours) / median(base)).toFixed(2),
		});
	}
	await m.close();
	console.log(`\n(a) latency to a completed result (${rounds} runs each, interleaved)`);
	console.table(rows);
}

/** Runs the capture in a fresh Node process so its peak RSS (VmHWM) is its own. */
function captureInChild(bytes) {
	return new Promise((resolve, reject) => {
		const c = spawn(process.execPath, [fileURLToPath(import.meta.url), "--capture-child", String(bytes)], {
			stdio: ["ignore", "pipe", "inherit"],
			env: { ...process.env, TMPDIR: tmp },
		});
		let out = "";
		c.stdout.on("data", (d) => (out += d));
		c.on("error", reject);
		c.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exit ${code}`))));
	});
}

const status = (k) => Number(readFileSync("/proc/self/status", "utf8").match(new RegExp(`${k}:\\s+(\\d+)`))[1]) / 1024;

async function captureChild(bytes) {
	const m = new native.ShellManager();
	const rssBefore = status("VmRSS");
	const t = performance.now();
	const d = await execToCompletion(m, `yes | head -c ${bytes}`);
	const ms = performance.now() - t;
	if (d.recovery.bytes !== bytes) throw new Error(`captured ${d.recovery.bytes} of ${bytes}`);
	await m.close();
	m.deleteRecoveryFiles();
	process.stdout.write(JSON.stringify({ ms, rssBefore, hwm: status("VmHWM") }));
}

async function throughput() {
	const bytes = quick ? 64 * 1048576 : 1024 * 1048576;
	const rounds = quick ? 1 : 2;
	const ours = [], base = [];
	let peak = 0, before = 0;
	for (let i = 0; i < rounds; i++) {
		const t = performance.now();
		await spawnToClose(`yes | head -c ${bytes} | cat > /dev/null`);
		base.push(performance.now() - t);
		const r = await captureInChild(bytes);
		ours.push(r.ms);
		peak = Math.max(peak, r.hwm);
		before = r.rssBefore;
	}
	const mib = bytes / 1048576;
	console.log(`\n(b) ${mib} MiB of output (best of ${rounds})`);
	console.table([
		{
			path: "exec_command capture (decode + preview + recovery file)",
			ms: Math.min(...ours).toFixed(0),
			"MiB/s": (mib / (Math.min(...ours) / 1000)).toFixed(0),
			"peak RSS MiB": peak.toFixed(0),
			"RSS at start MiB": before.toFixed(0),
		},
		{ path: "baseline: same stream | cat > /dev/null", ms: Math.min(...base).toFixed(0), "MiB/s": (mib / (Math.min(...base) / 1000)).toFixed(0) },
	]);
	console.log(`ratio (capture time / cat time): ${(Math.min(...ours) / Math.min(...base)).toFixed(2)}; capture peak RSS ${peak.toFixed(0)} MiB (process start ${before.toFixed(0)} MiB)`);
}

async function concurrent() {
	const n = 16;
	const cmd = "for i in $(seq 2000); do echo line $i; done; sleep 0.05";
	const rounds = quick ? 3 : 10;
	const m = new native.ShellManager();
	const ours = [], base = [];
	for (let i = 0; i < rounds; i++) {
		let t = performance.now();
		const ds = await Promise.all(Array.from({ length: n }, () => execToCompletion(m, cmd)));
		ours.push(performance.now() - t);
		if (!ds.every((d) => d.status === "completed" && d.exitCode === 0)) throw new Error("a session failed");
		t = performance.now();
		await Promise.all(Array.from({ length: n }, () => spawnToClose(cmd)));
		base.push(performance.now() - t);
	}
	await m.close();
	m.deleteRecoveryFiles();
	console.log(`\n(c) ${n} concurrent sessions to completion (median of ${rounds})`);
	console.table([
		{ path: "16 x exec_command", "median ms": median(ours).toFixed(1) },
		{ path: "baseline: 16 x child_process.spawn", "median ms": median(base).toFixed(1) },
	]);
	console.log(`ratio: ${(median(ours) / median(base)).toFixed(2)}`);
}

async function terminate() {
	const rounds = quick ? 20 : 100;
	const m = new native.ShellManager();
	const ctx = { cwd: tmp, shell: SH };
	const ours = [], base = [];
	for (let i = 0; i < rounds + 5; i++) {
		const r = await m.exec({ cmd: "sleep 1000", yield_time_ms: 0 }, ctx);
		let t = performance.now();
		const s = await m.writeStdin({ session_id: r.details.sessionId, terminate: true }, ctx);
		const ms = performance.now() - t;
		if (s.details.status !== "terminated" || s.details.unknownOutcome) throw new Error(s.text);
		const c = spawn(SH.shell, [...SH.args, "sleep 1000"], { stdio: ["pipe", "pipe", "pipe"], detached: true });
		await new Promise((r) => c.on("spawn", r));
		const closed = new Promise((r) => c.on("close", r));
		t = performance.now();
		process.kill(-c.pid, "SIGTERM");
		await closed;
		if (i >= 5) (ours.push(ms), base.push(performance.now() - t)); // 5 warm-up rounds
	}
	await m.close();
	console.log(`\n(d) terminate of a running command to a confirmed result (${rounds} runs)`);
	console.table([
		{ path: "write_stdin terminate (group + marker scan + confirm)", "median ms": median(ours).toFixed(2), "p90 ms": p90(ours).toFixed(2) },
		{ path: "baseline: kill(-pgid) + close of a detached spawn", "median ms": median(base).toFixed(2), "p90 ms": p90(base).toFixed(2) },
	]);
	console.log(`ratio (median): ${(median(ours) / median(base)).toFixed(2)}`);
}

if (process.argv.includes("--capture-child")) {
	await captureChild(Number(process.argv[process.argv.indexOf("--capture-child") + 1]));
} else {
	try {
		const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : null;
		for (const [name, run] of Object.entries({ latency, throughput, concurrent, terminate })) if (!only || only === name) await run();
	} finally {
		rmSync(tmp, { recursive: true, force: true });
	}
}
