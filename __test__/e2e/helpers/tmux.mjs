// Interactive Pi in tmux for the TUI e2e suites (docs/render.md "Start-up in the tmux test"): one tmux server per
// Pi, the faux model, stand-ins for fd and rg, and the submit that waits out Pi's start-up. The screens are read with
// `tmux capture-pane -p -e` (text with its colours); PCT_TUI_CAPTURE_DIR=<dir> keeps the captured screens there.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FAUX, NODE22, ROOT } from "../../helpers/pi.mjs";

const ESC = /\x1b\[[0-9;?]*[A-Za-z]/g;
export const plain = (s) => s.replace(ESC, "").replace(/[ \t]+$/gm, "");
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One tmux server (its own socket) running one interactive Pi. */
export class TmuxPi {
	constructor(version, box, script) {
		// Pi's start-up check for fd and rg (see submitWhenReady) finds them in the agent dir's bin/ by existence
		// alone: with these stand-ins it spawns nothing from PATH and downloads nothing, on any machine. The test
		// never runs them (the host tools replace Pi's grep and find; nothing types an @ path).
		mkdirSync(join(box.agentDir, "bin"), { recursive: true });
		for (const tool of ["fd", "rg"]) writeFileSync(join(box.agentDir, "bin", tool), `#!/bin/sh\necho "${tool}: stand-in of the TUI test" >&2\nexit 2\n`, { mode: 0o755 });
		this.socket = `pct-tui-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
		const env = {
			PI_CODING_AGENT_DIR: box.agentDir,
			TMPDIR: box.tmp,
			PI_OFFLINE: "1",
			PI_SKIP_VERSION_CHECK: "1",
			PI_TELEMETRY: "0",
			PCT_FAUX_SCRIPT: script,
		};
		const cmd = [
			"env",
			...Object.entries(env).map(([k, v]) => `${k}=${v}`),
			NODE22,
			version.cli,
			"--no-session",
			"-ne",
			"-e",
			FAUX,
			"-e",
			ROOT,
			"--provider",
			"faux",
			"--model",
			"faux-1",
		];
		this.tmux("new-session", "-d", "-x", "120", "-y", "140", "-c", box.cwd, cmd.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" "));
	}
	tmux(...args) {
		const r = spawnSync("tmux", ["-L", this.socket, ...args], { encoding: "utf8" });
		if (r.status !== 0 && args[0] !== "kill-server") throw new Error(`tmux ${args[0]}: ${r.stderr}`);
		return r.stdout;
	}
	/** The visible screen with its colours (`history` lines of scrollback above it too). */
	screen(history = 0) {
		return this.tmux("capture-pane", "-p", "-e", "-J", ...(history ? ["-S", `-${history}`] : []));
	}
	keys(...keys) {
		this.tmux("send-keys", ...keys);
	}
	/** Polls the screen until `re` matches its text (colours stripped); resolves the raw screen. */
	async waitFor(re, what, timeoutMs = 90_000, history = 0) {
		const end = Date.now() + timeoutMs;
		let last = "";
		while (Date.now() < end) {
			last = this.screen(history);
			if (re.test(plain(last))) return last;
			await sleep(200);
		}
		throw new Error(`timed out waiting for ${what} (${re}); the screen:\n${plain(last)}`);
	}
	close() {
		this.tmux("kill-server");
	}
}

/**
 * Types `text` and submits it once Pi accepts a submit. Both versions draw the editor and footer before their
 * start-up has finished; until then a submit only says "Startup is still in progress" and keeps the text in the
 * editor. What Pi awaits between the two is its fd/rg check (`ensureTool`: the agent dir's bin/, then `fd
 * --version` / `rg --version` from PATH without a timeout, then a download from GitHub unless PI_OFFLINE is set),
 * so the wait depends on the machine: what PATH holds and how its network answers. The test takes the machine out
 * (stand-ins in bin/, PI_OFFLINE=1) and still submits again, as long as the refusal is the last thing on the
 * screen, until `done` shows.
 */
export async function submitWhenReady(pi, text, done, timeoutMs = 180_000) {
	pi.keys(text, "Enter");
	const end = Date.now() + timeoutMs;
	while (Date.now() < end) {
		const screen = plain(pi.screen());
		if (done.test(screen)) return;
		const refused = screen.lastIndexOf("Startup is still in progress");
		// Refused and not submitted since: the chat below the refusal (above the editor's border) has no user message.
		const chat = refused >= 0 ? screen.slice(refused).split(/\n─{10,}/)[0] : "";
		if (refused >= 0 && !new RegExp(`\\n\\s*${text}\\n`).test(`${chat}\n`)) pi.keys("Enter");
		await sleep(1000);
	}
	throw new Error(`"${text}" was never accepted; the screen:\n${plain(pi.screen())}`);
}

/** Keeps a screen for the report when PCT_TUI_CAPTURE_DIR is set. */
export function keep(name, raw) {
	const dir = process.env.PCT_TUI_CAPTURE_DIR;
	if (!dir) return;
	mkdirSync(dir, { recursive: true });
	writeFileSync(join(dir, `${name}.ansi`), raw);
	writeFileSync(join(dir, `${name}.txt`), plain(raw));
}

/** The escape sequence that colours the first occurrence of `text` on the raw screen. */
export function colourOf(raw, text) {
	const i = raw.indexOf(text);
	assert.ok(i >= 0, `"${text}" is on the screen`);
	const before = raw.slice(Math.max(0, i - 40), i);
	const m = /(\x1b\[[0-9;]*m)+$/.exec(before);
	return m ? m[0] : "";
}

