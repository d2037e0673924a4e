/**
 * Gives the pages that deleted rows left free back to the file system (the database is opened with
 * auto_vacuum = INCREMENTAL), so the file stops growing once retention has turned over instead of
 * keeping its largest size for ever. Done in bounded steps, each a short write of its own, so other
 * writers (another process included) are never held up behind one long vacuum.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SqliteDatabase } from './database';
import { whenUnlocked } from './busy';

interface FreePagesOptions {
	/** Pages given back per step (4 KiB each by default). */
	pagesPerStep?: number;
	/** Steps per call at most; what is left waits for the next call. */
	maxSteps?: number;
}

/** Answers how many pages were given back. */
export async function releaseFreePages(database: SqliteDatabase, options: FreePagesOptions = {}): Promise<number> {
	const pagesPerStep = options.pagesPerStep ?? 256;
	const maxSteps = options.maxSteps ?? 64;
	let released = 0;
	for (let step = 0; step < maxSteps; step += 1) {
		const free = database.pragma('freelist_count', { simple: true }) as number;
		if (free === 0) break;
		await whenUnlocked(database, () => database.exec(`PRAGMA incremental_vacuum(${Math.min(free, pagesPerStep)})`));
		released += free - (database.pragma('freelist_count', { simple: true }) as number);
		await nextTurn();
	}
	return released;
}
