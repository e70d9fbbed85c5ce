/**
 * Bench-only extension (bench/schema-size.mjs): a faux provider whose one response records the tools exactly as
 * Pi hands them to the model (name, description, parameters) into the JSON file named by PCT_SCHEMA_OUT.
 */
import { writeFileSync } from "node:fs";
import { fauxAssistantMessage, fauxProvider, fauxText } from "@earendil-works/pi-ai";

export default function schemaProbe(pi: any) {
	const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", name: "faux-1" }], tokensPerSecond: 0 } as any);
	pi.registerProvider(faux.provider);
	faux.setResponses([
		(context: any) => {
			// Older pi-ai passes `context.tools`; newer carries the declarations on system messages (toolsAdded/Removed).
			const byName = new Map<string, any>();
			for (const t of context.tools ?? []) byName.set(t.name, t);
			for (const m of context.messages ?? []) {
				if (m.role !== "system") continue;
				for (const t of m.toolsRemoved ?? []) byName.delete(typeof t === "string" ? t : t.name);
				for (const t of m.toolsAdded ?? []) byName.set(t.name, t);
			}
			const tools = [...byName.values()].map((t: any) => ({ name: t.name, description: t.description, parameters: t.parameters }));
			writeFileSync(process.env.PCT_SCHEMA_OUT!, JSON.stringify({ tools }));
			return fauxAssistantMessage([fauxText("done")]);
		},
	]);
}
