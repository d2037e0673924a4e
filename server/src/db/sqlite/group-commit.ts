/**
 * Group commit for the data dir's database, off the event loop. With `synchronous = FULL` SQLite
 * syncs the write-ahead log before a commit returns: on the service's connection that would stop
 * the event loop for a whole disk sync, as slow as the disk is, three times per hosted
 * generation. The writes handed to `write()` therefore run in the process's commit thread
 * (sqlite/commit-thread.ts) on a connection of its own; those that arrive while a group commits
 * share the next group's IMMEDIATE transaction (each in a savepoint, so one that fails rolls back
 * alone), one sync serves them all, and each caller is answered once its group is on the disk.
 * Another process's write lock is waited for in SQLite's busy handler, which stops only that thread.
 *
 * A group of writes that need no sync of their own (see `write`) commits with `synchronous =
 * NORMAL`, which in WAL mode skips the sync; the next synced commit syncs the log those frames are
 * in, and SQLite syncs the log before every checkpoint.
 */
import { BUSY_WAIT_MS } from './busy';
import { commitThread, type ConnectionSpec, type Outcome, type WriteStatement } from './commit-thread';
import { conditionOf } from './condition';
import type { SqliteDatabase } from './database';
import { onePerConnection } from './per-connection';

export type { WriteStatement } from './commit-thread';

interface Queued {
	write: readonly WriteStatement[];
	durable: boolean;
	resolve: (value: unknown) => void;
	reject: (error: unknown) => void;
}

/** Numbers the group commits of this process: each names its connection in the commit thread. */
let numbered = 0;

export class SqliteGroupCommit {
	private queue: Queued[] = [];
	private committing: Promise<void> | null = null;
	/** Set by `close`: the writes handed in before it are committed, later ones refused. */
	private closing = false;
	private readonly id = ++numbered;
	/**
	 * Read at the first group. The thread's connection waits for another process's lock itself; the
	 * service's own connection (busy_timeout 0: it waits from timers) lends it `BUSY_WAIT_MS`.
	 */
	private spec: ConnectionSpec | undefined;

	constructor(private readonly database: SqliteDatabase) {}

	/**
	 * Runs `write` (statements, in order, in one savepoint) in the next group; resolves with the last
	 * statement's answer once it is on the disk, or, with `durable: false`, once it is committed
	 * (visible to every process; the next synced commit takes it to the disk): for rows whose loss in
	 * a power cut the start-up clean-up repairs, such as a reservation.
	 */
	write<T>(write: readonly WriteStatement[], options: { durable?: boolean } = {}): Promise<T> {
		// Past the drain of a close, a write would race the close of its connection in the commit thread.
		if (this.closing) return Promise.reject(new Error('the database connection is closing: the write was not made'));
		return new Promise<T>((resolve, reject) => {
			this.queue.push({ write, durable: options.durable ?? true, resolve: resolve as (value: unknown) => void, reject });
			this.committing ??= this.commitQueued();
		});
	}

	/** Resolves once the commit thread has its connection, so that no request waits for it to load. */
	async start(): Promise<void> {
		await this.write([], { durable: false });
	}

	/** Waits until every write handed in so far is committed (or has failed). */
	async drain(): Promise<void> {
		while (this.committing) await this.committing;
	}

	/** Drains, then closes this connection's own in the commit thread; the database itself is closed by its owner. */
	async close(): Promise<void> {
		this.closing = true;
		await this.drain();
		await commitThread.close(this.id);
	}

	/** Commits until the queue is empty, then lets the next write start again. */
	private async commitQueued(): Promise<void> {
		// The first write waits for the rest of its turn; later ones for the group under way.
		await new Promise<void>((next) => setImmediate(next));
		try {
			for (let batch = this.queue.splice(0); batch.length > 0; batch = this.queue.splice(0)) await this.commitGroup(batch);
		} finally {
			this.committing = null;
		}
	}

	private async commitGroup(batch: readonly Queued[]): Promise<void> {
		if (!this.database.open) {
			for (const queued of batch) queued.reject(new Error('the database connection is not open'));
			return;
		}
		const outcomes = await this.commit(batch);
		if (outcomes.some((outcome) => outcome.ok)) conditionOf(this.database).noteWritten();
		outcomes.forEach((outcome, index) => {
			const queued = batch[index]!;
			if (outcome.ok) return queued.resolve(outcome.value);
			const error = Object.assign(new Error(outcome.error.message), outcome.error.code === undefined ? {} : { code: outcome.error.code });
			conditionOf(this.database).noteFailure(error);
			queued.reject(error);
		});
	}

	private commit(batch: readonly Queued[]): Promise<readonly Outcome[]> {
		this.spec ??= { file: this.database.name, busyTimeoutMs: Number(this.database.pragma('busy_timeout', { simple: true })) || BUSY_WAIT_MS };
		const writes = batch.map((queued) => queued.write);
		return commitThread.commit(this.id, this.spec, writes, batch.some((queued) => queued.durable));
	}
}

/** The one group commit of a connection, shared by every store that writes through it. */
export const groupCommitOf = onePerConnection((database) => new SqliteGroupCommit(database));
