// `npm run demo`: an offline scripted session in the real Pi (current 1.x; `--pi 0.87.1` for the older line)
// showing /pct status and then every tool the toolkit has, each section from demo/<feature>.mjs.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import * as helpers from "../__test__/helpers/pi.mjs";

const want = process.argv.includes("--pi") ? process.argv[process.argv.indexOf("--pi") + 1] : "1.6.0";
const version = helpers.PI_VERSIONS.find((v) => v.name === want) ?? helpers.PI_VERSIONS.at(-1);
const log = (...a) => console.log(...a);
const rule = (t) => log(`\n${"=".repeat(8)} ${t} ${"=".repeat(Math.max(0, 60 - t.length))}`);

rule(`/pct status in Pi ${version.name} (RPC mode, scripted faux model, offline)`);
const box = helpers.sandbox("pct-demo-");
helpers.writeConfig(box, { applyPatch: { enabled: true }, shellSessions: { enabled: true }, codeMode: { enabled: true }, hostTools: { enabled: true } });
const pi = new helpers.RpcPi({ version, box });
try {
	const { notifications } = await pi.prompt("/pct status");
	log(notifications.join("\n"));
} finally {
	await pi.close();
}

const dir = join(helpers.ROOT, "demo");
const sections = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".mjs")).sort() : [];
for (const f of sections) {
	const mod = await import(join(dir, f));
	rule(`demo/${f}`);
	await mod.default({ version, helpers, log });
}
