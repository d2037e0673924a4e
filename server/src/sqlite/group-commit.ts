/**
 * Group commit for the data dir's database. better-sqlite3 runs on the event loop, so with
 * `synchronous = FULL` every commit blocks the whole service for one disk sync; a hosted
 * generation made three (reservation, publish, usage line). Writes handed to `write()` in the same
 * turn of the event loop instead share one IMMEDIATE transaction (each in a savepoint of its own,
 * so one that fails rolls back alone), committed with `synchronous = NORMAL`, and every caller is
 * answered only after an fdatasync of the write-ahead log, run on the thread pool, that began once
 * the commit was in the log.
 *
 * Why that keeps every acknowledged write across a power cut, not only a killed process: in WAL
 * mode a commit is the log's frames written up to a commit frame; NORMAL only skips the sync of
 * that write, which we then do ourselves before acknowledging. SQLite syncs the log before each
 * checkpoint and the database after it, and starts the log again from its beginning only after a
 * completed checkpoint, so a synced commit is on the disk in the log or in the database from then
 * on. Writes that do not go through here keep `synchronous = FULL`.
 */
import { closeSync, fdatasync, fstatSync, openSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { whenUnlocked } from './busy';
import { conditionOf } from './condition';
import type { SqliteDatabase } from './database';
import { onePerConnection } from './per-connection';

const datasync = promisify(fdatasync);

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
	private syncing: Promise<void> | null = null;
	private following: Promise<void> | null = null;
	private wal: number | undefined;
	private readonly inWalMode: boolean;
	private readonly commitBatch: (batch: readonly Queued[]) => Outcome[];

	constructor(private readonly database: SqliteDatabase) {
		this.inWalMode = database.pragma('journal_mode', { simple: true }) === 'wal';
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
	 * with `durable: false`, once it is committed (visible to every process; a later sync or a
	 * checkpoint takes it to the disk): for rows whose loss in a power cut the start-up clean-up
	 * repairs, such as a reservation.
	 */
	write<T>(work: () => T, options: { durable?: boolean } = {}): Promise<T> {
		return new Promise<T>((resolve, reject) => {
			this.queue.push({ work, durable: options.durable ?? true, resolve: resolve as (value: unknown) => void, reject });
			if (this.scheduled) return;
			this.scheduled = true;
			setImmediate(() => this.flush());
		});
	}

	/** Waits until every write handed in so far is committed and synced (or has failed). */
	async drain(): Promise<void> {
		while (this.scheduled || this.pending.size > 0) {
			if (this.scheduled) this.flush();
			await Promise.allSettled([...this.pending]);
		}
	}

	/** Drains, then lets go of the log's descriptor; the database itself is closed by its owner. */
	async close(): Promise<void> {
		await this.drain();
		if (this.wal !== undefined) closeSync(this.wal);
		this.wal = undefined;
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
		try {
			if (this.inWalMode) this.database.pragma('synchronous = NORMAL');
			return this.commitBatch(batch);
		} finally {
			if (this.inWalMode) this.database.pragma('synchronous = FULL');
		}
	}

	private answer(batch: readonly Queued[], outcomes: readonly Outcome[]): void {
		conditionOf(this.database).noteWritten();
		// Failures and writes that need no sync are answered now; the rest after the log's sync.
		const waiting: Array<{ queued: Queued; value: unknown }> = [];
		outcomes.forEach((outcome, index) => {
			const queued = batch[index]!;
			if (!outcome.ok) {
				conditionOf(this.database).noteFailure(outcome.error);
				queued.reject(outcome.error);
			} else if (queued.durable) waiting.push({ queued, value: outcome.value });
			else queued.resolve(outcome.value);
		});
		if (waiting.length === 0) return;
		const settled = this.syncLog().then(
			() => waiting.forEach(({ queued, value }) => queued.resolve(value)),
			(error: unknown) => waiting.forEach(({ queued }) => queued.reject(error)),
		);
		this.pending.add(settled);
		void settled.finally(() => this.pending.delete(settled));
	}

	/**
	 * A sync under way may have begun before this group's commit: callers arriving meanwhile share
	 * the one that follows it, so at most one runs and one waits whatever the load.
	 */
	private syncLog(): Promise<void> {
		if (!this.inWalMode) return Promise.resolve();
		if (!this.syncing) {
			this.syncing = this.syncOnce().finally(() => (this.syncing = null));
			return this.syncing;
		}
		this.following ??= this.syncing
			.catch(() => undefined)
			.then(() => {
				this.following = null;
				return this.syncLog();
			});
		return this.following;
	}

	private async syncOnce(): Promise<void> {
		await datasync(this.openLog());
	}

	/** The log as it is now: SQLite removes and recreates it only when every connection has closed. */
	private openLog(): number {
		const path = `${this.database.name}-wal`;
		if (this.wal !== undefined && fstatSync(this.wal).ino === statSync(path).ino) return this.wal;
		if (this.wal !== undefined) closeSync(this.wal);
		this.wal = openSync(path, 'r');
		return this.wal;
	}
}

/** The one group commit of a connection, shared by every store that writes through it. */
export const groupCommitOf = onePerConnection((database) => new SqliteGroupCommit(database));
