// `npm test`: the one test runner. Suites, in order:
//   rust     cargo test
//   lint     cargo fmt --check, cargo clippy --all-targets -D warnings, tsc --noEmit (when tsconfig.json exists),
//            and index.d.ts alone with strict declaration checks
//   addon    node:test suites against the addon (__test__/*.test.mjs)
//   e2e      node:test suites in the real Pi, both supported versions (__test__/e2e/*.test.mjs)
//   publish  scripts/publish-test.mjs (when it exists): local registry, publish, `pi install npm:`
// `npm test -- rust addon` runs only the named suites. Every selected suite runs even after one fails; a line
// shows progress while a long step (the Rust build) prints nothing; one summary at the end gives pass/fail/skip
// counts per suite, then a plain `N passed, N failed` line. Exit status 1 when any suite failed.
// The addon is built (release, as CI does) first when its binary is missing, e.g. in a fresh clone: the addon and
// e2e suites load the root binary built with the test seams (docs/release.md "Test seams"); the seam-less release
// binary goes to target/seamless/, where __test__/seamless.test.mjs shows every seam variable is ignored and the
// publish suite packs it.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseCounts } from "./test-counts.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SUITES = ["rust", "lint", "addon", "e2e", "publish"];
const BINARY = "pi-codex-toolkit.linux-x64-gnu.node";
/** A progress line after this long without output from the running step. */
const QUIET_MS = 15_000;

const only = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const unknown = only.filter((s) => !SUITES.includes(s));
if (unknown.length) {
	console.error(`unknown suite ${unknown.join(", ")}; suites: ${SUITES.join(", ")}`);
	process.exit(2);
}
const selected = SUITES.filter((s) => only.length === 0 || only.includes(s));
/** Node >= 22.19 for the node:test suites (the glue imports Pi, which needs it): the one running us when it is
 * new enough (as under `npm test`, which puts the `node` devDependency first on PATH), else that devDependency. */
const node = (() => {
	const [major, minor] = process.versions.node.split(".").map(Number);
	const bundled = join(root, "node_modules/node/bin/node");
	return major > 22 || (major === 22 && minor >= 19) || !existsSync(bundled) ? process.execPath : bundled;
})();

/** Runs one command, streaming its output; resolves with its exit status and everything it printed. */
function run(label, cmd, args) {
	console.log(`\n[${label}] $ ${cmd} ${args.join(" ")}`);
	const started = Date.now();
	return new Promise((resolve) => {
		const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: process.env });
		let out = "";
		let last = Date.now();
		const seconds = () => Math.round((Date.now() - started) / 1000);
		const heartbeat = setInterval(() => {
			if (Date.now() - last >= QUIET_MS) {
				const why = cmd === "cargo" || label === "build" ? "; cargo builds quietly, a first build takes minutes" : "";
				console.log(`[${label}] … still running (${seconds()} s${why})`);
				last = Date.now();
			}
		}, 1000);
		const forward = (stream) => (chunk) => {
			const s = chunk.toString();
			out += s;
			last = Date.now();
			stream.write(s);
		};
		child.stdout.on("data", forward(process.stdout));
		child.stderr.on("data", forward(process.stderr));
		const done = (status, error) => {
			clearInterval(heartbeat);
			if (error) console.error(`[${label}] could not start ${cmd}: ${error.message}`);
			resolve({ ok: status === 0, status, out, seconds: seconds() });
		};
		child.on("error", (e) => done(null, e));
		child.on("close", (code, signal) => done(code ?? signal));
	});
}

const files = (dir) =>
	existsSync(join(root, dir))
		? readdirSync(join(root, dir)).filter((f) => f.endsWith(".test.mjs")).sort().map((f) => join(dir, f))
		: [];

/** One row of the summary per suite: counts of tests (or of checks, for lint and publish) and the outcome. */
const results = [];

/** A suite of test runners: counts come from their output; a run that failed without reporting counts one failure. */
async function testSuite(name, steps) {
	const row = { name, passed: 0, failed: 0, skipped: 0, seconds: 0, ok: true, note: "" };
	for (const [cmd, args] of steps) {
		const r = await run(name, cmd, args);
		const c = parseCounts(r.out);
		row.passed += c.passed;
		row.failed += c.failed;
		row.skipped += c.skipped;
		row.seconds += r.seconds;
		if (!r.ok) {
			row.ok = false;
			if (c.failed === 0) {
				row.failed += 1;
				row.note = `exit ${r.status} without a failed test`;
			}
		}
	}
	results.push(row);
}

/** A suite of checks (lint): each command is one check. */
async function checkSuite(name, checks) {
	const row = { name, passed: 0, failed: 0, skipped: 0, seconds: 0, ok: true, note: "" };
	const failedChecks = [];
	for (const check of checks) {
		if (check.skip) {
			row.skipped += 1;
			console.log(`\n[${name}] skipped ${check.label}: ${check.skip}`);
			continue;
		}
		const r = await run(name, check.cmd, check.args);
		row.seconds += r.seconds;
		if (r.ok) row.passed += 1;
		else {
			row.failed += 1;
			row.ok = false;
			failedChecks.push(check.label);
		}
	}
	if (failedChecks.length) row.note = `failed: ${failedChecks.join(", ")}`;
	results.push(row);
}

