// The counting half of scripts/test.mjs, separate so __test__/test-runner.test.mjs can check it.

/** Counts from cargo's `test result:` lines and node:test's summary (`# pass N` in TAP, `ℹ pass N` in spec). */
export function parseCounts(text) {
	const c = { passed: 0, failed: 0, skipped: 0, seen: false };
	for (const m of text.matchAll(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/gm)) {
		c.passed += Number(m[1]);
		c.failed += Number(m[2]);
		c.skipped += Number(m[3]);
		c.seen = true;
	}
	for (const m of text.matchAll(/^(?:# |ℹ )(pass|fail|skipped|todo|cancelled) (\d+)\s*$/gm)) {
		const n = Number(m[2]);
		if (m[1] === "pass") c.passed += n;
		else if (m[1] === "fail" || m[1] === "cancelled") c.failed += n;
		else c.skipped += n;
		c.seen = true;
	}
	return c;
}
