// Install cost of the published toolkit against Pi's own package of similar size, side by side in one run, from
// one throwaway loopback registry (scripts/local-registry.mjs):
//   toolkit:  pi-codex-toolkit + pi-codex-toolkit-<host> (the native engine, release build from npm/<host>/)
//   baseline: @earendil-works/pi-codemode + quickjs-wasi (Pi 1.x's code-mode package and its QuickJS-WASI engine,
//             packed from node_modules) — the same job (a JS engine for code cells) shipped as WebAssembly.
// Measures `pi install npm:<pkg>` (Pi 1.6.0, fresh agent dir and empty npm cache each run, no Rust on PATH) and the
// installed (unpacked) size of the two packages each. Prints medians and toolkit/baseline ratios.
// `--quick`: 1 run each (default 5).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { NODE22, PI_VERSIONS, findInstalled, pathWithoutRust, registryEnv, stageCheckout, startRegistry } from "../scripts/local-registry.mjs";
import { ROOT, hostTarget, packageBinary } from "../scripts/release-lib.mjs";
import { onExit, tempDir } from "../scripts/tmp.mjs";

const runs = process.argv.includes("--quick") ? 1 : 5;
const pi = PI_VERSIONS.find((v) => v.name === "1.6.0");
const host = hostTarget();
if (!existsSync(packageBinary(host))) {
	console.log(`bench/install: skipped — no release binary at npm/${host.suffix}/ (run \`npm run build:all -- ${host.suffix}\` first)`);
	process.exit(0);
}

const work = tempDir("pct-bench-install-");
let registry;
// The registry serves from `work`: stopped before it is removed, also on a failure or SIGINT/SIGTERM.
onExit(() => registry?.stop());

/** Bytes of every file under `dir`. */
function du(dir) {
	let n = 0;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const p = join(dir, e.name);
		n += e.isDirectory() ? du(p) : e.isFile() ? statSync(p).size : 0;
	}
	return n;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;

try {
	registry = await startRegistry(work);
	const env = (extra = {}) => registryEnv(registry, join(work, `cache-${Math.random().toString(36).slice(2)}`), extra);

	// Publish both sides.
	const { stage } = stageCheckout(work);
	for (const f of readdirSync(join(stage, "npm"))) {
		// Only the host's platform package: the others are not installed on this machine anyway.
		if (f !== host.suffix) rmSync(join(stage, "npm", f, `pi-codex-toolkit.${f}.node`), { force: true });
	}
	let r = spawnSync("npm", ["publish"], { cwd: stage, env: env({ PATH: pathWithoutRust() }), encoding: "utf8" });
	if (r.status !== 0) throw new Error(`publishing the toolkit failed: ${r.stderr}`);
	for (const dir of ["node_modules/quickjs-wasi", "node_modules/@earendil-works/pi-codemode"]) {
		const pack = spawnSync("npm", ["pack", join(ROOT, dir), "--pack-destination", work, "--json", "--ignore-scripts"], { cwd: work, env: env(), encoding: "utf8" });
		if (pack.status !== 0) throw new Error(`npm pack ${dir}: ${pack.stderr}`);
		r = spawnSync("npm", ["publish", join(work, JSON.parse(pack.stdout)[0].filename), "--ignore-scripts"], { cwd: work, env: env(), encoding: "utf8" });
		if (r.status !== 0) throw new Error(`publishing ${dir} failed: ${r.stderr}`);
	}

	const sides = [
		{ label: "toolkit", spec: "npm:pi-codex-toolkit", pkgs: ["pi-codex-toolkit", `pi-codex-toolkit-${host.suffix}`] },
		{ label: "baseline", spec: "npm:@earendil-works/pi-codemode", pkgs: ["@earendil-works/pi-codemode", "quickjs-wasi"] },
	];
	for (const s of sides) s.times = [];
	for (let i = 0; i < runs; i++) {
		for (const s of i % 2 ? [...sides].reverse() : sides) {
			const box = mkdtempSync(join(work, "run-"));
			const agentDir = join(box, "agent");
			mkdirSync(agentDir);
			mkdirSync(join(box, "tmp"));
			const e = env({ PATH: pathWithoutRust(), PI_CODING_AGENT_DIR: agentDir, TMPDIR: join(box, "tmp"), PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" });
			const t0 = process.hrtime.bigint();
			const inst = spawnSync(NODE22, [pi.cli, "install", s.spec], { cwd: box, env: e, encoding: "utf8" });
			const ms = Number(process.hrtime.bigint() - t0) / 1e6;
			if (inst.status !== 0) throw new Error(`pi install ${s.spec}: ${inst.stderr}`);
			s.times.push(ms);
			if (s.size === undefined) {
				const top = findInstalled(agentDir, s.pkgs[0]);
				if (!top) throw new Error(`${s.pkgs[0]} not found under ${agentDir}`);
				const nm = s.pkgs[0].includes("/") ? dirname(dirname(top)) : dirname(top);
				s.sizes = s.pkgs.map((p) => du(join(nm, p)));
				s.size = s.sizes.reduce((a, b) => a + b, 0);
			}
			rmSync(box, { recursive: true, force: true });
		}
	}
	const [tk, base] = sides;
	console.log(`pi install from a loopback registry (Pi ${pi.name}, cold npm cache, ${runs} run(s) each, median):`);
	for (const s of sides) console.log(`  ${s.label.padEnd(8)} ${s.spec.padEnd(34)} ${(median(s.times) / 1000).toFixed(2)} s   installed ${mb(s.size)} (${s.pkgs.map((p, i) => `${p} ${mb(s.sizes[i])}`).join(" + ")})`);
	console.log(`  ratio toolkit/baseline: install time ${(median(tk.times) / median(base.times)).toFixed(2)}x, installed size ${(tk.size / base.size).toFixed(2)}x`);
} finally {
	registry?.stop(); // its process would keep ours alive
}