function notRun(name, why) {
	results.push({ name, passed: 0, failed: 1, skipped: 0, seconds: 0, ok: false, note: why });
}

if (selected.includes("rust")) await testSuite("rust", [["cargo", ["test", "--quiet"]]]);

if (selected.includes("lint")) {
	const tsc = join(root, "node_modules/.bin/tsc");
	const hasTsconfig = existsSync(join(root, "tsconfig.json"));
	await checkSuite("lint", [
		{ label: "cargo fmt", cmd: "cargo", args: ["fmt", "--check"] },
		{ label: "cargo clippy", cmd: "cargo", args: ["clippy", "--all-targets", "--", "-D", "warnings"] },
		!hasTsconfig
			? { label: "tsc", skip: "no tsconfig.json" }
			: !existsSync(tsc)
				? { label: "tsc", cmd: "npx", args: ["--no-install", "tsc", "--noEmit", "-p", "."] }
				: { label: "tsc", cmd: tsc, args: ["--noEmit", "-p", "."] },
		// tsconfig.json skips declaration files (skipLibCheck, for Pi's), which would skip the generated index.d.ts
		// too: this check reads it alone, strictly, so a malformed ts_type override fails here (docs/napi.md).
		!existsSync(tsc)
			? { label: "index.d.ts", skip: "no local tsc" }
			: {
					label: "index.d.ts",
					cmd: tsc,
					args: ["--ignoreConfig", "--noEmit", "--strict", "--skipLibCheck", "false", "--target", "es2022", "--module", "nodenext", "--types", "node", "index.d.ts"],
				},
	]);
}

/** Whether the binary at `path` reads the test seams (it says so itself; a binary older than that export does not). */
const hasSeams = (path) =>
	existsSync(path) && spawnSync(node, ["-e", `process.exit(require(${JSON.stringify(path)}).testSeams() ? 0 : 1)`]).status === 0;
const SEAMLESS = join("target", "seamless", BINARY);
const needAddon = selected.some((s) => ["addon", "e2e", "publish"].includes(s));
let addonReady = hasSeams(join(root, BINARY));
if (needAddon && !addonReady) {
	const r = await run("build", node, ["scripts/build.mjs", "--test-seams"]);
	addonReady = r.ok && hasSeams(join(root, BINARY));
	if (!addonReady) console.error("\n[build] the addon could not be built: the addon, e2e and publish suites cannot run");
}
if (needAddon && addonReady && !existsSync(join(root, SEAMLESS))) {
	const r = await run("build", node, ["scripts/build.mjs", "--out-dir", dirname(SEAMLESS)]);
	addonReady = r.ok && existsSync(join(root, SEAMLESS)) && !hasSeams(join(root, SEAMLESS));
	if (!addonReady) console.error("\n[build] the release addon could not be built: the addon, e2e and publish suites cannot run");
}

for (const [name, dir, extra] of [
	["addon", "__test__", []],
	// Node runs each file in its own process and counts the file as one test, so this bound is a whole file's (the
	// longest takes about 2 minutes on an idle 2-core machine and over 3 under load); each test bounds its own waits.
	["e2e", "__test__/e2e", ["--test-timeout=900000"]],
]) {
	if (!selected.includes(name)) continue;
	if (!addonReady) notRun(name, "the addon could not be built");
	// The spec reporter: one line per test and the failures again at the end (its summary is `ℹ pass N`).
	else await testSuite(name, [[node, ["--test", "--test-reporter=spec", "--test-concurrency=2", ...extra, ...files(dir)]]]);
}

if (selected.includes("publish")) {
	const script = join(root, "scripts/publish-test.mjs");
	if (!existsSync(script)) {
		results.push({ name: "publish", passed: 0, failed: 0, skipped: 1, seconds: 0, ok: true, note: "no scripts/publish-test.mjs" });
	} else if (!addonReady) notRun("publish", "the addon could not be built");
	else {
		await testSuite("publish", [[node, [script]]]);
		const row = results[results.length - 1];
		// A script that reports no counts is one check.
		if (row.passed + row.failed + row.skipped === 0) row.passed = 1;
	}
}

const pad = (s, n) => String(s).padEnd(n);
console.log("\n== summary ==");
console.log(`${pad("suite", 9)}${pad("result", 8)}${pad("passed", 8)}${pad("failed", 8)}${pad("skipped", 9)}time`);
for (const r of results) {
	const result = !r.ok ? "FAIL" : r.passed === 0 && r.skipped > 0 ? "skip" : "ok";
	console.log(
		`${pad(r.name, 9)}${pad(result, 8)}${pad(r.passed, 8)}${pad(r.failed, 8)}${pad(r.skipped, 9)}${r.seconds} s${r.note ? `  (${r.note})` : ""}`,
	);
}
const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(results.some((r) => !r.ok) ? 1 : 0);
