/**
 * Group commit for the data dir's database. The connection commits with `synchronous = FULL`, so
 * SQLite syncs the write-ahead log before a commit returns, and better-sqlite3 does that on the
 * event loop: a hosted generation's three writes (reservation, publish, usage line) would stop the
 * service for three syncs. Writes handed to `write()` in the same turn of the event loop instead
 * share one IMMEDIATE transaction (each in a savepoint of its own, so one that fails rolls back
 * alone): one sync serves them all, and each caller is answered once it is back.
 *
 * A group of writes that need no sync of their own (a reservation, a release: see `write`) commits
 * with `synchronous = NORMAL`, which in WAL mode skips the sync; the next synced commit syncs the
 * log those frames are in, and SQLite checkpoints only synced frames.
 */
import { whenUnlocked } from './busy';
import { conditionOf } from './condition';
import type { SqliteDatabase } from './database';
import { onePerConnection } from './per-connection';

interface Queued {
	work: () => unknown;
	durable: boolean;
	resolve: (value: unknown) => void;
	reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class SqliteGroupCommit {
	private queue: Queued[] = [];
	private scheduled = false;
	private readonly pending = new Set<Promise<void>>();
	private readonly commitBatch: (batch: readonly Queued[]) => Outcome[];

	constructor(private readonly database: SqliteDatabase) {
		this.commitBatch = database.transaction((batch: readonly Queued[]) =>
			batch.map((queued): Outcome => {
				try {
					// Nested in the batch's transaction, better-sqlite3 makes this a savepoint.
					return { ok: true, value: database.transaction(queued.work)() };
				} catch (error) {
					return { ok: false, error };
				}
			}),
		).immediate;
	}

	/**
	 * Runs `work` (synchronous statements) in the next group; resolves once it is on the disk, or,
	 * with `durable: false`, once it is committed (visible to every process; the next synced commit
	 * takes it to the disk): for rows whose loss in a power cut the start-up clean-up repairs, such
	 * as a reservation.
	 */
	write<T>(work: () => T, options: { durable?: boolean } = {}): Promise<T> {
		return new Promise<T>((resolve, reject) => {
			this.queue.push({ work, durable: options.durable ?? true, resolve: resolve as (value: unknown) => void, reject });
			if (this.scheduled) return;
			this.scheduled = true;
			setImmediate(() => this.flush());
		});
	}

	/** Waits until every write handed in so far is committed (or has failed). */
	async drain(): Promise<void> {
		while (this.scheduled || this.pending.size > 0) {
			if (this.scheduled) this.flush();
			await Promise.allSettled([...this.pending]);
		}
	}

	private flush(): void {
		if (!this.scheduled) return;
		this.scheduled = false;
		const batch = this.queue.splice(0);
		if (batch.length === 0) return;
		if (!this.database.open) {
			for (const queued of batch) queued.reject(new Error('the database connection is not open'));
			return;
		}
		// Tried at once; while another process holds the lock, again from a timer (sqlite/busy.ts).
		const committed = whenUnlocked(this.database, () => this.commitOnce(batch)).then(
			(outcomes) => this.answer(batch, outcomes),
			(error: unknown) => {
				// The commit itself failed (the lock stayed busy past the wait, a full disk): none of it happened.
				conditionOf(this.database).noteFailure(error);
				for (const queued of batch) queued.reject(error);
			},
		);
		this.pending.add(committed);
		void committed.finally(() => this.pending.delete(committed));
	}

	private commitOnce(batch: readonly Queued[]): Outcome[] {
		if (batch.some((queued) => queued.durable)) return this.commitBatch(batch);
		try {
			this.database.pragma('synchronous = NORMAL');
			return this.commitBatch(batch);
		} finally {
			this.database.pragma('synchronous = FULL');
		}
	}

	private answer(batch: readonly Queued[], outcomes: readonly Outcome[]): void {
		conditionOf(this.database).noteWritten();
		outcomes.forEach((outcome, index) => {
			const queued = batch[index]!;
			if (outcome.ok) return queued.resolve(outcome.value);
			conditionOf(this.database).noteFailure(outcome.error);
			queued.reject(outcome.error);
		});
	}
}

/** The one group commit of a connection, shared by every store that writes through it. */
export const groupCommitOf = onePerConnection((database) => new SqliteGroupCommit(database));
