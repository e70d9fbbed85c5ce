// Helpers that run the real Pi (both supported versions) headless and offline, with the scripted faux model.
// Every run gets its own temp PI_CODING_AGENT_DIR and TMPDIR. See docs/spec/real-pi-testing.md.
// Sandboxes are removed after the test that made them (also when it fails); ones made outside a test, after the file;
// ones made by a plain script (demo, bench), when its process ends.
import { spawn } from "node:child_process";
import { after, afterEach, beforeEach } from "node:test";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync, readdirSync, lstatSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { onExit } from "../../scripts/tmp.mjs";
import { bundleIfStale } from "../../scripts/bundle.mjs";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const FAUX = join(ROOT, "__test__/fixtures/faux-model.ts");

// Pi loads the package through its manifest, i.e. the bundle of src/ (docs/release.md "The bundled entry"): a suite
// started on its own after an edit must not run an older bundle.
await bundleIfStale();

/** The Pi versions every end-to-end suite runs against. */
export const PI_VERSIONS = [
	{ name: "0.87.1", cli: join(ROOT, "node_modules/pi-087/dist/bundle/cli.js") },
	{ name: "1.6.0", cli: join(ROOT, "node_modules/pi-1x/dist/bundle/cli.js") },
];

/** Node >= 22.19 for Pi: the one running us when it is new enough, else the `node` devDependency. */
export const NODE22 = (() => {
	const [maj, min] = process.versions.node.split(".").map(Number);
	if (maj > 22 || (maj === 22 && min >= 19)) return process.execPath;
	return join(ROOT, "node_modules/node/bin/node");
})();

/** Sandboxes and Pi processes of the running test, and of the file (made outside any test). Tests in one file run
 * one after another (node:test's default), so "the running test" is well defined. */
const perTest = { boxes: [], children: [] };
const perFile = { boxes: [], children: [] };
let current = perFile;

/** Makes every folder under `dir` writable again (a test may have made one read-only), so it can be removed. */
function unlockTree(dir) {
	try {
		chmodSync(dir, 0o700);
		for (const name of readdirSync(dir)) {
			const p = join(dir, name);
			if (lstatSync(p).isDirectory()) unlockTree(p);
		}
	} catch {
		// best effort: rmSync below reports what is still in the way
	}
}

/** Kills the Pi processes a failed test left running, then removes its sandboxes. */
async function cleanUp(scope) {
	const children = scope.children.splice(0);
	await Promise.all(children.map((c) => {
		if (c.exitCode !== null || c.signalCode !== null) return undefined;
		const exited = new Promise((r) => c.once("close", r));
		c.kill("SIGKILL");
		return exited;
	}));
	removeBoxes(scope);
}

/** Removes the sandboxes of a scope whose Pi processes are gone. */
function removeBoxes(scope) {
	for (const base of scope.boxes.splice(0)) {
		try {
			rmSync(base, { recursive: true, force: true, maxRetries: 3 });
		} catch {
			unlockTree(base);
			try {
				rmSync(base, { recursive: true, force: true, maxRetries: 3 });
			} catch (e) {
				console.error(`could not remove sandbox ${base}: ${e.message}`);
			}
		}
	}
}

/** Only under node:test: hooks registered by a plain script (bench, demo) would start a test run of their own. */
const UNDER_TEST = process.env.NODE_TEST_CONTEXT !== undefined || /\.test\.m?js$/.test(process.argv[1] ?? "");
if (UNDER_TEST) {
	beforeEach(() => {
		current = perTest;
	});
	afterEach(async () => {
		current = perFile;
		await cleanUp(perTest);
	});
	after(() => cleanUp(perFile));
}

/** Plain scripts (demo, bench) have no test hooks: their sandboxes go when the process ends, also when it fails or
 * is stopped with SIGINT/SIGTERM (scripts/tmp.mjs). An exit hook cannot wait for a process to close, so Pi processes
 * still running then are killed without waiting; removeBoxes retries while they die. Installed by the first
 * sandbox, so merely importing this module changes nothing. */
