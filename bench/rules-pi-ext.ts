/**
 * Benchmark-only extension: inside the real Pi, registers 87 extra tools plus stubs of the toolkit's six names
 * (this file is their identity) and answers `/bench-sync <n>` with the cost of one toolkit sync against the
 * real `pi` (snapshot + Rust projection + Pi's own setActiveTools) next to Pi's setActiveTools alone.
 */
import { fileURLToPath } from "node:url";
import { Type } from "typebox";
import { newRulesState, snapshot, syncRules } from "../src/pi/rules.ts";
import { native } from "../src/pi/native.ts";

const SELF = fileURLToPath(import.meta.url);
const OURS = ["apply_patch", "exec_command", "write_stdin", "exec", "wait", "find_tools"];

export default function benchExt(pi: any) {
	const stub = (name: string) => ({
		name,
		label: name,
		description: `Benchmark tool ${name}: ${"lorem ipsum ".repeat(20)}`,
		parameters: Type.Object({}),
		async execute() {
			return { content: [{ type: "text", text: name }], details: {} };
		},
	});
	for (const n of OURS) pi.registerTool(stub(n));
	for (let i = 0; i < 87; i++) pi.registerTool(stub(`bench_tool_${i}`));
	const rules = [
		...Array.from({ length: 48 }, (_, i) => ({ id: `r${i}`, match: i % 2 ? `vendor-${i}-*-pro?` : `other/model-${i}*`, patch: i % 3 === 0, shell: i % 3 === 1, code: i % 3 === 2 })),
		{ id: "psc", match: "faux/bench-a", patch: true, shell: true, code: true },
		{ id: "p", match: "bench-?", patch: true, shell: false, code: false },
	];
	const models = [{ provider: "faux", id: "bench-a", api: "x" }, { provider: "faux", id: "bench-b", api: "x" }];
	pi.registerCommand("bench-sync", {
		description: "benchmark",
		handler: async (args: string, ctx: any) => {
			const n = Number(args) || 1000;
			const host: any = {
				pi,
				identities: new Set([SELF]),
				config: () => ({ execution: { version: 1, rules } }),
				configPath: "/bench",
				revision: "r",
				lastError: null,
				applyError: null,
				rules: newRulesState(),
			};
			const time = (fn: (i: number) => void) => {
				for (let i = 0; i < Math.min(100, n); i++) fn(i);
				const t0 = process.hrtime.bigint();
				for (let i = 0; i < n; i++) fn(i);
				return Number(process.hrtime.bigint() - t0) / 1e3 / n;
			};
			const sync = time((i) => {
				host.rules.model = models[i & 1];
				syncRules(host);
			});
			// The baseline applies exactly the two lists the sync alternates between.
			const lists: string[][] = [];
			for (const m of models) {
				host.rules.model = m;
				syncRules(host);
				lists.push(pi.getActiveTools());
			}
			const alone = time((i) => pi.setActiveTools(lists[i & 1]));
			const tools = pi.getAllTools().length;
			const snap = time(() => snapshot(host));
			const text = JSON.stringify(snapshot(host));
			const resolve = time(() => JSON.parse(native.rulesResolve(text)));
			ctx.ui.notify(JSON.stringify({ sync, alone, tools, snap, resolve }), "info");
		},
	});
}
