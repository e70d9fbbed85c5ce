// Code cells against the addon: globals, formatting, pragma, uses, every §7 limit at its boundary, yield/wait,
// terminate, heap bomb, abort, progress, the host gate (policy + approval) and 1,000 sequential cells.
import { test } from "node:test";
import assert from "node:assert/strict";
import { newManager, allowGate, runCell, native } from "./helpers/code.mjs";
import { until } from "./helpers/until.mjs";
import { tempDir } from "./helpers/tmp.mjs";

test("each available global exists and each excluded global is absent", async () => {
	const m = newManager();
	const r = await runCell(m, `
		const present = ["print", "text", "console", "tools"].map((n) => n + ":" + typeof globalThis[n]);
		const consoleFns = ["log", "warn", "error"].map((n) => typeof console[n]);
		const absent = ["process", "require", "fetch", "setTimeout", "setInterval", "clearTimeout", "clearInterval",
			"store", "load", "notify", "yield_control", "ALL_TOOLS", "image", "audio", "exit", "performance", "os", "std",
			"WebAssembly", "module", "exports", "Buffer", "global"].filter((n) => typeof globalThis[n] !== "undefined");
		let dynamicImport;
		try { await import("node:fs"); dynamicImport = "worked"; } catch (e) { dynamicImport = "refused"; }
		return { present, consoleFns, absent, dynamicImport };`);
	assert.equal(r.status, "completed", r.text);
	assert.deepEqual(JSON.parse(r.result), {
		present: ["print:function", "text:function", "console:object", "tools:object"],
		consoleFns: ["function", "function", "function"],
		absent: [],
		dynamicImport: "refused",
	});
});

test("static import is a syntax error, not a module load", async () => {
	const r = await runCell(newManager(), `import fs from "fs";`);
	assert.equal(r.status, "failed");
	assert.match(r.error, /^SyntaxError/);
});

test("no cross-cell state", async () => {
	const m = newManager();
	await runCell(m, "globalThis.leak = 42; var alsoLeak = 1;");
	const r = await runCell(m, "return [typeof leak, typeof alsoLeak]");
	assert.equal(r.result, '["undefined","undefined"]');
});

test("text, print and console formatting", async () => {
	const m = newManager();
	let r = await runCell(m, 'text("a"); text("b"); text(7); text({n:1}); text(undefined); print("p")');
	assert.equal(r.output, 'ab7{"n":1}undefined\np\n');
	r = await runCell(m, 'console.log("x", 1, [2], null, {a: "b"}); console.warn("w"); console.error("e"); print(); print(undefined, true)');
	assert.equal(r.output, 'x 1 [2] null {"a":"b"}\nw\ne\n\nundefined true\n');
	r = await runCell(m, 'text(""); print("after empty text"); const c = {}; c.self = c; print(c instanceof Object, String(Symbol("s"))); text(new Error("boom").message)');
	assert.equal(r.output, "after empty text\ntrue Symbol(s)\nboom");
	assert.equal(r.text, `cell_id ${r.cellId}: completed\n[output]\nafter empty text\ntrue Symbol(s)\nboom`);
});

test("return values and errors render as [result] and [error]", async () => {
	const m = newManager();
	let r = await runCell(m, "return 'plain'");
	assert.equal(r.text, `cell_id ${r.cellId}: completed\n[result]\nplain`);
	r = await runCell(m, "return {a: [1, 2]}");
	assert.equal(r.result, '{"a":[1,2]}');
	r = await runCell(m, "\n\nthrow new TypeError('bad thing')");
	assert.equal(r.status, "failed");
	assert.match(r.text, new RegExp(`^cell_id ${r.cellId}: failed\\n\\[error\\]\\nTypeError: bad thing\\n.*cell:3`));
});

