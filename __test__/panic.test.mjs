// Panics never abort Node (docs/napi.md "Panics"): with the test-only trigger `PCT_TEST_PANIC` naming guard sites,
// a child Node calls each export; every panic must come back as data or an Error with code `internal-panic`, and the
// child must live on to print its report (an unguarded panic across the napi boundary aborts the process).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const SITES = [
	"engineVersion",
	"config.path",
	"config.save",
	"rules.resolve",
	"shell.new",
	"shell.status",
	"shell.normalizeExec",
	"shell.exec",
	"patch.paths",
	"patch.apply",
	"code.exec",
	"code.gate",
	"code.progress",
	"review.list",
	"review.show",
	"review.sweep",
	"review.removeSession",
	"host.sweepScratch",
	"net.imageSave",
	"compactionBuildRequest",
	"compactionReplay",
];

// Runs in the child: one probe per site, each reporting what came back.
// compactionReplay's arguments (payload, details, current compat) that replay: null from them is only a panic.
const MARKER = "[pi-codex-toolkit.remote-compaction-v2:00000000-0000-4000-8000-000000000000]";
const REPLAY = [
	{ model: "m", input: [{ role: "user", content: [{ type: "input_text", text: "summary " + MARKER }] }] },
	{ marker: MARKER, compat: { model: "m" }, retainedInput: [], checkpoint: { type: "compaction", encrypted_content: "enc" } },
	{ model: "m" },
];

const CHILD = `
const { createRequire } = require("node:module");
const n = require(${JSON.stringify(join(root, "index.js"))});
const dir = process.argv[1];
const out = {};
const thrown = (f) => { try { f(); return "returned"; } catch (e) { return e.code + "|" + e.message; } };
(async () => {
	out.engineVersion = thrown(() => n.engineVersion());
	out["config.path"] = thrown(() => n.configPath(dir));
	const saved = await n.configSave(dir + "/c.json", {}, null);
	out["config.save"] = saved.code + "|" + saved.message;
	out["rules.resolve"] = thrown(() => n.rulesResolve("{}"));
	out["shell.new"] = thrown(() => new n.ShellManager());
	// The remaining shell probes need a manager: build it with the constructor site disarmed.
	const shellSites = process.env.PCT_TEST_PANIC;
	process.env.PCT_TEST_PANIC = shellSites.replace("shell.new", "");
	const sm = new n.ShellManager();
	process.env.PCT_TEST_PANIC = shellSites;
	out["shell.status"] = thrown(() => sm.status());
	const norm = sm.normalizeExec({ cmd: "true" });
	out["shell.normalizeExec"] = norm.code + "|" + norm.text;
	const ex = await sm.exec({ cmd: "true" }, { cwd: dir });
	out["shell.exec"] = ex.code + "|" + ex.text;
	const pp = n.patchPaths(dir, "*** Begin Patch\\n*** Add File: a.txt\\n+a\\n*** End Patch");
	out["patch.paths"] = pp.code + "|" + pp.error;
	const ap = await n.applyPatch(dir, "*** Begin Patch\\n*** Add File: a.txt\\n+a\\n*** End Patch");
	out["patch.apply"] = ap.code + "|" + ap.outcome + "|" + ap.text;
	const gateSeen = [];
	const cm = new n.CodeManager(async (req) => { gateSeen.push(req.phase); return { allow: true }; });
	const ce = await cm.exec({ code: "return 1" }, { cwd: dir });
	out["code.exec"] = ce.code + "|" + ce.message;
	// Gate and progress panics happen on the cell's side of a nested call; the outer call must still settle.
	process.env.PCT_TEST_PANIC = shellSites.replace("code.exec", "");
	cm.attachShell(sm);
	cm.setAdmitted(["exec_command"]);
	const records = [];
	const nested = await cm.exec(
		{ code: "try { await tools.exec_command({ cmd: 'true' }); return 'ran'; } catch (e) { return e.code + '|' + e.message; }" },
		{ cwd: dir },
		(r) => records.push(r),
	);
	out["code.gate"] = nested.ok + "|" + nested.result;
	out["code.progress"] = nested.ok + "|" + nested.status + "|" + records.length;
	await cm.shutdown();
	await sm.close();
	// The async file exports panic on tokio's blocking pool: each resolves the failure.
	for (const [site, call] of [
		["review.list", () => n.reviewList(dir, "s")],
		["review.show", () => n.reviewShow(dir, "s", "1")],
		["review.sweep", () => n.reviewSweep(dir)],
		["review.removeSession", () => n.reviewRemoveSession(dir, "s")],
		["host.sweepScratch", () => n.hostSweepScratch(dir, [])],
	]) {
		const r = await call();
		out[site] = r.code + "|" + r.message;
	}
	const img = await n.netImageSave("{}", dir);
	out["net.imageSave"] = img.error.code + "|" + img.error.message;
	const cb = await n.compactionBuildRequest("{}", null);
	out["compactionBuildRequest"] = cb.code + "|" + cb.message;
	// A replay that panicked resolves null: the request goes out unchanged, as for any mismatch.
	// The inputs match (they replay without the trigger, see the next test): null here is the panic's answer.
	const rp = ${JSON.stringify(REPLAY)};
	out["compactionReplay"] = String(await n.compactionReplay(JSON.stringify(rp[0]), JSON.stringify(rp[1]), rp[2]));
	process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stdout.write("UNCAUGHT " + e.stack); process.exit(3); });
`;

