// Jobs do not outlive Node (docs/shell.md "When Node exits"): a child Node process loads the addon,
// starts jobs (one with a descendant that left the process group) and a recovery file, then ends by SIGKILL, SIGTERM,
// an uncaught throw or a normal exit. Every job process must be gone and the recovery file removed, by bounded
// polling (the watchdog needs well under a second; the bound only absorbs a loaded machine).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { procState } from "./helpers/shell.mjs";
import { until } from "./helpers/until.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

// The child: two jobs and a recovery file, prints what it started, then ends the way argv[1] says.
const CHILD = `
const native = require(${JSON.stringify(join(root, "index.js"))});
const m = new native.ShellManager({});
const ctx = { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-c"] } };
(async () => {
	const a = await m.exec({ cmd: "echo $$; setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!; sleep 1000 & echo $!; wait", yield_time_ms: 0 }, ctx);
	let out = a.details.stdout;
	while (out.split("\\n").length < 4) out += (await m.writeStdin({ session_id: a.details.sessionId, yield_time_ms: 200 }, ctx)).details.stdout;
	const b = await m.exec({ cmd: "echo $$; head -c 5000 /dev/zero | tr '\\\\0' x; echo; exec sleep 1000", yield_time_ms: 500, maxOutputBytes: 1024 }, ctx);
	const pids = [...out.trim().split("\\n"), b.details.stdout.split("\\n")[0]].map(Number);
	console.log(JSON.stringify({ pids, files: m.recoveryFiles() }));
	// end only when the test says so (after it found the watchdog); sigterm / sigkill: wait to be killed
	process.stdin.once("data", () => {
		const how = process.argv[1];
		if (how === "exit") process.exit(0);
		if (how === "throw") throw new Error("uncaught on purpose");
	});
})();
`;

const alive = (pid) => {
	const s = procState(pid);
	return s !== null && s !== "Z" && s !== "X";
};

/** The job processes of `pids` still alive. */
const markedBy = (pids) => pids.filter(alive);

/** The watchdog started by Node process `ppid` (found by its command line), or undefined. */
function watchdogOf(ppid) {
	for (const d of readdirSync("/proc")) {
		if (!/^\d+$/.test(d)) continue;
		try {
			const stat = readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1].split(" ");
			if (Number(stat[1]) === ppid && readFileSync(`/proc/${d}/cmdline`, "utf8").includes("pi-codex-toolkit-watchdog")) return Number(d);
		} catch {}
	}
}

for (const how of ["sigkill", "sigterm", "throw", "exit"]) {
	test(`when Node ends by ${how}, every job process is killed and the recovery file removed`, { timeout: 60000 }, async () => {
		const child = spawn(process.execPath, ["-e", CHILD, how], { stdio: ["pipe", "pipe", "pipe"] });
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (d) => (stdout += d));
		child.stderr.on("data", (d) => (stderr += d));
		const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
		await until(() => `child started: ${stderr}`, () => stdout.includes("\n"), { ms: 30000 });
		const { pids, files } = JSON.parse(stdout.split("\n")[0]);
		assert.equal(pids.length, 4, stdout);
		const watchdog = watchdogOf(child.pid);
		assert.equal(typeof watchdog, "number", "the watchdog started with the first job");
		assert.deepEqual(pids.filter(alive), pids, "every job process runs while Node lives");
		assert.equal(files.length, 2, "each yield with output created a recovery file");
		const filesLeft = () => files.filter((f) => existsSync(f));
		assert.deepEqual(filesLeft(), files);
		if (how === "sigkill") child.kill("SIGKILL");
		else if (how === "sigterm") child.kill("SIGTERM");
		else child.stdin.write("go\n");
		const end = await exited;
		const t0 = Date.now();
		if (how === "sigkill") assert.equal(end.signal, "SIGKILL");
		if (how === "throw") assert.match(stderr, /uncaught on purpose/);
		await until(() => `still alive: ${markedBy(pids)}; files left: ${filesLeft()}`, () => markedBy(pids).length === 0 && filesLeft().length === 0, { ms: 10000 });
		const took = Date.now() - t0;
		await until("the watchdog exits after its cleanup", () => !alive(watchdog), { ms: 10000 });
		console.log(`# ${how}: job processes gone and file removed ${took} ms after Node ended`);
	});
}

