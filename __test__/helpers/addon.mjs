// Loads the built addon for node:test suites.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
export const native = require("../../index.js");
