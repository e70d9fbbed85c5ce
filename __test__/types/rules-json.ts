// Compile-time checks of the typed JSON-text boundary (docs/napi.md §Typed shapes): `tsc --noEmit -p .` fails
// when an `@ts-expect-error` line below stops being an error, i.e. when a rules export falls back to plain
// `string` or the glue helpers stop tying the text to its interface. Never run; only type-checked.
import type { RulesDecision, RulesInput } from "../../index.js";
import { native } from "../../src/pi/native.ts";
import { fromJson, toJson } from "../../src/pi/rules.ts";

const input: RulesInput = { identity: "/x/index.ts", activeNow: ["read"] };

// The typed path compiles and yields the declared interfaces.
const decision: RulesDecision = fromJson(native.rulesResolve(toJson(input)));
const active: string[] = decision.active;
const rows: string[] = native.rulesEditorRows(toJson([{ id: "a", match: "*", patch: true, shell: false, code: false }]));

// @ts-expect-error plain text is not a RulesInput's JSON: it must come from toJson(RulesInput)
native.rulesResolve(JSON.stringify(input));
// @ts-expect-error the JSON of a rules list is not a snapshot
native.rulesStatusText(toJson([{ id: "a", match: "*", patch: true, shell: false, code: false }]));
// @ts-expect-error a rule lacks its flags
native.rulesEditorRows(toJson([{ id: "a", match: "*" }]));
// @ts-expect-error the resolve result parses to a RulesDecision, not a find_tools answer
const wrong: { matches: unknown[] } = fromJson(native.rulesResolve(toJson(input)));
// @ts-expect-error the snapshot's fields are checked (hasUi is a boolean)
native.rulesPreviewText(toJson<RulesInput>({ hasUi: "yes" }));

export { active, rows, wrong };