test("while Node lives the watchdog kills nothing: a settled job's group is forgotten", async () => {
	const { native } = await import("./helpers/addon.mjs");
	const m = new native.ShellManager({});
	const ctx = { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-c"] } };
	const r = await m.exec({ cmd: "echo $$" }, ctx);
	assert.equal(r.details.status, "completed");
	const wd = watchdogOf(process.pid);
	assert.equal(typeof wd, "number", "one watchdog for this Node process");
	// in its own process group, so a Ctrl-C or a kill of Node's group does not take it down before Node
	const pgrp = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[2]);
	assert.equal(pgrp(wd), wd);
	// a second job reuses it; the settled job's group id was forgotten (checked by the pid-reuse-safe protocol)
	assert.equal((await m.exec({ cmd: "true" }, ctx)).details.status, "completed");
	assert.equal(watchdogOf(process.pid), wd);
	assert.equal(alive(wd), true);
	await m.close();
});

// Race: Node is SIGKILLed at a random moment while 16 spawns are still in flight (some jobs registered with the
// watchdog, some not yet). Jobs are tagged through an env variable of the child Node, which they inherit.
const RACE = `
const native = require(${JSON.stringify(join(root, "index.js"))});
const m = new native.ShellManager({});
const ctx = { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-c"] } };
for (let i = 0; i < 16; i++) m.exec({ cmd: "sleep 1000", yield_time_ms: 0 }, ctx);
setTimeout(() => process.kill(process.pid, "SIGKILL"), Math.floor(Math.random() * 60));
setInterval(() => {}, 1000);
`;

/** Live processes whose environment holds the entry `entry` (`NAME=value`). */
function withEnv(entry) {
	const out = [];
	for (const d of readdirSync("/proc")) {
		if (!/^\d+$/.test(d)) continue;
		try {
			if (readFileSync(`/proc/${d}/environ`, "latin1").split("\0").includes(entry) && alive(Number(d))) out.push(Number(d));
		} catch {}
	}
	return out;
}

const tagged = (tag) => withEnv(`PCT_RACE_TAG=${tag}`);

test("race: SIGKILL of Node while 16 spawns are in flight leaves no job behind (10 rounds)", { timeout: 120000 }, async () => {
	let started = 0;
	for (let round = 0; round < 10; round++) {
		const tag = `${process.pid}-${round}-${Math.random().toString(16).slice(2)}`;
		const child = spawn(process.execPath, ["-e", RACE], { stdio: "ignore", env: { ...process.env, PCT_RACE_TAG: tag } });
		const seen = new Set();
		const exited = new Promise((r) => child.on("exit", r));
		while (child.exitCode === null && child.signalCode === null) {
			for (const p of tagged(tag)) {
				try {
					if (readFileSync(`/proc/${p}/cmdline`, "utf8").startsWith("sleep")) seen.add(p);
				} catch {}
			}
			await new Promise((r) => setTimeout(r, 2));
		}
		await exited;
		started += seen.size;
		const left = () => tagged(tag);
		await until(() => `round ${round}: left ${left()}`, () => left().length === 0, { ms: 10000 });
	}
	console.log(`# race: 10 rounds, ${started} sleep jobs observed before the SIGKILL, none left after (nor the watchdog)`);
});

// PCT_TEST_WATCHDOG_SH (test-only, read by src/shell/watchdog.rs) replaces /bin/sh for the watchdog alone, so its
// start fails exactly as with a missing /bin/sh while the jobs still run through bash.
test("when the watchdog cannot start, jobs still run and the manager's status says why", { timeout: 60000 }, async () => {
	const child = spawn(
		process.execPath,
		[
			"-e",
			`
const native = require(${JSON.stringify(join(root, "index.js"))});
const { readdirSync, readFileSync } = require("node:fs");
const m = new native.ShellManager({});
const ctx = { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-c"] } };
(async () => {
	const before = m.status();
	const r = await m.exec({ cmd: "echo ran" }, ctx);
	const watchdogs = readdirSync("/proc").filter((d) => {
		try {
			return /^\\d+$/.test(d) && Number(readFileSync("/proc/" + d + "/stat", "utf8").split(") ")[1].split(" ")[1]) === process.pid &&
				readFileSync("/proc/" + d + "/cmdline", "utf8").includes("pi-codex-toolkit-watchdog");
		} catch { return false; }
	});
	console.log(JSON.stringify({ before, details: r.details, after: m.status(), watchdogs }));
})();
`,
		],
		{ stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PCT_TEST_WATCHDOG_SH: "/nonexistent/pct-test-sh" } },
	);
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (d) => (stdout += d));
	child.stderr.on("data", (d) => (stderr += d));
	const code = await new Promise((r) => child.on("close", r));
	assert.equal(code, 0, stderr);
	const { before, details, after, watchdogs } = JSON.parse(stdout);
	assert.equal("watchdogFailure" in before, false, "nothing needed the watchdog yet");
	assert.equal(details.status, "completed");
	assert.equal(details.stdout, "ran\n", "the job ran without the watchdog");
	assert.deepEqual(watchdogs, []);
	assert.match(after.watchdogFailure, /^could not start \/nonexistent\/pct-test-sh: No such file or directory/);
});

