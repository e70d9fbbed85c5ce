// Compile-time checks that the find_tools and config failure codes are literal unions (docs/rules.md "`find_tools`
// codes", docs/config.md "Reads"): `tsc --noEmit -p .` fails when an `@ts-expect-error` line below stops being an
// error, i.e. when index.d.ts falls back to plain `string`. Never run; only type-checked.
import type { FindToolsError, RulesConfigError } from "../../index.js";

const refused: FindToolsError = { code: "disabled", message: "find_tools is not enabled" };
const readFailed: RulesConfigError = { code: "invalid-json" };

// @ts-expect-error a word outside the find_tools codes
const unknownFind: FindToolsError = { code: "not-managed", message: "" };
// @ts-expect-error a save code is not a read code
const saveCode: RulesConfigError = { code: "stale-revision" };

export { refused, readFailed, unknownFind, saveCode };
