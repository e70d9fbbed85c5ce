// Knowing that a writer waits in Pi's file mutation queue, without waiting a fixed time (src/pi/file-queue.ts).
import { join } from "node:path";
import { withFileMutationQueue } from "@earendil-works/pi-coding-agent";
import { onQueueRequest } from "../../src/pi/file-queue.ts";

/**
 * Resolves once a writer has asked for the queue of a path ending in `suffix` and Pi has registered it behind
 * whoever holds that path: Pi registers requests one at a time in call order, so a request of our own made right
 * after the writer's (for `probeDir/.queue-probe`, a path nobody else uses) runs only once the writer's is in place.
 * Call it before starting the writer. Rejects after `ms` when no writer asked (a bound, not a synchronization).
 */
export function queuedAt(suffix, probeDir, ms = 30000) {
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => {
			stop();
			reject(new Error(`no writer asked for the queue of ${suffix} within ${ms} ms`));
		}, ms);
		const stop = onQueueRequest((path) => {
			if (!path.endsWith(suffix)) return;
			stop();
			clearTimeout(timer);
			// The listener runs just before the writer's own request: ours goes after it.
			queueMicrotask(() => withFileMutationQueue(join(probeDir, ".queue-probe"), async () => undefined).then(resolve, reject));
		});
	});
}