test("with a working watchdog the status carries no watchdogFailure", async () => {
	const { native } = await import("./helpers/addon.mjs");
	const m = new native.ShellManager({});
	const r = await m.exec({ cmd: "true" }, { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-c"] } });
	assert.equal(r.ok, true, r.text);
	assert.equal("watchdogFailure" in m.status(), false);
	await m.close();
});

test("when Node exits, a job's exit trap gets up to a second before SIGKILL (a lock it holds is released)", { timeout: 60000 }, async () => {
	const dir = mkdtempSync(join(tmpdir(), "pct-watchdog-trap-"));
	try {
		const done = join(dir, "cleaned");
		// An EXIT trap (pyenv's rehash releases its lock in one) that outlasts the old fixed 0.2 s grace. It runs on the
		// watchdog's SIGTERM, or on the SIGHUP of the job's terminal closing with Node, whichever comes first, and
		// ignores both from then on (so does its sleep), so only SIGKILL can cut it short.
		const child = spawn(process.execPath, ["-e", `
const native = require(${JSON.stringify(join(root, "index.js"))});
const m = new native.ShellManager({});
(async () => {
	const r = await m.exec({ cmd: ${JSON.stringify(`trap 'trap "" TERM HUP; sleep 0.5; echo ok > ${done}' EXIT; trap 'exit 0' TERM HUP; echo ready; sleep 1000 & wait`)}, yield_time_ms: 500 }, { cwd: "/tmp", shell: { shell: "/bin/bash", args: ["-c"] } });
	console.log(r.details.stdout.trim());
	process.stdin.once("data", () => process.exit(0));
})();`], { stdio: ["pipe", "pipe", "pipe"] });
		let stdout = "";
		child.stdout.on("data", (d) => (stdout += d));
		const exited = new Promise((r) => child.on("exit", r));
		await until("the job started", () => stdout.includes("ready"), { ms: 30000 });
		child.stdin.write("go\n");
		await exited;
		await until("the exit trap ran to its end before the SIGKILL", () => existsSync(done), { ms: 10000 });
		assert.equal(readFileSync(done, "utf8"), "ok\n");
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

/** The live processes of a test's own profile folder (the probe's, by their `HOME`). */
const withHome = (home) => withEnv(`HOME=${home}`);

// The login-PATH probe (docs/host.md "Bash") runs the user's profile. Stopping it mid-way can leave a lock behind even
// with an exit trap (pyenv's rehash takes its lock before it sets the trap), so when Node exits the watchdog leaves
// the probe up to 5 s to end by itself; a profile that hangs is still stopped after that.
for (const profile of ["ends", "hangs"]) {
	test(`when Node exits while the login probe runs a profile that ${profile}, the watchdog ${profile === "ends" ? "lets it finish" : "stops it after its bound"}`, { timeout: 60000 }, async () => {
		const home = mkdtempSync(join(tmpdir(), "pct-watchdog-probe-"));
		try {
			const started = join(home, "started");
			const done = join(home, "done");
			// A step of the profile in a non-interactive shell (SIGTERM ends it, as it ends pyenv's rehash).
			const step = profile === "ends" ? `bash -c 'sleep 1; echo ok > "$HOME/done"'` : "bash -c 'sleep 1000'";
			writeFileSync(join(home, ".bash_profile"), `echo > "$HOME/started"\n${step}\n`);
			const child = spawn(process.execPath, ["-e", `
const native = require(${JSON.stringify(join(root, "index.js"))});
const { existsSync, mkdirSync } = require("node:fs");
const ws = ${JSON.stringify(join(home, "ws"))};
mkdirSync(ws, { recursive: true });
const s = new native.HostSession(ws, ${JSON.stringify(join(home, "agent"))}, "probe");
s.prewarmBash();
const t = setInterval(() => { if (existsSync(${JSON.stringify(started)})) { clearInterval(t); process.exit(0); } }, 10);`], { stdio: "ignore", env: { ...process.env, HOME: home, SHELL: "/bin/bash" } });
			const exited = new Promise((r) => child.on("exit", r));
			assert.equal(await exited, 0);
			assert.ok(existsSync(started), "the probe ran the profile");
			if (profile === "ends") {
				await until("the probe's profile ran to its end after Node exited", () => existsSync(done), { ms: 10000 });
				assert.equal(readFileSync(done, "utf8"), "ok\n");
			}
			await until(() => `the probe's processes are gone: ${withHome(home)}`, () => withHome(home).length === 0, { ms: 15000 });
		} finally {
			rmSync(home, { recursive: true, force: true });
		}
	});
}
