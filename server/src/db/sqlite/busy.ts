/**
 * Waiting for another process's write lock without stopping the service. SQLite's own busy
 * handler sleeps in the calling thread, which for better-sqlite3 is the event loop: while a stuck
 * CLI or a `sqlite3` shell held the lock, every request (health checks and file downloads too)
 * waited behind the one write. The service's connection therefore has no busy timeout; a write
 * that finds the lock taken is tried again from a timer, with backoff, until `BUSY_WAIT_MS` have
 * passed, and then fails with SQLITE_BUSY (a 503 with Retry-After).
 *
 * Retrying is safe: SQLITE_BUSY comes before anything was written (at BEGIN IMMEDIATE, or at the
 * first write of a deferred transaction, which better-sqlite3 then rolls back whole).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type Database from 'better-sqlite3';

/** Writers hold the lock for one short transaction: a wait this long means something is stuck. */
export const BUSY_WAIT_MS = 5_000;
const FIRST_RETRY_MS = 2;
/** Later retries: often enough to take the lock soon after it is let go, rare enough to cost nothing. */
const MAX_RETRY_MS = 50;

function isBusy(error: unknown): boolean {
	const code = (error as { code?: unknown } | null)?.code;
	return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

const waitingFromTimers = new WeakSet<Database.Database>();

/** Makes `database` fail at once on a taken lock (busy timeout 0); `whenUnlocked` then waits for it. */
export function waitFromTimers(database: Database.Database): void {
	database.pragma('busy_timeout = 0');
	waitingFromTimers.add(database);
}

/**
 * Runs `work` (synchronous statements on `database`) now, or, while the lock is taken, again from
 * a timer. A connection that waits in SQLite itself (a command's) has waited already: it fails at once.
 */
export async function whenUnlocked<T>(database: Database.Database, work: () => T): Promise<T> {
	const deadline = Date.now() + (waitingFromTimers.has(database) ? BUSY_WAIT_MS : 0);
	for (let delay = FIRST_RETRY_MS; ; delay = Math.min(MAX_RETRY_MS, delay * 2)) {
		try {
			return work();
		} catch (error) {
			const left = deadline - Date.now();
			if (!isBusy(error) || left <= 0) throw error;
			await sleep(Math.min(delay, left));
		}
	}
}
