// Reads the code tables of the repo's docs, so a test can hold a code list in the glue equal to its documentation
// (the same rule src/codes.rs `check::doc_table` applies to the Rust enums).
import { readFileSync } from "node:fs";

/** The first backticked word of each row of the table that follows the line `heading` in `docs/<file>`, in order. */
export function docTable(file, heading) {
	const doc = readFileSync(new URL(`../../docs/${file}`, import.meta.url), "utf8");
	const at = doc.split("\n").indexOf(heading);
	if (at < 0) throw new Error(`docs/${file} has no line ${heading}`);
	const rows = [];
	let started = false;
	for (const line of doc.split("\n").slice(at + 1)) {
		if (line.startsWith("| `")) {
			started = true;
			rows.push(line.split("`")[1]);
		} else if (started) break;
	}
	return rows;
}
