// Isolated session worktrees through the real Pi (0.87.1 and 1.6.0) in RPC mode with the scripted faux model
// (docs/worktrees.md): /pct worktree new switches the session into the worktree, a tool writes there and not in the
// project, merge fast-forwards the project; hooks never run; a token is refused once the project moved; a conflict
// stays in the worktree; a linked-over worktree fails every tool with WORKTREE_MISSING; delete keeps a snapshot;
// a write-capable Task delegate works in its own worktree and is merged back (a conflict keeps its branch).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PI_VERSIONS, ROOT, RpcPi, sandbox, writeScript, writeToolConfig } from "../helpers/pi.mjs";

const ID = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "core.hooksPath=/dev/null"];
const git = (cwd, ...args) => execFileSync("git", [...ID, ...args], { cwd, encoding: "utf8", env: { ...process.env, LC_ALL: "C" } }).trim();

/** A sandbox whose workspace is a git project on `main` with one commit, hooks that would leave a mark, and the
 * toolkit's host tools and worktrees on. */
function project() {
	const box = sandbox("pct-wt-e2e-");
	git(box.cwd, "init", "-q", "-b", "main");
	writeFileSync(join(box.cwd, "a.txt"), "one\n");
	writeFileSync(join(box.cwd, ".gitignore"), ".env\n");
	writeFileSync(join(box.cwd, ".env"), "TOKEN=1\n");
	writeFileSync(join(box.cwd, ".worktreeinclude"), ".env\n");
	git(box.cwd, "add", "a.txt", ".gitignore", ".worktreeinclude");
	git(box.cwd, "commit", "-q", "-m", "first");
	const mark = join(box.base, "hook-ran");
	for (const hook of ["pre-commit", "post-commit", "post-checkout", "post-merge", "pre-merge-commit", "commit-msg", "reference-transaction"]) {
		const p = join(box.cwd, ".git", "hooks", hook);
		writeFileSync(p, `#!/bin/sh\necho ${hook} >> '${mark}'\n`);
		chmodSync(p, 0o755);
	}
	writeToolConfig(box, { hostTools: { enabled: true }, worktrees: { enabled: true } });
	return { box, mark };
}

const script = (box, steps) => writeScript(box, `export default ${JSON.stringify(steps)};`);

/** Runs a /pct command and returns its notifications as one text. */
async function pct(pi, cmd) {
	return (await pi.prompt(cmd)).notifications.join("\n");
}

/** `/pct worktree new <name>`: resolves the worktree folder the session switched into. */
async function enter(pi, name) {
	const text = await pct(pi, `/pct worktree new ${name}`);
	const m = /Worktree (\S+) created at (\S+) on branch pct\/\1/.exec(text);
	assert.ok(m, text);
	assert.match(text, /This session now works in the worktree/);
	return m[2];
}

/** Answers confirm dialogs from a queue (true/false), recording their titles. */
function confirms(answers, seen = []) {
	return (req) => {
		seen.push(req);
		if (req.method !== "confirm") return { cancelled: true };
		return { confirmed: answers.shift() ?? false };
	};
}

