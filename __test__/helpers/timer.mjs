// The event-loop probe of the "runs off Node's main thread" tests (docs/napi.md "Panics", the async exports).

/**
 * Runs `call` while a 2 ms interval ticks; resolves its result, how long it took, the ticks seen while it ran and
 * the longest gap between them (the event loop's stall). A synchronous call would show no ticks and one gap as long
 * as the call.
 */
export async function underTimer(call) {
	let last = performance.now();
	let maxGap = 0;
	let ticks = 0;
	const timer = setInterval(() => {
		const now = performance.now();
		maxGap = Math.max(maxGap, now - last);
		last = now;
		ticks++;
	}, 2);
	const start = performance.now();
	last = start;
	try {
		const result = await call();
		const ms = performance.now() - start;
		maxGap = Math.max(maxGap, performance.now() - last);
		return { result, ms, ticks, maxGap };
	} finally {
		clearInterval(timer);
	}
}
