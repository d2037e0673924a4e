/**
 * Group commit for the data dir's database, off the event loop. With `synchronous = FULL` SQLite
 * syncs the write-ahead log before a commit returns: on the service's connection that would stop
 * the event loop for a disk sync (3.6 ms p50, 12 ms p90 on a small VM) three times per hosted
 * generation. The writes handed to `write()` therefore run in a worker thread on a connection of
 * its own; those that arrive while a group commits share the next group's IMMEDIATE transaction
 * (each in a savepoint, so one that fails rolls back alone), one sync serves them all, and each
 * caller is answered once its group is on the disk. Another process's write lock is waited for in
 * SQLite's busy handler, which stops only the worker.
 *
 * A group of writes that need no sync of their own (see `write`) commits with `synchronous =
 * NORMAL`, which in WAL mode skips the sync; the next synced commit syncs the log those frames are
 * in, and SQLite syncs the log before every checkpoint.
 */
import { Worker } from 'node:worker_threads';
import { BUSY_WAIT_MS } from './busy';
import { conditionOf } from './condition';
import type { SqliteDatabase } from './database';
import { onePerConnection } from './per-connection';

/** One statement of a write, with its values (an array for `?`, an object for named parameters). */
export interface WriteStatement {
	sql: string;
	values: readonly unknown[] | Record<string, unknown>;
	/** Answer the row the statement returns (RETURNING) instead of `{ changes }`. */
	row?: boolean;
	/** Answer every row the statement returns (RETURNING) instead of `{ changes }`. */
	rows?: boolean;
	/** Run only when the statement before it changed a row. */
	ifChanged?: boolean;
}

interface Queued {
	write: readonly WriteStatement[];
	durable: boolean;
	resolve: (value: unknown) => void;
	reject: (error: unknown) => void;
}

/** A failure keeps SQLite's code (SQLITE_FULL, SQLITE_BUSY …): the condition and the HTTP answer read it. */
type SentError = { message: string; code?: string };
/** A whole group that failed (the lock busy past the wait, a full disk) fails each of its writes. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: SentError };

// Runs in the worker: its own connection, statements prepared once per text.
const COMMIT_IN_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const database = new Database(workerData.file, { timeout: workerData.busyTimeoutMs });
database.pragma('synchronous = FULL');
database.function('imagegen_clock_ms', { deterministic: false }, () => Date.now());
const prepared = new Map();
const statement = (sql) => prepared.get(sql) ?? prepared.set(sql, database.prepare(sql)).get(sql);
const sent = (error) => ({ message: error.message, code: error.code });
const attempt = (run) => {
	try {
		return { ok: true, value: run() };
	} catch (error) {
		return { ok: false, error: sent(error) };
	}
};
const one = database.transaction((write) => {
	let answer;
	for (const step of write) {
		if (step.ifChanged && answer?.changes === 0) continue;
		answer = step.row ? statement(step.sql).get(step.values) : step.rows ? statement(step.sql).all(step.values) : { changes: statement(step.sql).run(step.values).changes };
	}
	return answer;
});
const group = database.transaction((writes) => writes.map((write) => attempt(() => one(write)))).immediate;
// A pragma is compiled at every call: set only when a group's durability differs from the last one's.
let synced = true;
parentPort.on('message', ({ writes, durable }) => {
	if (durable !== synced) database.pragma(durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
	synced = durable;
	const committed = attempt(() => (writes.length === 0 ? [] : group(writes)));
	parentPort.postMessage(committed.ok ? committed.value : writes.map(() => committed));
});
`;

export class SqliteGroupCommit {
	private queue: Queued[] = [];
	private committing: Promise<void> | null = null;
	private worker: Worker | undefined;
	private answered: ((outcomes: readonly Outcome[]) => void) | undefined;

	constructor(private readonly database: SqliteDatabase) {}

	/**
	 * Runs `write` (statements, in order, in one savepoint) in the next group; resolves with the last
	 * statement's answer once it is on the disk, or, with `durable: false`, once it is committed
	 * (visible to every process; the next synced commit takes it to the disk): for rows whose loss in
	 * a power cut the start-up clean-up repairs, such as a reservation.
	 */
	write<T>(write: readonly WriteStatement[], options: { durable?: boolean } = {}): Promise<T> {
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

	/** Drains, then stops the worker and its connection; the database itself is closed by its owner. */
	async close(): Promise<void> {
		await this.drain();
		await this.worker?.terminate();
		this.worker = undefined;
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
		const worker = this.started();
		worker.ref();
		return new Promise<readonly Outcome[]>((resolve) => {
			// A thread that stopped answers one failure for the whole group.
			this.answered = (outcomes) => resolve(outcomes.length === batch.length ? outcomes : batch.map(() => outcomes[0]!));
			worker.postMessage({ writes: batch.map((queued) => queued.write), durable: batch.some((queued) => queued.durable) });
		}).finally(() => this.worker?.unref());
	}

	/** The worker, started at the first write and again after one that stopped. */
	private started(): Worker {
		if (this.worker) return this.worker;
		const worker = new Worker(COMMIT_IN_WORKER, {
			eval: true,
			// The connection's own wait for the lock; the service's, which waits from timers (0), `BUSY_WAIT_MS`.
			workerData: { file: this.database.name, driver: require.resolve('better-sqlite3'), busyTimeoutMs: this.database.pragma('busy_timeout', { simple: true }) || BUSY_WAIT_MS },
		});
		worker.on('message', (outcomes: Outcome[]) => this.answered?.(outcomes));
		const stopped = (error: SentError) => {
			if (this.worker === worker) this.worker = undefined;
			this.answered?.([{ ok: false, error }]);
		};
		worker.on('error', (error) => stopped({ message: `the database's commit thread failed: ${error.message}` }));
		worker.on('exit', (code) => stopped({ message: `the database's commit thread stopped with code ${code}` }));
		this.worker = worker;
		return worker;
	}
}

/** The one group commit of a connection, shared by every store that writes through it. */
export const groupCommitOf = onePerConnection((database) => new SqliteGroupCommit(database));
