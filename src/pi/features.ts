/**
 * Every feature module's `register(host)`, called once at load. Adding a capability = one import and one entry.
 */
import type { ToolkitHost } from "./host.ts";

export const FEATURES: ReadonlyArray<(host: ToolkitHost) => void> = [];
