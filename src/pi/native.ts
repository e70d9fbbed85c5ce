/**
 * Loads the native engine once; every TypeScript module goes through here so a missing or wrong binary is found in
 * one place. Loading never throws: when the binary is absent or cannot be loaded (wrong libc, too old a glibc, a
 * version from another release), `nativeLoad` carries a diagnosis and the extension registers only `/pct` with that
 * diagnosis (src/pi/unavailable.ts) instead of stopping Pi. See docs/release.md §Missing binary.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

type Native = typeof import("../../index.js");

/** Why the engine is unavailable, in the words `/pct status` and the start-up warning use. */
export interface NativeDiagnosis {
	/** The napi-rs platform triple of this process, e.g. `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`. */
	triple: string;
	/** Where the loader looked: the file next to index.js and the platform package (with the version it needs). */
	lookedFor: string[];
	/** What went wrong, one line. */
	reason: string;
	/** What the user should do next, one line. */
	fix: string;
}

export type NativeLoad = { ok: true; native: Native } | { ok: false; diagnosis: NativeDiagnosis };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

interface RootManifest {
	name: string;
	version: string;
	napi?: { binaryName?: string; targets?: string[] };
}

/** Linux libc of this process: glibc reports its runtime version in the process report, musl does not. */
function linuxLibc(): "gnu" | "musl" {
	try {
		const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
		return report?.header?.glibcVersionRuntime ? "gnu" : "musl";
	} catch {
		return "gnu";
	}
}

/** The napi-rs platform suffix (`<binaryName>.<triple>.node`, package `<name>-<triple>`) for a platform. */
export function platformTriple(platform: string = process.platform, arch: string = process.arch, libc?: "gnu" | "musl"): string {
	if (platform === "linux") return `linux-${arch}-${libc ?? linuxLibc()}`;
	if (platform === "win32") return `win32-${arch}-msvc`;
	return `${platform}-${arch}`;
}

/** napi-rs Rust target triple -> platform suffix (the names under npm/). */
export function suffixOfTarget(target: string): string {
	const [arch, , os, abi] = target.split("-");
	const a = arch === "x86_64" ? "x64" : arch === "aarch64" ? "arm64" : arch;
	if (os === "darwin") return `darwin-${a}`;
	if (os === "windows") return `win32-${a}-msvc`;
	return `linux-${a}-${abi}`;
}

/** Every message in an error's `cause` chain (the napi-rs loader chains one error per place it tried). */
function causes(err: unknown): string[] {
	const out: string[] = [];
	for (let e: unknown = err, n = 0; e && n < 32; n++) {
		const { message, cause } = e as { message?: unknown; cause?: unknown };
		out.push(String(message ?? e).split("\n")[0]);
		e = cause;
	}
	return out;
}

/** Builds the diagnosis for a failed load (`err`) or a loaded binary of another version (`foundVersion`). */
export function diagnose(manifest: RootManifest, triple: string, err: unknown, foundVersion?: string): NativeDiagnosis {
	const bin = manifest.napi?.binaryName ?? manifest.name;
	const pkg = `${manifest.name}-${triple}`;
	const lookedFor = [`${bin}.${triple}.node next to index.js`, `npm package ${pkg}@${manifest.version}`];
	const supported = (manifest.napi?.targets ?? []).map(suffixOfTarget);
	const reinstall = `reinstall so npm fetches ${pkg}@${manifest.version}: pi remove npm:${manifest.name} && pi install npm:${manifest.name} (optional dependencies must not be omitted); in a clone run \`npm run build\` (needs Rust)`;
	if (foundVersion !== undefined) {
		return { triple, lookedFor, reason: `the loaded engine is version ${foundVersion}, this package is ${manifest.version}`, fix: reinstall };
	}
	if (!supported.includes(triple)) {
		return {
			triple,
			lookedFor,
			reason: `no prebuilt engine is published for ${triple} (prebuilt: ${supported.join(", ")})`,
			fix: `build it from source: clone the repository, run \`npm install && npm run build\` (needs Rust), then \`pi install <path of the clone>\``,
		};
	}
	const all = causes(err);
	const real = all.find((m) => !/Cannot find module|Cannot find native binding/.test(m));
	if (real === undefined) return { triple, lookedFor, reason: `no engine binary for ${triple} is installed`, fix: reinstall };
	const glibc = /GLIBC_(\d+\.\d+)/.exec(real);
	return {
		triple,
		lookedFor,
		reason: `an engine binary was found but cannot be loaded: ${real}`,
		fix: glibc
			? `this system's glibc is older than the engine needs (GLIBC_${glibc[1]}); the published ${triple} engine needs glibc >= 2.28 — reinstall from the registry, or build from source on this machine (\`npm run build\`, needs Rust)`
			: reinstall,
	};
}

/** The whole text `/pct status` and the start-up warning show. */
export function diagnosisText(d: NativeDiagnosis): string {
	return [
		`Pi Codex Toolkit is off: its native engine could not be loaded on ${d.triple}. No toolkit tools are registered.`,
		`  looked for: ${d.lookedFor.join("; ")}`,
		`  reason: ${d.reason}`,
		`  fix: ${d.fix}`,
	].join("\n");
}

/** Loads `index.js` (the napi-rs loader) from `root`; never throws. Exported for tests with a fake root. */
export function loadNative(root: string = ROOT, requireFn: (id: string) => unknown = require): NativeLoad {
	const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as RootManifest;
	// The triple is worked out only on failure (the glibc probe reads a process report).
	const failed = (err: unknown, version?: string): NativeLoad => ({ ok: false, diagnosis: diagnose(manifest, platformTriple(), err, version) });
	let binding: Native;
	try {
		// index.js is napi-rs's ESM loader (the package is `"type": "module"`); Node 22 loads it through require().
		// A plain copy of its exports: a module namespace is read-only, and tests substitute classes here.
		binding = { ...(requireFn(join(root, "index.js")) as Native) };
	} catch (err) {
		return failed(err);
	}
	let version: string;
	try {
		version = binding.engineVersion();
	} catch (err) {
		return failed(err);
	}
	if (version !== manifest.version) return failed(undefined, version);
	// A binary built from an older checkout of the same version lacks newer exports; index.js then re-exports them as
	// undefined, and the first `new native.X()` would stop the extension. Refuse it here with the names instead.
	// (napi-rs also re-exports a class renamed with js_name under its Rust name `JsX`, always undefined: not missing.)
	const exported = binding as unknown as Record<string, unknown>;
	const missing = Object.keys(exported).filter((k) => exported[k] === undefined && !(k.startsWith("Js") && exported[k.slice(2)] !== undefined));
	if (missing.length > 0) return failed(new Error(`the engine binary is out of date: it lacks ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ` and ${missing.length - 5} more` : ""}`));
	return { ok: true, native: binding };
}

export const nativeLoad: NativeLoad = loadNative();

/**
 * The napi-rs addon (see index.d.ts at the package root for its typed surface). When the engine is unavailable every
 * use throws the diagnosis; the extension entry checks `nativeLoad` first and never reaches such a use.
 */
export const native: Native = nativeLoad.ok
	? nativeLoad.native
	: (new Proxy(
			{},
			{
				get(_target, key) {
					if (key === "then") return undefined;
					throw new Error(diagnosisText((nativeLoad as { diagnosis: NativeDiagnosis }).diagnosis));
				},
			},
		) as Native);
