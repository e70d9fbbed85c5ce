/**
 * Pi's file mutation queue (`withFileMutationQueue`) taken for several paths at once, always in sorted order, so two
 * writers of the same files never wait on each other crosswise (docs/patch.md "How it behaves", Serialization). apply_patch and the
 * nested patches of code cells take their queues here.
 */
import { withFileMutationQueue } from "@earendil-works/pi-coding-agent";

/** Told the path each time a writer asks for its queue. */
export type QueueRequestListener = (path: string) => void;

const listeners = new Set<QueueRequestListener>();

/**
 * Runs `fn` while holding the queue of every path (duplicates taken once), taken one after another in sorted order;
 * each queue is released when `fn` settles.
 */
export function underQueues<T>(paths: readonly string[], fn: () => Promise<T>): Promise<T> {
	const sorted = [...new Set(paths)].sort();
	const take = (i: number): Promise<T> => {
		if (i === sorted.length) return fn();
		for (const l of listeners) l(sorted[i]);
		return withFileMutationQueue(sorted[i], () => take(i + 1));
	};
	return take(0);
}

/**
 * Observes queue requests (`underQueues` tells each path just before it asks Pi for that queue). Pi registers queue
 * requests one at a time in call order, so once a listener has heard a path, a request of the listener's own
 * completes only after that writer is registered, and the writer then provably waits behind whoever holds the
 * path: how a test knows a writer is queued without waiting a fixed time. Returns the function that stops observing.
 */
export function onQueueRequest(listener: QueueRequestListener): () => void {
	listeners.add(listener);
	return () => listeners.delete(listener);
}
