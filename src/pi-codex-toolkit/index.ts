/**
 * The unbundled entry: `pi -e src/pi-codex-toolkit/index.ts` runs the glue straight from src/ (while editing it,
 * without rebuilding). The manifest names the bundle of src/ instead, dist/pi-codex-toolkit/index.ts, which starts
 * faster (docs/release.md "The bundled entry"). Both live in a folder named after the package because Pi lists a
 * local extension by the folder of its `index.ts` (docs/release.md "How Pi names the extension").
 */
export { default } from "../index.ts";