test("pragma: sets limits, blank line keeps numbering, refusals before start", async () => {
	const m = newManager();
	let r = await m.exec({ code: '// @exec: {"yield_time_ms": 0}\nwhile(true){}' });
	assert.equal(r.status, "running");
	await m.wait({ cell_id: r.cellId, terminate: true });
	r = await m.exec({ code: '// @exec: {"max_output_tokens": 256}\ntext("x".repeat(5000))', yield_time_ms: 30000 });
	assert.equal(r.output.length, 1024);
	r = await m.exec({ code: '// @exec: {"yield_time_ms": 30000}\n\nthrow new Error("line3")' });
	assert.match(r.error, /cell:3/);
	for (const [code, extra] of [
		['// @exec: {"timeout": 1}\nreturn 1', {}],
		["// @exec: {not json\nreturn 1", {}],
		['// @exec: {"yield_time_ms": 5}\nreturn 1', { yield_time_ms: 6 }],
	]) {
		r = await m.exec({ code, ...extra });
		assert.deepEqual([r.ok, r.code], [false, "invalid-code"], JSON.stringify(r));
	}
	assert.equal(m.heldCells(), 0);
	// Agreement with the explicit argument is accepted.
	r = await m.exec({ code: '// @exec: {"yield_time_ms": 30000}\nreturn 1', yieldTimeMs: 30000 });
	assert.equal(r.result, "1");
});

test("uses: omitted = admitted at start, [] = none, list = upper bound; messages", async () => {
	const m = newManager();
	m.setAdmitted(["exec_command", "write_stdin"]);
	let r = await runCell(m, "return [Object.keys(tools).join(','), await tools.apply_patch('x').catch((e) => e.message)]");
	assert.deepEqual(JSON.parse(r.result), [
		"exec_command,write_stdin",
		'Tool "apply_patch" was not declared in "uses" for this cell. Declared tools: exec_command, write_stdin',
	]);
	r = await runCell(m, "return await tools.exec_command({cmd: 'ls'}).catch((e) => e.message)", { uses: [] });
	assert.equal(r.result, 'Tool "exec_command" was not declared in "uses" for this cell. Declared tools: (none)');
	r = await runCell(m, "return await tools.bash({}).catch((e) => e.code)");
	assert.equal(r.result, "unknown-adapter");
	r = await m.exec({ code: "1", uses: ["bash"] });
	assert.equal(r.code, "invalid-uses");
	// Declared but not admitted at dispatch: adapter-disabled.
	r = await runCell(m, "return await tools.apply_patch('p').catch((e) => e.code)", { uses: ["apply_patch"] });
	assert.equal(r.result, "adapter-disabled");
});

test("maxCellSeconds (codeMode.maxCellSeconds) boundaries: out of range is invalid-limit and starts nothing", async () => {
	const m = newManager();
	for (const maxCellSeconds of [9, 86401, 0, -1]) {
		const r = await m.exec({ code: "return 1" }, { maxCellSeconds });
		assert.equal(r.code, "invalid-limit", String(maxCellSeconds));
		assert.match(r.message, /maxCellSeconds must be a whole number from 10 to 86400/);
		assert.equal(m.heldCells(), 0, "nothing ran");
	}
	for (const maxCellSeconds of [10, 86400]) {
		const r = await m.exec({ code: "return 1" }, { maxCellSeconds });
		assert.equal(r.status, "completed", String(maxCellSeconds));
		assert.equal(r.code, undefined, "a cell that ends in time carries no stop code");
	}
});

test("yieldTimeMs and output budget boundaries", async () => {
	const m = newManager();
	for (const [args, code] of [
		[{ yield_time_ms: 60001 }, "invalid-limit"],
		[{ yield_time_ms: -1 }, "invalid-limit"],
		[{ maxOutputBytes: 1023 }, "invalid-limit"],
		[{ maxOutputBytes: 262145 }, "invalid-limit"],
		[{ max_output_tokens: 255 }, "invalid-limit"],
		[{ max_output_tokens: 65537 }, "invalid-limit"],
		[{ yield_time_ms: 1, yieldTimeMs: 2 }, "invalid-input"],
	]) {
		const r = await m.exec({ code: "return 1", ...args });
		assert.equal(r.code, code, JSON.stringify(args));
	}
	for (const args of [{ yield_time_ms: 60000 }, { maxOutputBytes: 1024 }, { maxOutputBytes: 262144 }, { max_output_tokens: 256 }, { max_output_tokens: 65536 }]) {
		const r = await m.exec({ code: "return 1", ...args });
		assert.equal(r.status, "completed", JSON.stringify(args));
	}
	const r = await m.exec({ code: "return 1", yield_time_ms: 0 });
	assert.ok(r.ok);
	await until("no cell running", () => m.runningCells() === 0, { every: 2 });
});

