// Cost of one sync (snapshot from Pi's API + projection + setActiveTools) with 100 registered tools and 50
// execution rules, beside a named baseline in the same run: a plain JavaScript implementation of the same
// projection (glob, first match, routes, ownership, hiding) fed from the same fake Pi, and setActiveTools alone.
// Usage: node bench/rules.mjs [--quick]   (Node >= 22.6 for the .ts glue; build the addon with --release first)
// Node notes that the .ts glue is parsed as an ES module; that notice is noise in a benchmark's output.
process.removeAllListeners("warning");
const { syncRules, newRulesState } = await import("../src/pi/rules.ts");

const quick = process.argv.includes("--quick");
const ME = "/pkg/src/index.ts";
const OURS = ["apply_patch", "exec_command", "write_stdin", "exec", "wait", "find_tools"];
const BUILTINS = ["read", "bash", "edit", "write", "grep", "find", "ls"];

// 100 registered tools: 7 builtins, the toolkit's 6, 87 from other extensions.
const allTools = [
	...BUILTINS.map((name) => ({ name, description: `Builtin ${name}`, sourceInfo: { source: "builtin", path: `builtin:${name}` } })),
	...OURS.map((name) => ({ name, description: `Toolkit ${name}`, sourceInfo: { source: "cli", path: ME } })),
	...Array.from({ length: 87 }, (_, i) => ({ name: `ext_tool_${i}`, description: `Third-party tool number ${i}`, sourceInfo: { source: "cli", path: `/ext/${i % 5}.ts` } })),
];
// 50 rules: 48 that never match, then the two bench models (so every sync scans nearly the whole list).
const rules = [
	...Array.from({ length: 48 }, (_, i) => ({ id: `r${i}`, match: i % 2 ? `vendor-${i}-*-pro?` : `other/model-${i}*`, patch: i % 3 === 0, shell: i % 3 === 1, code: i % 3 === 2 })),
	{ id: "psc", match: "faux/bench-a", patch: true, shell: true, code: true },
	{ id: "p", match: "bench-?", patch: true, shell: false, code: false },
];
const config = { execution: { version: 1, rules }, toolDiscovery: { enabled: false } };
const models = [{ provider: "faux", id: "bench-a", api: "x" }, { provider: "faux", id: "bench-b", api: "x" }];

function fakePi() {
	let active = [...BUILTINS.slice(0, 4), ...OURS, ...allTools.slice(13).map((t) => t.name)];
	return {
		calls: 0,
		getAllTools: () => allTools,
		getActiveTools: () => [...active],
		setActiveTools(names) {
			this.calls++;
			active = [...names];
		},
		events: { emit() {} },
	};
}

function host(pi) {
	return {
		pi,
		identities: new Set([ME]),
		config: () => config,
		configPath: "/agent/extensions/pi-codex-toolkit.json",
		revision: "r",
		lastError: null,
		applyError: null,
		rules: newRulesState(),
		packageVersion: "0.0.0",
	};
}

