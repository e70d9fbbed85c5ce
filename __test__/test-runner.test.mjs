// scripts/test.mjs: its counts per suite, and that it runs every suite after a failure with one summary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseCounts } from "../scripts/test-counts.mjs";

test("cargo's test result lines are summed over every test binary", () => {
	const out = [
		"running 3 tests",
		"test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s",
		"test result: FAILED. 10 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.2s",
	].join("\n");
	assert.deepEqual(parseCounts(out), { passed: 13, failed: 2, skipped: 1, seen: true });
});

test("node:test summaries in TAP and spec form; cancelled counts as failed, todo as skipped", () => {
	const tap = "# tests 9\n# suites 0\n# pass 5\n# fail 1\n# cancelled 1\n# skipped 1\n# todo 1\n# duration_ms 12.5\n";
	assert.deepEqual(parseCounts(tap), { passed: 5, failed: 2, skipped: 2, seen: true });
	const spec = "ℹ tests 3\nℹ pass 2\nℹ fail 1\nℹ skipped 0\n";
	assert.deepEqual(parseCounts(spec), { passed: 2, failed: 1, skipped: 0, seen: true });
});

test("text that only mentions counts is not a summary", () => {
	assert.deepEqual(parseCounts("ok 1 - # pass 3 in a name\nsaw test result: ok. 1 passed\n"), { passed: 0, failed: 0, skipped: 0, seen: false });
});
