// Line hunks for the edit-drift benchmark: [start, deleted, added lines] against a text's lines (0-based start;
// deleted = 0 is an insertion before line start+1). Texts end with "\n"; lines are split without it.

/** The lines of a text that ends with "\n". */
export const splitLines = (t) => (t === "" ? [] : t.slice(0, -1).split("\n"));
export const joinLines = (ls) => (ls.length ? ls.join("\n") + "\n" : "");

/** `text` with the hunks (sorted, not overlapping) applied. */
export function applyHunks(text, hunks) {
	const ls = splitLines(text);
	const out = [];
	let at = 0;
	for (const [start, del, add] of hunks) {
		out.push(...ls.slice(at, start), ...add);
		at = start + del;
	}
	out.push(...ls.slice(at));
	return joinLines(out);
}

/** Two hunk lists against the same text, merged; null when they touch (overlap, or insert at the same place). */
export function mergeHunks(a, b) {
	const all = [...a, ...b].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
	for (let k = 1; k < all.length; k++) {
		const [s0, d0] = all[k - 1], [s1] = all[k];
		if (s1 < s0 + d0 || s1 === s0 || s1 === s0 + d0) return null;
	}
	return all;
}
