// Worktree creation benchmark (docs/worktrees.md): creating a worktree of a 10,000-file repository with
// `worktreeCreate` (project checks, `git worktree add`, lock, `.worktreeinclude`, record) against `git worktree add`
// alone (goal <= 1.5x), and the `.worktreeinclude` copy cost per MiB against `cp -r` of the same folder.
//  Rounds are interleaved (ours, baseline, ours, ...); each round's worktree is removed untimed. A third part times
//  `/pct worktree new` in a real Pi (1.6.0, RPC mode) — the create and the session switch into the worktree, until
//  the command answers — against `git worktree add` alone in the same round.
// Build the release addon first (`npm run build`): node bench/worktree.mjs [--runs N] [--quick]
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { tempDir } from "../scripts/tmp.mjs";
import { PI_VERSIONS, RpcPi, sandbox, writeConfig } from "../__test__/helpers/pi.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const native = createRequire(import.meta.url)(join(ROOT, "index.js"));
const i = process.argv.indexOf("--runs");
const runs = i >= 0 ? Number(process.argv[i + 1]) : process.argv.includes("--quick") ? 3 : 11;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs) => `median ${median(xs).toFixed(1)} ms (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`;

const N = 10_000;
const dir = tempDir("pct-worktree-bench-");
const ws = join(dir, "ws");
const agentDir = join(dir, "agent");
const plain = join(dir, "plain");
mkdirSync(ws);
mkdirSync(agentDir);
mkdirSync(plain);
for (let k = 0; k < N; k++) {
	const d = join(ws, `d${k % 100}`);
	if (k < 100) mkdirSync(d, { recursive: true });
	writeFileSync(join(d, `f${k}.txt`), `file ${k}\n`.repeat(20));
}
const ID = ["-c", "user.email=b@b", "-c", "user.name=b", "-c", "core.hooksPath=/dev/null"];
const git = (cwd, ...args) => execFileSync("git", [...ID, ...args], { cwd, encoding: "utf8", maxBuffer: 64 << 20 });
git(ws, "init", "-q", "-b", "main");
git(ws, "add", "-A");
git(ws, "commit", "-qm", "base");

let seq = 0;
const ours = async () => {
	const name = `b${++seq}`;
	const t = performance.now();
	const r = await native.worktreeCreate(agentDir, ws, name, process.pid);
	const ms = performance.now() - t;
	if (!r.ok) throw new Error(`${r.code}: ${r.message}`);
	const d = await native.worktreeDelete(agentDir, ws, name, true, process.pid);
	if (!d.ok) throw new Error(`${d.code}: ${d.message}`);
	// What the create spent besides `git worktree add` (the lock, the include copy, the record).
	return { ms, copied: r.bytesCopied, rest: r.totalMs - r.addMs };
};
const baseline = () => {
	const name = `g${++seq}`;
	const path = join(plain, name);
	const t = performance.now();
	execFileSync("git", ["worktree", "add", "--quiet", "-b", name, path, "HEAD"], { cwd: ws });
	const ms = performance.now() - t;
	git(ws, "worktree", "remove", "--force", path);
	git(ws, "branch", "-D", "-q", name);
	return ms;
};

const a = [];
const b = [];
const ratios = [];
for (let r = 0; r < runs; r++) {
	const o = (await ours()).ms;
	const g = baseline();
	a.push(o);
	b.push(g);
	ratios.push(o / g);
}
console.log(`worktree of ${N} files, ${runs} rounds`);
console.log(`  ours worktreeCreate        ${fmt(a)}`);
console.log(`  baseline git worktree add  ${fmt(b)}`);
console.log(`  ratio ours/baseline        median ${median(ratios).toFixed(2)}x (goal <= 1.5x)`);

// .worktreeinclude: an ignored folder of 32 MiB in 256 files, copied into each new worktree.
const MIB = 32;
mkdirSync(join(ws, "cache"));
const chunk = Buffer.alloc((MIB << 20) / 256, 7);
for (let k = 0; k < 256; k++) writeFileSync(join(ws, "cache", `c${k}.bin`), chunk);
writeFileSync(join(ws, ".gitignore"), "cache/\n");
const withInc = [];
const without = [];
const cp = [];
const perMib = [];
for (let r = 0; r < runs; r++) {
	// The same round creates one worktree with the include and one without; the difference of the time each spent
	// besides `git worktree add` is the copy (the checkout's own time varies too much to subtract whole creates).
	writeFileSync(join(ws, ".worktreeinclude"), "cache/\n");
	const o = await ours();
	if (o.copied !== MIB << 20) throw new Error(`copied ${o.copied} bytes`);
	rmSync(join(ws, ".worktreeinclude"));
	const n = await ours();
	const t = performance.now();
	execFileSync("cp", ["-r", join(ws, "cache"), join(plain, `cp${r}`)]);
	const c = performance.now() - t;
	withInc.push(o.ms);
	without.push(n.ms);
	cp.push(c);
	perMib.push((o.rest - n.rest) / MIB);
}
console.log(`.worktreeinclude of ${MIB} MiB (256 files), ${runs} rounds`);
console.log(`  ours worktreeCreate with include     ${fmt(withInc)}`);
console.log(`  ours worktreeCreate without include  ${fmt(without)}`);
console.log(`  include cost                         median ${median(perMib).toFixed(2)} ms per MiB`);
console.log(`  baseline cp -r of the folder         ${fmt(cp)} (${(median(cp) / MIB).toFixed(2)} ms per MiB)`);

// `/pct worktree new` in a real Pi, switch included, against `git worktree add` in the same round.
{
	rmSync(join(ws, ".worktreeinclude"), { force: true });
	const box = sandbox("pct-worktree-bench-pi-");
	writeConfig(box, { worktrees: { enabled: true } });
	const version = PI_VERSIONS.find((v) => v.name.startsWith("1.")) ?? PI_VERSIONS[0];
	const pi = new RpcPi({ version, box, cwd: ws });
	const viaPi = [];
	const plainAdd = [];
	const rs = [];
	try {
		await pi.prompt("/pct status");
		for (let r = 0; r < runs; r++) {
			const name = `pi${r}`;
			const t = performance.now();
			const out = await pi.prompt(`/pct worktree new ${name}`, 600000);
			const ms = performance.now() - t;
			if (!out.notifications.some((n) => n.includes("This session now works in the worktree"))) throw new Error(out.notifications.join("\n"));
			await pi.prompt("/pct worktree leave", 600000);
			const d = await pi.prompt(`/pct worktree delete ${name} force`, 600000);
			if (!d.notifications.some((n) => n.startsWith(`Deleted worktree ${name}`))) throw new Error(d.notifications.join("\n"));
			const g = baseline();
			viaPi.push(ms);
			plainAdd.push(g);
			rs.push(ms / g);
		}
	} finally {
		await pi.close();
	}
	console.log(`/pct worktree new in Pi ${version.name} (create + session switch), ${N} files, ${runs} rounds`);
	console.log(`  ours /pct worktree new     ${fmt(viaPi)}`);
	console.log(`  baseline git worktree add  ${fmt(plainAdd)}`);
	console.log(`  ratio ours/baseline        median ${median(rs).toFixed(2)}x (goal <= 1.5x)`);
}
