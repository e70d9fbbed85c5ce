/**
 * The file Pi loads through the package manifest (`"pi": {"extensions": [...]}`). Pi lists a local extension
 * (`pi -e <dir>`) by the folder of its `index.ts`, so the entry lives in a folder named after the package and Pi
 * shows `pi-codex-toolkit` instead of `src` (docs/release.md "How Pi names the extension"). Everything else is in
 * `../index.ts`, which embedders keep importing.
 */
export { default } from "../index.ts";
