// A toolkit failure as Pi 1.x gets it (src/pi/failure.ts, docs/render.md "Errors"): a returned error result with
// `details.errorCode` and the model's text. The node suites load Pi 1.6.0's package, so the glue returns failures
// there; the e2e suites check Pi 0.87's thrown text form.
import assert from "node:assert/strict";

/** Awaits `promise` and checks it is a failure result with `code` whose text matches `text`; resolves with it. */
export async function failsAsData(promise, code, text) {
	const r = await promise;
	assert.equal(r?.isError, true, `an error result: ${JSON.stringify(r)}`);
	assert.equal(r.details?.errorCode, code, JSON.stringify(r.details));
	const t = (r.content ?? []).map((c) => c.text ?? "").join("\n");
	if (text instanceof RegExp) assert.match(t, text);
	else if (typeof text === "string") assert.equal(t, text);
	return r;
}