let exitHook = false;
function cleanUpOnExit() {
	if (UNDER_TEST || exitHook) return;
	exitHook = true;
	onExit(() => {
		for (const c of perFile.children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
		removeBoxes(perFile);
	});
}

/** A fresh sandbox: agent dir, tmp dir and workspace, all under one temp folder (removed after the test). */
export function sandbox(prefix = "pct-e2e-") {
	const base = mkdtempSync(join(tmpdir(), prefix));
	current.boxes.push(base);
	cleanUpOnExit();
	const agentDir = join(base, "agent");
	const tmp = join(base, "tmp");
	const cwd = join(base, "work");
	for (const d of [agentDir, tmp, cwd]) mkdirSync(d, { recursive: true });
	return { base, agentDir, tmp, cwd, configPath: join(agentDir, "extensions", "pi-codex-toolkit.json") };
}

/** Writes the toolkit config file of a sandbox (object -> pretty JSON, string -> as is). */
export function writeConfig(box, config) {
	mkdirSync(dirname(box.configPath), { recursive: true });
	writeFileSync(box.configPath, typeof config === "string" ? config : JSON.stringify(config, null, 2) + "\n");
}

/** writeConfig for suites about the tools themselves, not the permission policy (permissions.e2e tests that): the
 * config gets `permissions.mode: "auto"` unless it names a mode, so a headless run may call every tool
 * (docs/permissions.md: headless `ask` denies edits and commands). */
export function writeToolConfig(box, config) {
	const named = typeof config === "string" || config.permissions !== undefined || config.hostTools?.permissionMode !== undefined;
	writeConfig(box, named ? config : { ...config, permissions: { mode: "auto" } });
}

let scriptCounter = 0;
/** Writes a faux-model script module (array of steps, may contain functions) and returns its path. */
export function writeScript(box, source) {
	const p = join(box.base, `script-${++scriptCounter}.mjs`);
	writeFileSync(p, source);
	return p;
}

function piEnv(box, extra = {}) {
	const env = { ...process.env };
	for (const k of Object.keys(env)) if (k.startsWith("npm_") || k === "NODE_OPTIONS") delete env[k];
	return {
		...env,
		PI_CODING_AGENT_DIR: box.agentDir,
		TMPDIR: box.tmp,
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
		...extra,
	};
}

/** `opts.persist`: keep Pi's session file (no `--no-session`; pass `--session-dir`/`--session` in `opts.args`). */
function piArgs(opts) {
	const args = [opts.version.cli, ...(opts.persist ? [] : ["--no-session"]), "-ne", "-e", FAUX];
	for (const ext of opts.extensions ?? [ROOT]) args.push("-e", ext);
	args.push("--provider", opts.provider ?? "faux", "--model", opts.model ?? "faux-1");
	if (opts.tools) args.push("--tools", opts.tools.join(","));
	if (opts.args) args.push(...opts.args);
	return args;
}

/** Splits a byte stream into records on LF only (never on U+2028/2029). */
function lineSplitter(onLine) {
	let buf = "";
	return (chunk) => {
		buf += chunk;
		let i;
		while ((i = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, i).replace(/\r$/, "");
			buf = buf.slice(i + 1);
			if (line.trim()) onLine(line);
		}
	};
}

/**
 * One json-mode session: `prompt` goes to the scripted model; resolves with every event, the tool_execution_end
 * events, stderr and the exit code.
 */
export function runJson(opts) {
	const box = opts.box ?? sandbox();
	const args = piArgs(opts);
	args.push("--mode", "json", opts.prompt ?? "go");
	const env = piEnv(box, { PCT_FAUX_SCRIPT: opts.script ?? "", ...(opts.env ?? {}) });
	return new Promise((resolvePromise, reject) => {
		const child = spawn(NODE22, args, { cwd: opts.cwd ?? box.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
		current.children.push(child);
		const events = [];
		let stderr = "";
		child.stdout.setEncoding("utf8");
		child.stdout.on("data", lineSplitter((line) => {
			try { events.push(JSON.parse(line)); } catch { events.push({ type: "raw", line }); }
		}));
		child.stderr.setEncoding("utf8");
		child.stderr.on("data", (d) => (stderr += d));
		const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60000);
		child.on("error", reject);
		child.on("close", (code, signal) => {
			clearTimeout(timer);
			const toolEnds = events.filter((e) => e.type === "tool_execution_end");
			resolvePromise({ box, events, toolEnds, stderr, code, signal, text: toolText });
		});
	});
}

/** The text content of a tool result. */
export function toolText(end) {
	return (end.result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

/**
 * An RPC-mode Pi process. `ui` answers dialog requests: `(req) => response fields` ({value}|{confirmed}|{cancelled}).
 * Notifications are collected in `notifications`.
 */
export class RpcPi {
	constructor(opts) {
		this.box = opts.box ?? sandbox();
		this.ui = opts.ui ?? (() => ({ cancelled: true }));
		this.events = [];
		this.notifications = [];
		this.uiRequests = [];
		this.pending = new Map();
		this.waiters = [];
		this.stderr = "";
		this.nextId = 1;
		const args = piArgs(opts);
		args.push("--mode", "rpc");
		const env = piEnv(this.box, { PCT_FAUX_SCRIPT: opts.script ?? "", ...(opts.env ?? {}) });
		this.child = spawn(NODE22, args, { cwd: opts.cwd ?? this.box.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
		current.children.push(this.child);
		this.child.stdout.setEncoding("utf8");
		this.child.stdout.on("data", lineSplitter((line) => this.#onRecord(line)));
		this.child.stderr.setEncoding("utf8");
		this.child.stderr.on("data", (d) => (this.stderr += d));
		this.exitCode = undefined;
		this.exited = new Promise((r) => this.child.on("close", (code) => {
			this.exitCode = code;
			for (const [, fail] of this.pending) fail({ type: "response", success: false, error: `pi exited (${code}): ${this.stderr.slice(-2000)}` });
			this.pending.clear();
			r(code);
		}));
	}

	async #onRecord(line) {
		let rec;
		try { rec = JSON.parse(line); } catch { return; }
		this.events.push(rec);
		if (rec.type === "response" && rec.id && this.pending.has(rec.id)) {
			this.pending.get(rec.id)(rec);
			this.pending.delete(rec.id);
		} else if (rec.type === "extension_ui_request") {
			if (rec.method === "notify") this.notifications.push(rec.message);
			else if (["select", "confirm", "input", "editor"].includes(rec.method)) {
				this.uiRequests.push(rec);
				const answer = await this.ui(rec);
				this.send({ type: "extension_ui_response", id: rec.id, ...answer });
			}
		}
		for (const w of [...this.waiters]) if (w.pred(rec)) { this.waiters.splice(this.waiters.indexOf(w), 1); w.resolve(rec); }
	}

	send(obj) { this.child.stdin.write(JSON.stringify(obj) + "\n"); }

	/** Sends a command and resolves with its response record. */
	command(type, fields = {}, timeoutMs = 60000) {
		const id = `c${this.nextId++}`;
		return new Promise((resolvePromise, reject) => {
			const t = setTimeout(() => reject(new Error(`rpc ${type} timed out; stderr: ${this.stderr.slice(-2000)}`)), timeoutMs);
			this.pending.set(id, (r) => { clearTimeout(t); resolvePromise(r); });
			this.send({ id, type, ...fields });
		});
	}

	/** Resolves with the first (future) record matching `pred`. */
	waitFor(pred, timeoutMs = 60000) {
		return new Promise((resolvePromise, reject) => {
			const t = setTimeout(() => reject(new Error("waitFor timed out; stderr: " + this.stderr.slice(-2000))), timeoutMs);
			this.waiters.push({ pred, resolve: (r) => { clearTimeout(t); resolvePromise(r); } });
		});
	}

	/** Runs a prompt (or slash command) and waits until the agent is idle again; returns notifications it produced. */
	async prompt(message, timeoutMs = 60000) {
		const before = this.notifications.length;
		const startEvents = this.events.length;
		const settled = message.startsWith("/") ? null : this.waitFor((r) => r.type === "agent_end", timeoutMs);
		const resp = await this.command("prompt", { message }, timeoutMs);
		if (settled) await settled;
		return { response: resp, notifications: this.notifications.slice(before), events: this.events.slice(startEvents) };
	}

	async close() {
		this.child.stdin.end();
		const t = setTimeout(() => this.child.kill("SIGKILL"), 10000);
		const code = await this.exited;
		clearTimeout(t);
		return code;
	}
}