test("a panic in every guarded export becomes internal-panic and Node keeps running", { timeout: 120000 }, () => {
	const dir = mkdtempSync(join(tmpdir(), "pct-panic-"));
	try {
		const r = spawnSync(process.execPath, ["-e", CHILD, dir], {
			env: { ...process.env, PCT_TEST_PANIC: SITES.join(",") },
			encoding: "utf8",
			timeout: 100000,
		});
		assert.equal(r.status, 0, `child died (signal ${r.signal}): ${r.stdout}\n${r.stderr.slice(-2000)}`);
		const out = JSON.parse(r.stdout);
		const panicText = (site) => new RegExp(`^internal-panic\\|.*internal error in the pi-codex-toolkit engine \\(${site.replace(".", "\\.")}: PCT_TEST_PANIC trigger at ${site.replace(".", "\\.")}\\).*Retry once`);
		for (const site of ["engineVersion", "config.path", "config.save", "rules.resolve", "shell.new", "shell.status", "shell.normalizeExec", "shell.exec", "code.exec", "review.list", "review.show", "review.sweep", "review.removeSession", "host.sweepScratch", "net.imageSave", "compactionBuildRequest"]) {
			assert.match(out[site], panicText(site), site);
		}
		assert.equal(out["compactionReplay"], "null");
		assert.match(out["patch.paths"], panicText("patch.paths"));
		assert.match(out["patch.apply"], /^internal-panic\|unknown\|apply_patch failed \(outcome unknown\): internal error .*patch\.apply/);
		// The gate panicked: the nested call was refused with the stable code, the cell itself completed.
		assert.match(out["code.gate"], /^true\|internal-panic\|.*code\.gate/);
		// Every progress record panicked while forwarding and was dropped; the call still completed.
		assert.equal(out["code.progress"], "true|completed|0");
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test("without the trigger the same calls succeed (the guards are transparent)", () => {
	const r = spawnSync(
		process.execPath,
		["-e", `const n = require(${JSON.stringify(join(root, "index.js"))}); const s = new n.ShellManager(); process.stdout.write(JSON.stringify([n.engineVersion(), s.status().running, n.patchPaths("/tmp", "*** Begin Patch\\n*** Add File: a\\n+a\\n*** End Patch").ok])); const rp = ${JSON.stringify(REPLAY)}; n.compactionReplay(JSON.stringify(rp[0]), JSON.stringify(rp[1]), rp[2]).then((t) => process.stdout.write("|" + JSON.parse(t).input[0].type))`],
		{ env: { ...process.env, PCT_TEST_PANIC: "" }, encoding: "utf8" },
	);
	assert.equal(r.status, 0, r.stderr);
	const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
	const [sync, replayed] = r.stdout.split("|");
	assert.deepEqual(JSON.parse(sync), [version, 0, true]);
	assert.equal(replayed, "compaction");
});
