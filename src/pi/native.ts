/** Loads the native engine once; every TypeScript module goes through here so a missing binary fails in one place. */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** The napi-rs addon (see index.d.ts at the package root for its typed surface). */
export const native: typeof import("../../index.js") = require("../../index.js");