test("a yielded cell continues with wait; handles are opaque strings", async () => {
	let release;
	const held = new Promise((r) => (release = r));
	const m = newManager({ gate: async () => (await held, { allow: true }) });
	m.setAdmitted(["exec_command"]);
	const r = await m.exec({ code: "print('one'); await tools.exec_command({cmd: 'x'}).catch(() => {}); print('two'); return 2", yield_time_ms: 0 });
	assert.equal(r.status, "running");
	assert.match(r.cellId, /^cell-[0-9a-f]{12}$/);
	let read = r;
	let output = r.output;
	while (read.nested.unsettled === 0) {
		read = await m.wait({ cell_id: r.cellId, yield_time_ms: 20 });
		output += read.output;
	}
	assert.equal(output, "one\n");
	assert.ok(read.text.startsWith(`Script running with cell ID ${r.cellId}.\ncell_id ${r.cellId}: running\n`), read.text);
	for (const bad of [{ cell_id: 1234 }, { cell_id: "1234" }, { cell_id: "pct-shell-3" }, { cellId: r.cellId, cell_id: "other" }]) {
		assert.equal((await m.wait(bad)).code, "invalid-input", JSON.stringify(bad));
	}
	release();
	const w = await m.wait({ cellId: r.cellId, yield_time_ms: 30000 });
	assert.equal(w.status, "completed");
	assert.equal(w.output, "two\n");
	assert.equal(w.result, "2");
	assert.equal((await m.wait({ cell_id: r.cellId })).code, "stale-cell");
});

test("terminate stops a busy loop that try/catch cannot swallow", async () => {
	const m = newManager();
	const r = await m.exec({ code: "while (true) { try { while (true) {} } catch (e) { print('swallowed') } }", yield_time_ms: 30 });
	assert.equal(r.status, "running");
	const w = await m.wait({ cell_id: r.cellId, terminate: true });
	assert.equal(w.status, "terminated");
	assert.equal(w.output, "");
	assert.equal(m.runningCells(), 0);
});

test("Pi's AbortSignal (abort by call id) terminates the observed cell", async () => {
	const m = newManager();
	const p = m.exec({ code: "while(true){}", yield_time_ms: 60000 }, { callId: "call-1" });
	await until("the cell running", () => m.runningCells() === 1, { every: 2 });
	m.abort("call-1");
	const r = await p;
	assert.equal(r.code, "aborted");
	await until("no cell running", () => m.runningCells() === 0, { every: 2 });
});

test("a heap bomb fails only its cell; deep recursion is a RangeError", async () => {
	const m = newManager();
	let r = await runCell(m, "const a = []; while (true) a.push(new Array(1e5).fill(a.length));");
	assert.equal(r.status, "failed");
	assert.match(r.error, /out of memory/);
	r = await runCell(m, "function f() { return f() + 1 } f()");
	assert.match(r.error, /RangeError|stack/);
	assert.equal((await runCell(m, "return 'alive'")).result, "alive");
});

test("4 running cells, the 5th is refused with cell-limit", async () => {
	const m = newManager();
	const ids = [];
	for (let i = 0; i < 4; i++) ids.push((await m.exec({ code: "while(true){}", yield_time_ms: 0 })).cellId);
	const r = await m.exec({ code: "return 1" });
	assert.equal(r.code, "cell-limit");
	await m.wait({ cell_id: ids[0], terminate: true });
	assert.equal((await runCell(m, "return 'fifth'")).result, "fifth");
	assert.deepEqual(await m.cleanup(), { ok: true });
	assert.equal(m.heldCells(), 0);
});

test("16 unread terminal results are kept; the 17th pushes out the oldest", async () => {
	const m = newManager();
	const ids = [];
	while (ids.length < 17) {
		const r = await m.exec({ code: "await 0; return 'r'", yield_time_ms: 0 });
		if (r.status === "running") ids.push(r.cellId);
		await until("no cell running", () => m.runningCells() === 0, { every: 2 });
	}
	assert.equal((await m.wait({ cell_id: ids[0] })).code, "stale-cell");
	for (const id of ids.slice(1)) assert.equal((await m.wait({ cell_id: id })).status, "completed");
});

