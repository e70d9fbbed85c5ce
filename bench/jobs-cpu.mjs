// What one footer refresh costs Node's main thread to learn a running background task's CPU time, beside a named
// baseline in the same run, as a ratio: the engine's whole `taskList()` call (the listing, each stream's last lines
// and one Rust scan of /proc for every running task's group: `HostTask.cpuMs`) vs the JavaScript scan of /proc alone
// (readdirSync + readFileSync of every /proc/<pid>/stat, as src/pi/status.ts did on top of its `taskList()` call).
// A ratio below 1 means the whole new call costs less than the old scan did by itself. Both run synchronously on
// the main thread. Linux only.
// Usage: node bench/jobs-cpu.mjs [--quick]   (build the addon first; a release build is what users run)
import { mkdirSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { native } from "../__test__/helpers/addon.mjs";
import { tempDir } from "../scripts/tmp.mjs";

if (process.platform !== "linux") {
	console.log("jobs-cpu: Linux only (/proc)");
	process.exit(0);
}
const quick = process.argv.includes("--quick");
const rounds = quick ? 200 : 2000;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The baseline: the footer's former JavaScript reader of a process group's CPU time. */
function jsGroupCpuMs(pgid) {
	let ticks = 0;
	let found = false;
	for (const n of readdirSync("/proc")) {
		if (!/^\d+$/.test(n)) continue;
		let stat;
		try {
			stat = readFileSync(`/proc/${n}/stat`, "utf8");
		} catch {
			continue;
		}
		const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		if (Number(f[2]) !== pgid) continue;
		found = true;
		ticks += Number(f[11]) + Number(f[12]);
	}
	return found ? ticks * 10 : null;
}

const dir = realpathSync(tempDir("pct-bench-jobs-"));
mkdirSync(join(dir, "ws"));
mkdirSync(join(dir, "agent"));
const s = new native.HostSession(join(dir, "ws"), join(dir, "agent"), "bench-jobs");
try {
	const t = await s.bash({ command: "exec sleep 600", runInBackground: true });
	if (!t.ok) throw new Error(t.message);
	let pgid;
	for (let i = 0; i < 200 && pgid === undefined; i++) {
		const l = s.taskList();
		const task = l.ok ? l.tasks.find((x) => x.backgroundTaskId === t.backgroundTaskId) : undefined;
		if (task?.cpuMs !== undefined) pgid = task.processGroup;
		else await new Promise((r) => setTimeout(r, 10));
	}
	if (pgid === undefined) throw new Error("the task's CPU time was never listed");
	const engine = [], baseline = [];
	for (let i = 0; i < rounds; i++) {
		// Interleaved pairs: load on the machine hits both sides alike.
		let t0 = performance.now();
		s.taskList();
		engine.push(performance.now() - t0);
		t0 = performance.now();
		jsGroupCpuMs(pgid);
		baseline.push(performance.now() - t0);
	}
	const procs = readdirSync("/proc").filter((n) => /^\d+$/.test(n)).length;
	console.log(`\nOne footer refresh's CPU read of a running task, main-thread time (median of ${rounds} interleaved pairs, ${procs} processes in /proc)`);
	console.table([{ "JS /proc scan alone µs": (median(baseline) * 1000).toFixed(0), "whole taskList() with cpuMs µs": (median(engine) * 1000).toFixed(0), ratio: (median(engine) / median(baseline)).toFixed(2) }]);
} finally {
	s.closeTasks();
}
