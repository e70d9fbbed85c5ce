/**
 * The ids of the sessions in Pi's session list, for the start-up scratch sweep (docs/host.md "Sessions").
 *
 * Pi's own list (`SessionManager.listAll()`, 0.87.1 and 1.6.0 alike) is every `*.jsonl` file in the folders of
 * `<agentDir>/sessions` whose first entry (the first line that parses as JSON) is a `session` header, and the id is
 * that header's. To show `/resume`'s message counts and texts it also reads and parses every other line of every
 * session: with 200 sessions of 500 KiB that took about 600 ms of CPU, nearly all on Node's main thread, at every
 * start with the host tools on, while Pi was starting (docs/startup.md "Where the time goes"). The sweep needs the
 * ids only, so this reads each file up to its first entry and stops: the same ids, at the cost of a directory
 * listing and one read per file.
 */
import type { Dirent } from "node:fs";
import { open, readdir } from "node:fs/promises";
import { join } from "node:path";

/** Files read at once (Pi reads its list 10 at a time). */
const CONCURRENT_READS = 10;
/** Bytes read per step while looking for the first entry (a session header is a few hundred bytes). */
const CHUNK = 16 * 1024;

/** The first entry of a session file as Pi reads it (readline's lines; blank, malformed and falsy ones such as
 * `null` are skipped), or null when there is none. */
async function firstEntry(path: string): Promise<unknown> {
	const file = await open(path, "r");
	try {
		const decoder = new TextDecoder();
		const buf = Buffer.alloc(CHUNK);
		let pending = "";
		for (;;) {
			const { bytesRead } = await file.read(buf, 0, CHUNK, null);
			const eof = bytesRead === 0;
			pending += eof ? decoder.decode() : decoder.decode(buf.subarray(0, bytesRead), { stream: true });
			const lines = pending.split(/\r\n|\n|\r/);
			// The last piece may be a line cut by the chunk: kept for the next step, unless the file ended.
			pending = eof ? "" : (lines.pop() ?? "");
			for (const line of lines) {
				if (!line.trim()) continue;
				let entry: unknown;
				try {
					entry = JSON.parse(line);
				} catch {
					continue; // a malformed line: Pi skips it too
				}
				if (entry) return entry;
			}
			if (eof) return null;
		}
	} finally {
		await file.close();
	}
}

/** The session id a file holds for Pi's list, or null when Pi would not list it. */
async function idOf(path: string): Promise<string | null> {
	try {
		const entry = (await firstEntry(path)) as { type?: unknown; id?: unknown } | null;
		return entry?.type === "session" && typeof entry.id === "string" ? entry.id : null;
	} catch {
		// unreadable (or a folder named *.jsonl): Pi leaves it out of the list as well
		return null;
	}
}

/** The ids of the sessions `SessionManager.listAll()` lists for `agentDir` (Pi's default session folder). */
export async function sessionIds(agentDir: string): Promise<string[]> {
	const root = join(agentDir, "sessions");
	let dirs: Dirent[];
	try {
		dirs = await readdir(root, { withFileTypes: true });
	} catch (e) {
		// No folder yet: no session. Any other failure is the caller's (it then sweeps nothing).
		if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
		throw e;
	}
	const files: string[] = [];
	for (const d of dirs) {
		if (!d.isDirectory() && !d.isSymbolicLink()) continue;
		const dir = join(root, d.name);
		try {
			for (const f of await readdir(dir)) if (f.endsWith(".jsonl")) files.push(join(dir, f));
		} catch {
			// not a folder (a link to a file) or unreadable: Pi lists nothing from it either
		}
	}
	const ids: string[] = [];
	let next = 0;
	const worker = async () => {
		while (next < files.length) {
			const id = await idOf(files[next++]);
			if (id !== null) ids.push(id);
		}
	};
	await Promise.all(Array.from({ length: Math.min(CONCURRENT_READS, files.length) }, worker));
	return ids;
}