test("per cell: 16 outstanding nested requests pass, the 17th is bridge-overload", async () => {
	// The host check holds every call until the cell has issued all of them (a held gate, not a timer).
	const burst = async (n) => {
		let release;
		const held = new Promise((r) => (release = r));
		const m = newManager({ gate: async () => (await held, { allow: true }) });
		m.setAdmitted(["exec_command"]);
		const code = `const ps = []; for (let i = 0; i < ${n}; i++) ps.push(tools.exec_command({cmd: 'x'}).then(() => 'ok', (e) => e.code)); print('issued'); return (await Promise.all(ps)).filter((c) => c === 'bridge-overload').length`;
		let r = await m.exec({ code, yield_time_ms: 0 });
		let out = r.output;
		while (!out.includes("issued")) {
			r = await m.wait({ cell_id: r.cellId, yield_time_ms: 20 });
			assert.equal(r.status, "running");
			out += r.output;
		}
		release();
		return (await m.wait({ cell_id: r.cellId, yield_time_ms: 60000 })).result;
	};
	assert.equal(await burst(16), "0");
	assert.equal(await burst(17), "1");
});

test("nested argument bytes: 256 KiB single argument passes, one more byte is bridge-overload", async () => {
	const m = newManager();
	m.setAdmitted(["exec_command"]);
	const size = 256 * 1024;
	const prog = (n) => `return await tools.exec_command({cmd: 'x'.repeat(${n} - 10)}).then(() => 'ran', (e) => e.code)`;
	assert.equal((await runCell(m, prog(size))).result, "adapter-disabled"); // passed the byte check (no executor in this suite)
	assert.equal((await runCell(m, prog(size + 1))).result, "bridge-overload");
});

test("output buffer 256 KiB, result 32 KiB, error 4 KiB at their boundaries", async () => {
	const m = newManager();
	let r = await runCell(m, `text('x'.repeat(${256 * 1024}))`, { maxOutputBytes: 262144 });
	assert.deepEqual([r.output.length, r.dropped, r.truncated], [262144, 0, 0]);
	r = await runCell(m, `text('x'.repeat(${256 * 1024 + 1}))`, { maxOutputBytes: 262144 });
	assert.deepEqual([r.output.length, r.dropped], [262144, 1]);
	assert.ok(r.recovery?.path, "dropped text is kept in the recovery file");
	r = await runCell(m, `return 'r'.repeat(${32 * 1024})`);
	assert.equal(r.resultTruncated, false);
	r = await runCell(m, `return 'r'.repeat(${32 * 1024 + 1})`);
	assert.deepEqual([r.resultTruncated, r.result.length], [true, 32 * 1024]);
	r = await runCell(m, `throw 'e'.repeat(${4096 - 9})`);
	assert.equal(r.errorTruncated, false);
	r = await runCell(m, `throw 'e'.repeat(${4096 - 8})`);
	assert.deepEqual([r.errorTruncated, r.error.length], [true, 4096]);
});

test("default read budget is 51200 bytes, cut on a UTF-8 boundary, the rest in the recovery file", async () => {
	const m = newManager();
	const r = await runCell(m, "text('a' + 'é'.repeat(40000))");
	assert.equal(Buffer.byteLength(r.output), 51199);
	assert.equal(r.truncated, 80001 - 51199);
	assert.match(r.text, /recovery: complete, \d+ of \d+ bytes written to \S+pi-codex-toolkit-code-[0-9a-f-]+\.log\n/);
});

test("progress: names and ids only, at most 32 records per outer call", async () => {
	const m = newManager({ gate: allowGate({ deny: true }) });
	m.setAdmitted(["exec_command"]);
	for (const [n, expected, dropped] of [[16, 32, 0], [17, 32, 2]]) {
		const recs = [];
		const r = await m.exec({ code: `for (let i = 0; i < ${n}; i++) await tools.exec_command({cmd: 'secret-arg'}).catch(() => {})`, yield_time_ms: 30000 }, {}, (rec) => recs.push(rec));
		// Records arrive asynchronously (non-blocking callbacks): poll until all forwarded ones are in.
		await until(() => `${expected} progress records (have ${recs.length})`, () => recs.length >= expected, { every: 2 });
		await new Promise((res) => setImmediate(res));
		assert.equal(recs.length, expected);
		assert.equal(r.progressDropped, dropped);
		assert.deepEqual(Object.keys(recs[0]).sort(), ["cellId", "event", "tool"]);
		assert.deepEqual(recs[1], { event: "end", tool: "exec_command", cellId: r.cellId, ok: false, code: "policy-denied" });
		assert.ok(!JSON.stringify(recs).includes("secret-arg"));
	}
});