for (const version of PI_VERSIONS) {
	test(`[pi ${version.name}] new → tools write in the worktree, not the project → merge fast-forwards; hooks never run`, async () => {
		const { box, mark } = project();
		// The init command runs once in the new worktree with the three variables (it writes outside the checkout).
		const initOut = join(box.base, "init.txt");
		writeToolConfig(box, { hostTools: { enabled: true }, worktrees: { enabled: true, init: `echo "$PI_PORT|$PI_PROJECT_ROOT|$PI_WORKTREE_ROOT|$(pwd)" >> '${initOut}'; echo init-said-hello` } });
		const steps = [
			{ tools: [{ name: "Write", args: { path: "out.txt", content: "from the agent\n" } }] },
			{ tools: [{ name: "Bash", args: { command: "echo \"$PI_PORT|$PI_PROJECT_ROOT|$PI_WORKTREE_ROOT|$(pwd)\" > env.txt" } }] },
			{ text: "done" },
		];
		const seen = [];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: confirms([true], seen) });
		try {
			const entered = await pct(pi, "/pct worktree new feat");
			const wt = /Worktree feat created at (\S+) on branch pct\/feat/.exec(entered)?.[1];
			assert.ok(wt, entered);
			assert.match(entered, /^Running worktrees\.init in \S+: echo /m);
			assert.match(entered, /^worktrees\.init finished \(output: \S+feat\.init\.log\)\.$/m);
			assert.match(entered, /This session now works in the worktree/);
			const [initPort, initProject, initRoot, initPwd] = readFileSync(initOut, "utf8").trim().split("|");
			assert.deepEqual([initProject, initRoot, initPwd], [git(box.cwd, "rev-parse", "--show-toplevel"), wt, wt]);
			assert.equal(readFileSync(join(wt, ".env"), "utf8"), "TOKEN=1\n", ".worktreeinclude copied the ignored file");
			assert.equal(git(wt, "symbolic-ref", "--short", "HEAD"), "pct/feat");
			const state = await pi.command("get_state");
			assert.equal(state.success, true);
			await pi.prompt("go");
			assert.equal(readFileSync(join(wt, "out.txt"), "utf8"), "from the agent\n");
			assert.ok(!existsSync(join(box.cwd, "out.txt")), "nothing landed in the project");
			const [port, projectRoot, worktreeRoot, pwd] = readFileSync(join(wt, "env.txt"), "utf8").trim().split("|");
			assert.ok(Number(port) >= 41000 && Number(port) <= 48990 && (Number(port) - 41000) % 10 === 0, port);
			assert.equal(projectRoot, git(box.cwd, "rev-parse", "--show-toplevel"));
			assert.equal(worktreeRoot, wt);
			assert.equal(pwd, wt);
			assert.equal(port, initPort, "the session keeps the block the init command had");
			const status = await pct(pi, "/pct status");
			assert.match(status, new RegExp(`^Worktree: feat \\(pct/feat\\) at ${wt.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}; project .*; PI_PORT ${port}$`, "m"));
			// The footer names the worktree.
			const footer = pi.events.filter((e) => e.type === "extension_ui_request" && e.method === "setStatus" && e.statusKey === "pct-worktree");
			assert.equal(footer.at(-1)?.statusText, "worktree feat (pct/feat)");
			const where = await pct(pi, "/pct worktree");
			assert.match(where, /^Worktree feat \(/m);
			assert.match(where, /^changed files: 2$/m);
			// Locked while the session uses it.
			assert.match(git(box.cwd, "worktree", "list", "--porcelain"), /locked pi-codex-toolkit session \(pid \d+\)/);
			const merged = await pct(pi, "/pct worktree merge");
			const dialog = seen.find((r) => r.method === "confirm");
			assert.match(dialog.title, /^Merge worktree feat into main\?$/);
			assert.match(dialog.message, /^commits: 1$/m);
			assert.match(dialog.message, /^ {2}A env\.txt$/m);
			assert.match(dialog.message, /^ {2}A out\.txt$/m);
			assert.match(merged, /^Merged: main fast-forwarded /m);
			assert.equal(readFileSync(join(box.cwd, "out.txt"), "utf8"), "from the agent\n");
			assert.equal(git(box.cwd, "rev-parse", "HEAD"), git(wt, "rev-parse", "HEAD"));
			const list = await pct(pi, "/pct worktree list");
			assert.match(list, /^ {2}feat {2}in-use \(this session\) {2}pct\/feat /m);
			const left = await pct(pi, "/pct worktree leave");
			assert.match(left, /Back in the project checkout/);
			const cleared = pi.events.filter((e) => e.type === "extension_ui_request" && e.method === "setStatus" && e.statusKey === "pct-worktree");
			assert.equal(cleared.at(-1)?.statusText, undefined, "the footer line goes with the worktree");
			assert.doesNotMatch(git(box.cwd, "worktree", "list", "--porcelain"), /locked/, "leaving unlocks it");
			// The session was in memory (--no-session): new and leave each wrote a session file into the toolkit's folder.
			const sessionsDir = join(box.agentDir, "pi-codex-toolkit", "sessions");
			const cwds = () => readdirSync(sessionsDir).map((f) => JSON.parse(readFileSync(join(sessionsDir, f), "utf8").split("\n")[0]).cwd);
			assert.deepEqual(cwds().sort(), [box.cwd, wt].sort());
			const deleted = await pct(pi, "/pct worktree delete feat");
			assert.match(deleted, /^Deleted worktree feat: folder removed, branch pct\/feat deleted; 1 session file\(s\) the toolkit wrote for it removed\.$/m);
			assert.deepEqual(cwds(), [box.cwd], "the worktree's session file went with it; the project's stays");
			assert.ok(!existsSync(wt));
			assert.ok(!existsSync(mark), `a repository hook ran: ${existsSync(mark) ? readFileSync(mark, "utf8") : ""}`);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] the token is refused once the project moved; a conflict stays in the worktree`, async () => {
		const { box } = project();
		writeToolConfig(box, { hostTools: { enabled: true }, shellSessions: { enabled: true }, worktrees: { enabled: true } });
		const steps = [
			{ tools: [{ name: "Write", args: { path: "a.txt", content: "worktree side\n" } }] },
			// exec_command (Shell Sessions) runs in the worktree with the worktree variables.
			{ tools: [{ name: "exec_command", args: { cmd: "echo \"$PI_WORKTREE_ROOT|$(pwd)|$PI_PORT\" > shell-env.txt" } }] },
			{ text: "done" },
		];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: confirms([false]) });
		try {
			const wt = await enter(pi, "tok");
			await pi.prompt("go");
			const [root, pwd, port] = readFileSync(join(wt, "shell-env.txt"), "utf8").trim().split("|");
			assert.deepEqual([root, pwd], [wt, wt]);
			assert.match(port, /^4\d{4}$/);
			const declined = await pct(pi, "/pct worktree merge");
			const token = /To merge this preview later: \/pct worktree merge ([0-9a-f]{16})/.exec(declined)?.[1];
			assert.ok(token, declined);
			// The person commits in the project meanwhile: the token no longer matches.
			writeFileSync(join(box.cwd, "b.txt"), "b\n");
			git(box.cwd, "add", "b.txt");
			git(box.cwd, "commit", "-q", "-m", "project moved");
			const head = git(box.cwd, "rev-parse", "HEAD");
			const refused = await pct(pi, `/pct worktree merge ${token}`);
			assert.match(refused, /^WORKTREE_MOVED: The token [0-9a-f]{16} does not match/m);
			assert.equal(git(box.cwd, "rev-parse", "HEAD"), head);
			// Now a conflicting project commit: the next merge syncs, conflicts in the worktree, the project is untouched.
			writeFileSync(join(box.cwd, "a.txt"), "project side\n");
			git(box.cwd, "commit", "-q", "-am", "project edits a");
			const conflict = await pct(pi, "/pct worktree merge");
			assert.match(conflict, /^WORKTREE_CONFLICT: Merging main into the worktree conflicts in 1 file\(s\): a\.txt\. The conflict is in the worktree .*the project is untouched\./m);
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "project side\n");
			assert.match(readFileSync(join(wt, "a.txt"), "utf8"), /^<<<<<<< /m);
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a linked-over worktree fails every tool with WORKTREE_MISSING; delete keeps a snapshot and removes only the link`, async () => {
		const { box } = project();
		const steps = [
			{ tools: [{ name: "Write", args: { path: "draft.txt", content: "draft\n" } }] },
			{ text: "written" },
			{ tools: [{ name: "Write", args: { path: "x.txt", content: "must not land\n" } }, { name: "Read", args: { path: "draft.txt" } }] },
			{ text: "done" },
		];
		const pi = new RpcPi({ version, box, script: script(box, steps), ui: confirms([true]) });
		try {
			const wt = await enter(pi, "gone");
			await pi.prompt("write a draft");
			assert.ok(existsSync(join(wt, "draft.txt")));
			// The person commits the draft on the worktree branch (work the project does not have).
			git(wt, "add", "draft.txt");
			git(wt, "commit", "-q", "-m", "draft");
			// The worktree folder is swapped for a link to a look-alike folder.
			const elsewhere = join(box.base, "elsewhere");
			renameSync(wt, elsewhere);
			symlinkSync(elsewhere, wt);
			const r = await pi.prompt("try again");
			const ends = r.events.filter((e) => e.type === "tool_execution_end");
			assert.equal(ends.length, 2);
			for (const e of ends) {
				assert.equal(e.isError, true, JSON.stringify(e.result));
				const text = e.result.content.map((c) => c.text).join("\n");
				assert.match(text, /^WORKTREE_MISSING: The worktree folder is not usable: .* is a symbolic link\./, text);
			}
			assert.ok(!existsSync(join(elsewhere, "x.txt")) && !existsSync(join(box.cwd, "x.txt")), "nothing was written anywhere");
			const where = await pct(pi, "/pct worktree");
			assert.match(where, /^WORKTREE_MISSING: /m);
			await pct(pi, "/pct worktree leave");
			const list = await pct(pi, "/pct worktree list");
			assert.match(list, /^ {2}gone {2}missing {2}pct\/gone .*is a symbolic link/m);
			const deleted = await pct(pi, "/pct worktree delete gone");
			assert.match(deleted, /only the link at its folder removed \(its target is untouched\)/);
			assert.match(deleted, /its work is kept under refs\/pct\/snapshots\/gone/);
			assert.ok(existsSync(join(elsewhere, "draft.txt")), "the link's target is untouched");
			assert.throws(() => lstatSync(wt));
			assert.equal(git(box.cwd, "show", "refs/pct/snapshots/gone:draft.txt"), "draft");
			assert.equal(git(box.cwd, "branch", "--list", "pct/gone"), "");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] Pi's own tools, another extension's and the person's ! commands are refused with WORKTREE_MISSING once the worktree is linked over or gone`, async () => {
		const { box } = project();
		// Host tools off: the model gets Pi's own read, bash and write; plus another extension's tool that writes.
		writeToolConfig(box, { worktrees: { enabled: true } });
		const ext = join(box.base, "other-ext.ts");
		writeFileSync(
			ext,
			`import { Type } from "typebox";\nimport { appendFileSync } from "node:fs";\nimport { resolve } from "node:path";\nexport default function (pi: any) {\n\tpi.registerTool({ name: "ext_append", label: "append", description: "append a line", parameters: Type.Object({ path: Type.String(), line: Type.String() }), execute: async (_id: string, p: any, _s: any, _u: any, ctx: any) => { appendFileSync(resolve(ctx.cwd, p.path), p.line + "\\n"); return { content: [{ type: "text", text: "appended" }], details: {} }; } });\n}\n`,
		);
		const attempt = [
			{ name: "read", args: { path: "draft.txt" } },
			{ name: "bash", args: { command: "echo from-bash > bash.txt" } },
			{ name: "write", args: { path: "w.txt", content: "must not land\n" } },
			{ name: "ext_append", args: { path: "e.txt", line: "must not land" } },
		];
		const steps = [
			// One call per message: Pi runs the calls of one message concurrently.
			{ tools: [{ name: "write", args: { path: "draft.txt", content: "draft\n" } }] },
			{ tools: [{ name: "ext_append", args: { path: "draft.txt", line: "more" } }] },
			{ text: "written" },
			{ tools: attempt },
			{ text: "refused" },
			{ tools: attempt },
			{ text: "refused again" },
		];
		const pi = new RpcPi({ version, box, script: script(box, steps), extensions: [ROOT, ext] });
		const refusals = (r) => {
			const ends = r.events.filter((e) => e.type === "tool_execution_end");
			assert.deepEqual(ends.map((e) => e.toolName).sort(), ["bash", "ext_append", "read", "write"]);
			return ends.map((e) => {
				assert.equal(e.isError, true, JSON.stringify(e.result));
				return e.result.content.map((c) => c.text).join("\n");
			});
		};
		try {
			const wt = await enter(pi, "pitools");
			// Before: Pi's write and the other extension's tool work in the worktree.
			await pi.prompt("write a draft");
			assert.equal(readFileSync(join(wt, "draft.txt"), "utf8"), "draft\nmore\n");
			// The person's own `!` command (RPC "bash" is the same path: Pi's user_bash event) runs there too.
			const userBash = async () => (await pi.command("bash", { command: "echo from-user >> user.txt" })).data;
			assert.equal((await userBash()).exitCode, 0);
			assert.equal(readFileSync(join(wt, "user.txt"), "utf8"), "from-user\n");
			// The folder is swapped for a link to a look-alike: every call is refused before it runs.
			const elsewhere = join(box.base, "elsewhere");
			renameSync(wt, elsewhere);
			symlinkSync(elsewhere, wt);
			for (const text of refusals(await pi.prompt("try again"))) {
				assert.match(text, /^WORKTREE_MISSING: The worktree folder is not usable: .* is a symbolic link\. Nothing was changed\..*\/pct worktree leave/s, text);
			}
			const linked = await userBash();
			assert.equal(linked.exitCode, 1);
			assert.match(linked.output, /^WORKTREE_MISSING: The worktree folder is not usable: .* is a symbolic link\./);
			// The folder is gone: Pi's write would have created it again.
			unlinkSync(wt);
			for (const text of refusals(await pi.prompt("and again"))) {
				assert.match(text, /^WORKTREE_MISSING: The worktree folder is not usable: .* does not exist\. Nothing was changed\./, text);
			}
			assert.match((await userBash()).output, /^WORKTREE_MISSING: The worktree folder is not usable: .* does not exist\./);
			assert.ok(!existsSync(wt), "no tool recreated the worktree folder");
			for (const name of ["bash.txt", "w.txt", "e.txt"]) {
				assert.ok(!existsSync(join(elsewhere, name)) && !existsSync(join(box.cwd, name)), `${name} was written`);
			}
			assert.equal(readFileSync(join(elsewhere, "draft.txt"), "utf8"), "draft\nmore\n");
			assert.equal(readFileSync(join(elsewhere, "user.txt"), "utf8"), "from-user\n", "the user's command ran only while the folder was usable");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a write-capable Task delegate works in its own worktree from a checkpoint and is merged back; its definition is read from the project`, async () => {
		const { box } = project();
		writeToolConfig(box, { hostTools: { enabled: true }, subagents: { enabled: true }, worktrees: { enabled: true } });
		// An untracked project definition: only the project checkout has it (the worktree starts from HEAD).
		mkdirSync(join(box.cwd, ".pi", "agents"), { recursive: true });
		writeFileSync(join(box.cwd, ".pi", "agents", "writer.md"), "---\nname: writer\ndescription: Writes files\ntools: Write, Bash\n---\nWrite what you are told.\n");
		const child = writeScript(box, `export default { writer: ${JSON.stringify([
			{ tools: [{ name: "Write", args: { path: "by-delegate.txt", content: "delegate\n" } }] },
			// It sees the session's uncommitted draft (the checkpoint), in its own folder, with a PI_PORT block of its own.
			{ tools: [{ name: "Bash", args: { command: "echo \"$PI_PORT|$PI_WORKTREE_ROOT|$(pwd)|$(cat draft.txt)\" > delegate-env.txt" } }] },
			{ text: "DELEGATE DONE" },
		])} };`);
		const parent = script(box, [
			{ tools: [{ name: "Bash", args: { command: "echo draft > draft.txt" } }] },
			{ tools: [{ name: "Task", args: { agent: "writer", prompt: "write it" } }] },
			{ text: "parent done" },
		]);
		const listed = [];
		const ui = (req) => {
			if (req.method === "select") listed.push(req);
			return { cancelled: true };
		};
		const pi = new RpcPi({ version, box, script: parent, env: { PCT_FAUX_CHILD_SCRIPT: child }, ui });
		try {
			const wt = await enter(pi, "deleg");
			const port = /; PI_PORT (\d+)$/m.exec(await pct(pi, "/pct status"))?.[1];
			assert.ok(port);
			const head = git(wt, "rev-parse", "HEAD");
			const r = await pi.prompt("delegate", 120000);
			const task = r.events.find((e) => e.type === "tool_execution_end" && e.toolName === "Task");
			assert.ok(task, pi.stderr.slice(-2000));
			assert.equal(task.isError, false, JSON.stringify(task.result));
			const own = task.result.details.worktree;
			assert.equal(own.outcome, "merged");
			assert.match(own.branch, /^pct\/dg-[0-9a-f]{6}$/);
			assert.match(task.result.content[0].text, /DELEGATE DONE\n\n\[Its changes to 2 file\(s\) were merged into this session's worktree as uncommitted changes: A by-delegate\.txt, A delegate-env\.txt\.\]/);
			// Merged into the session worktree, uncommitted; the delegate's worktree and branch are gone.
			assert.equal(readFileSync(join(wt, "by-delegate.txt"), "utf8"), "delegate\n");
			const [dgPort, ...dgEnv] = readFileSync(join(wt, "delegate-env.txt"), "utf8").trim().split("|");
			assert.deepEqual(dgEnv, [own.path, own.path, "draft"]);
			assert.ok(/^4[1-8]\d{3}$/.test(dgPort) && dgPort !== port, `the delegate's PI_PORT ${dgPort} is a block of its own, not the session's ${port}`);
			assert.notEqual(own.path, wt);
			assert.equal(git(wt, "rev-parse", "HEAD"), head);
			assert.ok(!existsSync(own.path));
			assert.equal(git(box.cwd, "branch", "--list", own.branch), "");
			// The project checkout is untouched.
			assert.ok(!existsSync(join(box.cwd, "by-delegate.txt")), "nothing landed in the project");
			assert.equal(git(box.cwd, "status", "--porcelain"), "?? .pi/");
			// The review lists the delegate's change where it now is, and rolls it back there.
			await pi.prompt("/pct review");
			assert.ok(listed.some((r) => r.options.some((o) => /writer \(Task\)/.test(o) && /by-delegate\.txt/.test(o))), JSON.stringify(listed));
			await pct(pi, "/pct review rollback all");
			assert.ok(!existsSync(join(wt, "by-delegate.txt")), "rolled back in the session worktree");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] two background writers do not see each other's files; a conflict keeps the branch and says how to continue`, async () => {
		const { box } = project();
		writeToolConfig(box, { hostTools: { enabled: true }, subagents: { enabled: true }, worktrees: { enabled: true } });
		mkdirSync(join(box.agentDir, "agents"), { recursive: true });
		for (const name of ["one", "two"]) writeFileSync(join(box.agentDir, "agents", `${name}.md`), `---\nname: ${name}\ndescription: Writes\ntools: Write, Bash\n---\nWrite.\n`);
		const go = join(box.base, "go");
		// Each writes its own record of what it saw, so which one finishes first changes nothing in the merges.
		const wait = (name) => `until [ -e '${go}' ]; do sleep 0.1; done; ls > seen-${name}.txt`;
		const child = writeScript(box, `export default ${JSON.stringify({
			one: [
				{ tools: [{ name: "Write", args: { path: "one.txt", content: "1\n" } }] },
				{ tools: [{ name: "Write", args: { path: "a.txt", content: "from one\n" } }] },
				{ tools: [{ name: "Bash", args: { command: wait("one") } }] },
				{ text: "ONE DONE" },
			],
			two: [
				{ tools: [{ name: "Write", args: { path: "two.txt", content: "2\n" } }] },
				{ tools: [{ name: "Bash", args: { command: wait("two") } }] },
				{ text: "TWO DONE" },
			],
		})};`);
		// Both start in the background; the session then changes a.txt (one's change will conflict) and lets them finish.
		const parent = writeScript(box, `
const id = (t) => /backgroundTaskId (task-[0-9a-f]+)/.exec(t)?.[1];
const ids = {};
const seen = {};
export default [
	{ tools: [{ name: "Task", args: { agent: "one", prompt: "one", runInBackground: true } }] },
	(ctx) => { ids.one = id(ctx.lastToolResults[0].text); return { tools: [{ name: "Task", args: { agent: "two", prompt: "two", runInBackground: true } }] }; },
	(ctx) => { ids.two = id(ctx.lastToolResults[0].text); return { tools: [{ name: "Bash", args: { command: ${JSON.stringify(`printf 'from the session\\n' > a.txt && touch '${go}'`)} } }] }; },
	...Array.from({ length: 200 }, () => (ctx) => {
		const last = ctx.lastToolResults[0];
		if (last.toolName === "TaskWait" && /\\b(completed|failed|stopped)\\b/.test(last.text)) seen[seen.one ? "two" : "one"] = true;
		if (!seen.one) return { tools: [{ name: "TaskWait", args: { backgroundTaskId: ids.one } }] };
		if (!seen.two) return { tools: [{ name: "TaskWait", args: { backgroundTaskId: ids.two } }] };
		return { text: "BOTH DONE" };
	}),
];`);
		const pi = new RpcPi({ version, box, script: parent, env: { PCT_FAUX_CHILD_SCRIPT: child } });
		try {
			const wt = await enter(pi, "two");
			const r = await pi.prompt("go", 180000);
			const ends = r.events.filter((e) => e.type === "tool_execution_end");
			const started = ends.filter((e) => e.toolName === "Task").map((e) => e.result.details.worktree);
			assert.equal(started.length, 2, pi.stderr.slice(-2000));
			assert.notEqual(started[0].path, started[1].path);
			const waits = ends.filter((e) => e.toolName === "TaskWait").map((e) => e.result.content.map((c) => c.text).join(""));
			const oneText = waits.find((t) => /AGENT_MERGE_CONFLICT/.test(t));
			assert.ok(oneText, waits.join("\n---\n"));
			assert.match(oneText, /Delegate "one" finished, but its changes conflict with this session's worktree in a\.txt: nothing of it was applied here\./);
			assert.ok(oneText.includes(`Its work is kept, committed, on branch ${started[0].branch}`), oneText);
			assert.ok(oneText.includes(`git diff --binary `), oneText);
			assert.ok(waits.some((t) => /TWO DONE\n\n\[Its changes to 2 file\(s\) were merged/.test(t)), waits.join("\n---\n"));
			// The session worktree: two's files merged, nothing of one, its own a.txt kept.
			assert.equal(readFileSync(join(wt, "a.txt"), "utf8"), "from the session\n");
			assert.equal(readFileSync(join(wt, "two.txt"), "utf8"), "2\n");
			assert.ok(!existsSync(join(wt, "one.txt")));
			// Neither saw the other's file while both ran.
			assert.doesNotMatch(readFileSync(join(wt, "seen-two.txt"), "utf8"), /one\.txt/);
			assert.ok(!existsSync(join(wt, "seen-one.txt")));
			assert.doesNotMatch(git(box.cwd, "show", `${started[0].branch}:seen-one.txt`), /two\.txt/);
			// One's branch and worktree are kept with its work committed; the project is untouched.
			assert.equal(git(box.cwd, "show", `${started[0].branch}:one.txt`), "1");
			assert.ok(existsSync(join(started[0].path, "one.txt")));
			assert.ok(!existsSync(started[1].path));
			assert.ok(!existsSync(join(box.cwd, "one.txt")) && !existsSync(join(box.cwd, "two.txt")));
			assert.equal(readFileSync(join(box.cwd, "a.txt"), "utf8"), "one\n");
			const id = started[0].id;
			assert.match(await pct(pi, "/pct worktree list"), new RegExp(`^ {2}${id} {2}idle {2}pct/${id} `, "m"));
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] a worktree whose Pi was killed is listed as leftover at the next start, never deleted`, async () => {
		const { box } = project();
		const first = new RpcPi({ version, box });
		let wt;
		try {
			wt = await enter(first, "crashed");
		} finally {
			// No session_shutdown: the lock of a dead process stays behind.
			first.child.kill("SIGKILL");
			await first.exited;
		}
		const second = new RpcPi({ version, box });
		try {
			// The sweep runs in the background after start-up: wait for its notification (it may already be there).
			const isSweep = (n) => typeof n === "string" && n.startsWith("Worktrees of ");
			const note = second.notifications.find(isSweep) ?? (await second.waitFor((r) => r.type === "extension_ui_request" && r.method === "notify" && isSweep(r.message), 60000)).message;
			assert.match(note, /left over from earlier sessions \(kept; \/pct worktree delete <id> removes one\):\n {2}crashed {2}leftover {2}pct\/crashed .* — its session \(pid \d+\) is gone$/);
			assert.ok(existsSync(join(wt, "a.txt")), "the sweep deletes nothing");
		} finally {
			await second.close();
		}
	});

	test(`[pi ${version.name}] at start-up, session files the toolkit wrote that nobody continued for a week are removed`, async () => {
		const { box } = project();
		const dir = join(box.agentDir, "pi-codex-toolkit", "sessions");
		mkdirSync(dir, { recursive: true });
		const plant = (name, cwd, daysAgo) => {
			const p = join(dir, name);
			writeFileSync(p, JSON.stringify({ type: "session", version: 3, id: name, timestamp: "t", cwd }) + "\n");
			const t = new Date(Date.now() - daysAgo * 86400000);
			utimesSync(p, t, t);
			return p;
		};
		const old = plant("old.jsonl", box.cwd, 8);
		const recent = plant("recent.jsonl", box.cwd, 6);
		const pi = new RpcPi({ version, box });
		try {
			// The sweep runs in the background once the session starts: wait for it, bounded.
			const until = Date.now() + 30000;
			while (existsSync(old) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
			assert.ok(!existsSync(old), "the week-old session file was removed");
			assert.ok(existsSync(recent), "a newer one stays");
		} finally {
			await pi.close();
		}
	});

	test(`[pi ${version.name}] outside a git project and on a detached HEAD: a refusal that changes nothing`, async () => {
		const box = sandbox("pct-wt-e2e-");
		writeToolConfig(box, { worktrees: { enabled: true } });
		const pi = new RpcPi({ version, box });
		try {
			assert.match(await pct(pi, "/pct worktree new"), /^WORKTREE_NOT_GIT: /m);
			git(box.cwd, "init", "-q", "-b", "main");
			assert.match(await pct(pi, "/pct worktree new"), /^WORKTREE_UNBORN_HEAD: /m);
			writeFileSync(join(box.cwd, "a.txt"), "a\n");
			git(box.cwd, "add", "a.txt");
			git(box.cwd, "commit", "-q", "-m", "first");
			git(box.cwd, "checkout", "-q", "--detach");
			assert.match(await pct(pi, "/pct worktree new"), /^WORKTREE_DETACHED_HEAD: /m);
			assert.ok(!existsSync(join(box.agentDir, "pi-codex-toolkit", "worktrees")));
			assert.match(await pct(pi, "/pct worktree"), /not in a worktree/);
		} finally {
			await pi.close();
		}
	});
}
