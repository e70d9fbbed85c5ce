/** Loads the native engine once; every TypeScript module goes through here so a missing binary fails in one place. */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * The napi-rs addon (see index.d.ts at the package root for its typed surface). A plain copy of the ESM loader's
 * exports: a module namespace is read-only, and tests substitute classes (e.g. `native.CodeManager`) here.
 */
export const native: typeof import("../../index.js") = { ...require("../../index.js") };
