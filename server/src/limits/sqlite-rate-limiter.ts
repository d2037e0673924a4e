/**
 * Requests per minute per API key (and failed authentications per client address) for every
 * process on one data dir: one token bucket per name in the data dir's SQLite database, in the
 * table and with the statements PostgreSQL's limiter uses (bucket-rows.ts). A take is one upsert
 * inside an IMMEDIATE transaction (the group commit's, shared with the writes that arrive with
 * it), which holds the database's write lock, so takes from any number of processes are applied
 * one after another and together admit at most the limit.
 *
 * A bucket is no billing record: its commit is not synced on its own (a power cut may give a key
 * back a few requests), which keeps a take off the disk's sync on every request.
 *
 * Clock: the `now` passed in, else this machine's, shared by every process on one data dir.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { bindNumbered, type SqliteDatabase } from '../db/sqlite/database';
import { releaseFreePages } from '../db/sqlite/free-pages';
import { groupCommitOf, type SqliteGroupCommit } from '../db/sqlite/group-commit';
import { BUCKET_SQL, BucketRateLimiter, FORGET_BATCH } from './bucket-rows';

interface SqliteRateLimiterOptions {
	now?: () => number;
}

export class SqliteRateLimiter extends BucketRateLimiter {
	private readonly peekStatement;
	private readonly commits: SqliteGroupCommit;
	private readonly now: () => number;

	constructor(
		private readonly database: SqliteDatabase,
		perMinute: number,
		options: SqliteRateLimiterOptions = {},
	) {
		super(perMinute);
		this.now = options.now ?? Date.now;
		this.commits = groupCommitOf(database);
		// The database's clock of the shared statements, when no time is passed: this machine's (the
		// group commit's thread, which runs the takes, defines it on its connection too).
		database.function('imagegen_clock_ms', { deterministic: false }, () => Date.now());
		this.peekStatement = database.prepare<[Record<string, unknown>], unknown>(BUCKET_SQL.peek);
	}

	/**
	 * Deletes the buckets untouched for a minute (full again, so no decision changes), in batches of
	 * `FORGET_BATCH`, each its own short transaction, then gives the freed pages back. Answers how
	 * many went. Buckets per client address would otherwise pile up for ever.
	 */
	async forgetIdle(now: number | null = this.now()): Promise<number> {
		let removed = 0;
		for (;;) {
			const { changes } = await this.commits.write<{ changes: number }>([{ sql: BUCKET_SQL.forgetIdle, values: bindNumbered([now, FORGET_BATCH]) }], { durable: false });
			removed += changes;
			if (changes < FORGET_BATCH) break;
			await nextTurn();
		}
		if (removed > 0) await releaseFreePages(this.database);
		return removed;
	}

	protected time(): number {
		return this.now();
	}

	/** A take in the group commit (not synced on its own); a peek on the service's connection. */
	protected async row<Row>(sql: string, values: unknown[], take: boolean): Promise<Row | undefined> {
		if (take) return this.commits.write<Row>([{ sql, values: bindNumbered(values), row: true }], { durable: false });
		return this.peekStatement.get(bindNumbered(values)) as Row | undefined;
	}
}