test("the host gate: policy identity, denial reason, approval preview; a throwing gate cannot crash Node", async () => {
	const seen = [];
	const m = newManager({
		gate: async (req) => {
			seen.push(req);
			if (req.phase === "policy" && req.tool === "write_stdin") throw new Error("hook exploded");
			if (req.phase === "policy") return { allow: true, needsApproval: req.tool === "apply_patch" };
			return req.preview.includes("DENY") ? { allow: false, code: "approval-denied" } : { allow: false, code: "approval-unavailable", reason: "no UI" };
		},
	});
	m.setAdmitted(["exec_command", "write_stdin", "apply_patch"]);
	const r = await runCell(m, `return [
		await tools.write_stdin({session_id: 'pct-shell-1'}).catch((e) => e.code + ': ' + e.message),
		await tools.apply_patch('*** Begin Patch DENY' + 'x'.repeat(1000)).catch((e) => e.code),
		await tools.apply_patch({patch: 'other'}).catch((e) => e.code + ': ' + e.message),
	]`, {}, { cwd: "/some/cwd" });
	const [a, b, c] = JSON.parse(r.result);
	assert.match(a, /^policy-denied: The host check failed/);
	assert.equal(b, "approval-denied");
	assert.equal(c, "approval-unavailable: no UI");
	assert.deepEqual(seen[0], { phase: "policy", tool: "write_stdin", cellId: r.cellId, cwd: "/some/cwd", sessionId: "pct-shell-1", preview: '{"session_id":"pct-shell-1"}', sendsInput: false });
	const approval = seen.filter((q) => q.phase === "approval");
	assert.equal(approval.length, 2);
	assert.equal(Buffer.byteLength(approval[0].preview), 800);
	assert.equal(approval[1].preview, "other");
	assert.ok(r.text.includes("nested calls: 0 completed, 3 failed, 0 cancelled before dispatch, 0 unsettled"));
});

test("the host gate: a code that is no cell code becomes the phase's default (docs/code.md \"Errors\")", async () => {
	const m = newManager({
		gate: async (req) => (req.phase === "policy" && req.tool === "exec_command" ? { allow: false, code: "made-up", reason: "nope" } : req.phase === "policy" ? { allow: true, needsApproval: true } : { allow: false, code: "internal-panic" }),
	});
	m.setAdmitted(["exec_command", "apply_patch"]);
	const r = await runCell(m, `return [
		await tools.exec_command({cmd: 'true'}).catch((e) => e.code + ': ' + e.message),
		await tools.apply_patch('x').catch((e) => e.code),
	]`);
	assert.deepEqual(JSON.parse(r.result), ["policy-denied: nope", "approval-denied"]);
});

test("terminate seals a nested call waiting for approval (cancelled before dispatch)", async () => {
	const m = newManager({ gate: (req) => (req.phase === "policy" ? Promise.resolve({ allow: true, needsApproval: true }) : new Promise(() => {})) });
	m.setAdmitted(["apply_patch"]);
	const r = await m.exec({ code: "await tools.apply_patch('p')", yield_time_ms: 0 });
	let read = r;
	while (read.nested.unsettled === 0) read = await m.wait({ cell_id: r.cellId, yield_time_ms: 20 });
	const w = await m.wait({ cell_id: r.cellId, terminate: true });
	assert.equal(w.status, "terminated");
	assert.match(w.text, /nested calls: 0 completed, 0 failed, 1 cancelled before dispatch, 0 unsettled/);
});

test("closed after shutdown", async () => {
	const m = newManager();
	assert.deepEqual(await m.shutdown(), { ok: true });
	assert.equal((await m.exec({ code: "return 1" })).code, "closed");
});

test("1,000 sequential cells: RSS grows less than 32 MB", async () => {
	const m = newManager();
	for (let i = 0; i < 100; i++) await runCell(m, `return ${i}`);
	global.gc?.();
	const before = process.memoryUsage.rss();
	for (let i = 0; i < 1000; i++) {
		const r = await runCell(m, `const o = {i: ${i}, s: 'x'.repeat(1000)}; print(o.i); return o.s.length`);
		assert.equal(r.result, "1000");
	}
	const growth = process.memoryUsage.rss() - before;
	assert.ok(growth < 32 * 1024 * 1024, `RSS grew by ${(growth / 1048576).toFixed(1)} MB`);
	assert.equal(m.heldCells(), 0);
});

const SH = { shell: "/bin/sh", args: ["-c"] };

