// The one bounded wait of the node suites (docs/release.md "How tests wait"): a test waits for the state it needs,
// never for a guessed delay. The bound only keeps a broken test from hanging; it is not a timing expectation.

/** How long `until` waits by default before it fails: long enough for a loaded two-core CI machine. */
export const BOUND_MS = 20_000;

/**
 * Polls `pred` (which may be async) every `every` ms until it returns a truthy value, and resolves that value. Once
 * `ms` have passed without one, rejects with an error naming `what` — a string, or a function called only then (for
 * a message that describes the state at the time of failure).
 */
export async function until(what, pred, { ms = BOUND_MS, every = 20 } = {}) {
	const end = Date.now() + ms;
	for (;;) {
		const v = await pred();
		if (v) return v;
		if (Date.now() >= end) {
			const text = typeof what === "function" ? what() : what;
			throw new Error(`never happened within ${ms / 1000} s: ${text}`);
		}
		await new Promise((r) => setTimeout(r, every));
	}
}