// ---- baseline: the same projection in plain JavaScript ----
function globRe(p) {
	return new RegExp("^" + p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$", "s");
}
function jsSync(state, pi, model) {
	const winners = new Map();
	for (const t of pi.getAllTools()) winners.set(t.name, t.sourceInfo?.source === "builtin" ? "builtin" : t.sourceInfo?.path === ME ? "ours" : "foreign");
	const ours = (n) => winners.get(n) === "ours";
	const rule = rules.find((r) => globRe(r.match).test(r.match.includes("/") ? `${model.provider}/${model.id}` : model.id));
	const req = rule ?? { patch: false, shell: false, code: false };
	const shellOk = ours("exec_command") && ours("write_stdin");
	const codeOk = ours("exec") && ours("wait") && shellOk;
	const directShell = req.shell && shellOk, code = req.code && codeOk;
	const nestedPatch = req.patch && req.code && code && ours("apply_patch");
	const directPatch = req.patch && !req.code && ours("apply_patch");
	const visible = new Set([...(directPatch ? ["apply_patch"] : []), ...(directShell ? ["exec_command", "write_stdin"] : []), ...(code ? ["exec", "wait"] : [])]);
	const hide = new Set([...(directShell || code ? ["bash"] : []), ...(directPatch || nestedPatch ? ["edit", "write"] : [])].filter((n) => winners.get(n) === "builtin"));
	const now = pi.getActiveTools();
	const hidden = [...hide].filter((n) => now.includes(n) || state.hidden.has(n));
	const restored = ["bash", "edit", "write"].filter((n) => state.hidden.has(n) && !hide.has(n));
	const next = now.filter((n) => !(OURS.includes(n) && ours(n) && !visible.has(n)) && !hide.has(n));
	for (const n of [...restored, ...visible]) if (!next.includes(n)) next.push(n);
	pi.setActiveTools(next);
	state.hidden = new Set(hidden);
	return next;
}

function time(label, n, fn) {
	for (let i = 0; i < Math.min(200, n); i++) fn(i); // warm-up
	const t0 = process.hrtime.bigint();
	for (let i = 0; i < n; i++) fn(i);
	return Number(process.hrtime.bigint() - t0) / 1e3 / n; // µs per sync
}

const n = quick ? 2000 : 20000;
const rounds = quick ? 3 : 7;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rust = [], js = [], alone = [];
// Same answers first: both implementations must produce the same active list for both models.
{
	const hr = host(fakePi()), pj = fakePi(), st = { hidden: new Set() };
	for (const m of [...models, ...models]) {
		hr.rules.model = m;
		syncRules(hr);
		const a = hr.pi.getActiveTools().sort().join(","), b = jsSync(st, pj, m).sort().join(",");
		if (a !== b) throw new Error(`implementations disagree for ${m.id}:\n rust ${a}\n js   ${b}`);
	}
}
for (let r = 0; r < rounds; r++) {
	const hr = host(fakePi());
	rust.push(time("rust", n, (i) => { hr.rules.model = models[i & 1]; syncRules(hr); }));
	const pj = fakePi(), st = { hidden: new Set() };
	js.push(time("js", n, (i) => jsSync(st, pj, models[i & 1])));
	const pa = fakePi(), lists = [pa.getActiveTools(), pa.getActiveTools().slice(3)];
	alone.push(time("alone", n, (i) => pa.setActiveTools(lists[i & 1])));
}
console.log(`\nOne sync with ${allTools.length} registered tools and ${rules.length} rules (median of ${rounds} rounds x ${n} syncs, model alternating so every sync changes the active set)`);
console.table([
	{ what: "toolkit sync (TS snapshot + Rust rulesResolve + setActiveTools)", "µs/sync": median(rust).toFixed(2), "ratio vs JS baseline": (median(rust) / median(js)).toFixed(2) },
	{ what: "baseline: same projection in plain JS + setActiveTools", "µs/sync": median(js).toFixed(2), "ratio vs JS baseline": "1.00" },
	{ what: "setActiveTools alone (fake Pi: array copy)", "µs/sync": median(alone).toFixed(3), "ratio vs JS baseline": (median(alone) / median(js)).toFixed(3) },
]);

// ---- inside the real Pi: the same sync against Pi's own registry and setActiveTools ----
const { PI_VERSIONS, RpcPi, sandbox, ROOT } = await import("../__test__/helpers/pi.mjs");
const inPi = [];
for (const version of PI_VERSIONS) {
	const pi = new RpcPi({ version, box: sandbox("pct-bench-rules-"), extensions: [`${ROOT}/bench/rules-pi-ext.ts`] });
	try {
		const syncs = [], alones = [], resolves = [], snaps = [];
		let tools = 0;
		for (let r = 0; r < (quick ? 2 : 5); r++) {
			const { notifications } = await pi.prompt(`/bench-sync ${quick ? 200 : 1000}`);
			const res = JSON.parse(notifications.find((x) => x.startsWith("{")));
			syncs.push(res.sync);
			alones.push(res.alone);
			resolves.push(res.resolve);
			snaps.push(res.snap);
			tools = res.tools;
		}
		inPi.push({ pi: version.name, "registered tools": tools, "toolkit sync µs": median(syncs).toFixed(1), "pi.setActiveTools alone µs": median(alones).toFixed(1), ratio: (median(syncs) / median(alones)).toFixed(2), "of which: snapshot µs": median(snaps).toFixed(1), "Rust resolve (JSON in/out) µs": median(resolves).toFixed(1) });
	} finally {
		await pi.close();
	}
}
console.log("\nInside the real Pi: one toolkit sync (snapshot + Rust projection + Pi's setActiveTools) vs Pi's setActiveTools alone applying the same two lists (50 rules; every sync changes the active set)");
console.table(inPi);
