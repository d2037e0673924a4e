/**
 * Each video job works in a folder of its own under the data dir's `work/`, removed when the job
 * ends. A process killed mid-job leaves its folder behind; nothing else would ever remove it, so
 * folders older than any job can run (its time limit, and a margin) are removed at start and then
 * now and again. A younger one may be a live job of another process on the same data dir.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

export const WORK_FOLDER_PREFIX = 'video-';

/** Removes the work folders left older than `olderThanMs`; answers how many. */
export async function removeLeftWorkFolders(workRoot: string, olderThanMs: number, now = Date.now()): Promise<number> {
	let names: string[];
	try {
		names = await readdir(workRoot);
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
		throw error;
	}
	let removed = 0;
	for (const name of names.filter((each) => each.startsWith(WORK_FOLDER_PREFIX))) {
		const path = join(workRoot, name);
		const info = await stat(path).catch(() => undefined);
		if (!info || now - info.mtimeMs <= olderThanMs) continue;
		await rm(path, { recursive: true, force: true });
		removed++;
	}
	return removed;
}
