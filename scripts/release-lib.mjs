// Shared by scripts/build-all.mjs and scripts/release.mjs: the release targets, their libc floors, the zig target
// that reaches each floor, and the check that a binary needs no libc symbol above its floor (docs/release.md).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const manifest = () => JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
export const BINARY = "pi-codex-toolkit";

/**
 * Every published target. `build` is the `napi build --target` value (a `.2.28` suffix makes zig link against that
 * glibc); `glibc` is the floor the release check enforces; `where` says which machine builds it.
 */
export const TARGETS = [
	{ target: "x86_64-unknown-linux-gnu", suffix: "linux-x64-gnu", build: "x86_64-unknown-linux-gnu.2.28", glibc: "2.28", where: "linux (zig)" },
	{ target: "x86_64-unknown-linux-musl", suffix: "linux-x64-musl", build: "x86_64-unknown-linux-musl", musl: "x86_64", where: "linux (zig)" },
	{ target: "aarch64-unknown-linux-gnu", suffix: "linux-arm64-gnu", build: "aarch64-unknown-linux-gnu.2.17", glibc: "2.17", qemu: "aarch64", where: "linux (zig)" },
	{ target: "x86_64-apple-darwin", suffix: "darwin-x64", build: "x86_64-apple-darwin", where: "macOS" },
	{ target: "aarch64-apple-darwin", suffix: "darwin-arm64", build: "aarch64-apple-darwin", where: "macOS" },
	{ target: "x86_64-pc-windows-msvc", suffix: "win32-x64-msvc", build: "x86_64-pc-windows-msvc", where: "Windows" },
];

/** The release target of this machine, or undefined. */
export function hostTarget() {
	const arch = { x64: "x64", arm64: "arm64" }[process.arch];
	let suffix;
	if (process.platform === "linux") {
		const gnu = Boolean(process.report?.getReport()?.header?.glibcVersionRuntime);
		suffix = `linux-${arch}-${gnu ? "gnu" : "musl"}`;
	} else if (process.platform === "win32") suffix = `win32-${arch}-msvc`;
	else suffix = `${process.platform}-${arch}`;
	return TARGETS.find((t) => t.suffix === suffix);
}

export const binaryName = (t) => `${BINARY}.${t.suffix}.node`;
export const packageDir = (t) => join(ROOT, "npm", t.suffix);
export const packageBinary = (t) => join(packageDir(t), binaryName(t));

const cmp = (a, b) => {
	const [x, y] = [a.split(".").map(Number), b.split(".").map(Number)];
	for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
	return 0;
};

/** Undefined dynamic symbols of an ELF file: `{ name, version }` (version "" when unversioned). Uses binutils. */
function undefinedSymbols(file) {
	const r = spawnSync("objdump", ["-T", file], { encoding: "utf8", maxBuffer: 64 << 20 });
	if (r.error || r.status !== 0) throw new Error(`objdump -T failed (${r.error?.message ?? r.stderr.trim()}); install binutils`);
	const out = [];
	for (const line of r.stdout.split("\n")) {
		if (!line.includes("*UND*")) continue;
		// e.g. "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.2.5) memcpy" or "... w   D  *UND* ... __gmon_start__"
		const weak = /^\S+\s+w\s/.test(line);
		const m = /\*UND\*\s+\S+\s+(?:\(?([A-Za-z_]+[0-9.]*)\)?\s+)?(\S+)\s*$/.exec(line);
		if (m) out.push({ name: m[2], version: m[1] ?? "", weak });
	}
	return out;
}

/** Node-API symbols come from the node process itself, not from libc. */
const fromNode = (name) => name.startsWith("napi_") || name.startsWith("node_api_") || name.startsWith("uv_");

/**
 * Problems of one binary against its target's floor ([] = fine). glibc targets: no `GLIBC_x.y` above the floor and
 * no unversioned undefined symbol besides Node-API ones (such a symbol links silently and fails at load time, see
 * docs/release.md §The symbol trap). musl: the system musl loader resolves everything but Node-API. Other targets: [].
 */
export function checkBinary(t, file) {
	const problems = [];
	if (t.glibc) {
		let max = "0";
		for (const s of undefinedSymbols(file)) {
			const v = /^GLIBC_([0-9.]+)$/.exec(s.version);
			if (v) {
				if (cmp(v[1], max) > 0) max = v[1];
				if (cmp(v[1], t.glibc) > 0) problems.push(`${s.name} needs GLIBC_${v[1]}, above the floor ${t.glibc}`);
			} else if (!s.version && !s.weak && !fromNode(s.name)) {
				problems.push(`${s.name} is undefined without a version (missing from the target libc; loading would fail)`);
			}
		}
		return { floor: `glibc ${max}`, problems };
	}
	if (t.musl) {
		const ld = `/lib/ld-musl-${t.musl}.so.1`;
		if (!existsSync(ld)) return { floor: "musl (not checked: no musl loader here)", problems };
		const r = spawnSync(ld, ["--list", file], { encoding: "utf8" });
		for (const line of `${r.stdout}\n${r.stderr}`.split("\n")) {
			const m = /Error relocating .*: (\S+): symbol not found/.exec(line);
			if (m && !fromNode(m[1])) problems.push(`${m[1]} is not in musl (loading would fail)`);
		}
		return { floor: "musl 1.2", problems };
	}
	return { floor: "n/a", problems };
}

/** zig for cargo-zigbuild: on PATH, or the PyPI `ziglang` package (which cargo-zigbuild finds by itself). */
export function zigAvailable() {
	for (const [cmd, args] of [["zig", ["version"]], ["python3", ["-m", "ziglang", "version"]]]) {
		const r = spawnSync(cmd, args, { encoding: "utf8" });
		if (r.status === 0) return `${cmd} ${args.join(" ")}`.replace(" version", "") + ` ${r.stdout.trim()}`;
	}
	return null;
}