test("nested exec_command + write_stdin from one cell use the direct tools' shell manager", async () => {
	const { join } = await import("node:path");
	const dir = tempDir("pct-code-nested-");
	const shell = new native.ShellManager();
	const m = newManager({ gate: async (req) => ({ allow: true, shell: req.tool === "exec_command" ? SH : undefined }), shell });
	m.setAdmitted(["exec_command", "write_stdin"]);
	const r = await runCell(m, `
		const a = await tools.exec_command({command: "read l; echo got:$l; pwd", yieldTimeMs: 50});
		const b = await tools.write_stdin({sessionId: a.sessionId, input: "ping\\n", yield_time_ms: 5000});
		return {a: a.status, b: b.status, out: b.stdout, sid: a.sessionId};`, {}, { cwd: dir });
	assert.equal(r.status, "completed", r.text);
	const v = JSON.parse(r.result);
	assert.deepEqual([v.a, v.b, v.out], ["running", "completed", `got:ping\n${dir}\n`]);
	assert.match(v.sid, /^pct-shell-/);
	assert.match(r.text, /nested calls: 2 completed, 0 failed, 0 cancelled before dispatch, 0 unsettled/);
	// The same sessions as the direct tools: the direct write_stdin sees the handle as released (already delivered).
	const direct = await shell.writeStdin({ session_id: v.sid }, { cwd: dir });
	assert.equal(direct.ok, false);
	await shell.close();
});

test("a yielded nested shell belongs to Shell: terminating the cell leaves it running and reported", async () => {
	const shell = new native.ShellManager();
	const m = newManager({ gate: async (req) => ({ allow: true, shell: req.tool === "exec_command" ? SH : undefined }), shell });
	m.setAdmitted(["exec_command", "write_stdin"]);
	let r = await m.exec({ code: "const a = await tools.exec_command({cmd: 'sleep 30', yield_time_ms: 0}); print(a.sessionId); while (true) {}", yield_time_ms: 0 }, { cwd: process.cwd() });
	assert.equal(r.status, "running");
	// The cell never ends by itself: poll with wait until it has printed the session id (no timing assumption).
	let output = r.output;
	while (!output.includes("\n")) {
		r = await m.wait({ cell_id: r.cellId, yield_time_ms: 50 });
		assert.equal(r.status, "running");
		output += r.output;
	}
	const sid = output.trim();
	assert.ok(r.text.includes(`shell session ${sid} is still running (it belongs to Shell): continue it with write_stdin {"session_id": "${sid}"}`), r.text);
	const w = await m.wait({ cell_id: r.cellId, terminate: true });
	assert.equal(w.status, "terminated");
	assert.equal(shell.status().running, 1, "the shell outlives the cell");
	const direct = await shell.writeStdin({ session_id: sid, terminate: true }, { cwd: process.cwd() });
	assert.equal(direct.ok, true, JSON.stringify(direct));
	await shell.close();
});

test("nested apply_patch uses the patch executor (containment, exact failure text); with approval always no dialog is asked", async () => {
	const { readFileSync, existsSync } = await import("node:fs");
	const { join } = await import("node:path");
	const dir = tempDir("pct-code-patch-");
	const asked = [];
	const m = newManager({ gate: async (req) => (asked.push(req.phase), { allow: true, needsApproval: false, lease: req.phase === "lock" ? "L" : undefined }) });
	m.setAdmitted(["apply_patch"]);
	const r = await runCell(m, `
		const ok = await tools.apply_patch("*** Begin Patch\\n*** Add File: sub/made.txt\\n+from a cell\\n*** End Patch");
		const out = await tools.apply_patch({patch: "*** Begin Patch\\n*** Add File: ../escape.txt\\n+x\\n*** End Patch"}).catch((e) => e.message);
		return [ok.text, ok.operations, out];`, {}, { cwd: dir });
	const [text, ops, escape] = JSON.parse(r.result);
	assert.equal(text, "Applied patch:\n- add sub/made.txt");
	assert.deepEqual(ops, [{ operation: "add", path: "sub/made.txt", from: null }]);
	assert.match(escape, /^apply_patch failed \(no-change\)/);
	assert.equal(readFileSync(join(dir, "sub/made.txt"), "utf8"), "from a cell\n");
	assert.equal(existsSync(join(dir, "../escape.txt")), false);
	assert.deepEqual(asked.filter((p) => p === "policy" || p === "approval"), ["policy", "policy"], "no approval dialog with always");
	assert.deepEqual(asked.filter((p) => p === "lock"), ["lock"], "the valid patch asked for the file lease; the refused one did not");
	assert.match(r.text, /nested calls: 1 completed, 1 failed/);
});
