/**
 * Requests per minute per API key (and failed authentications per client address) for every
 * process on one data dir: one token bucket per name in the data dir's SQLite database, with the
 * same refill as in memory and on PostgreSQL. A take reads and writes its row inside one IMMEDIATE
 * transaction (the group commit's, shared with the other writes of the same turn), which holds the
 * database's write lock, so takes from any number of processes are applied one after another and
 * together admit at most the limit.
 *
 * A bucket is no billing record: its commit is not synced on its own (a power cut may give a key
 * back a few requests), which keeps a take off the disk's sync on every request.
 *
 * Clock: the `now` passed in, else this machine's, shared by every process on one data dir.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SqliteDatabase } from '../sqlite/database';
import { releaseFreePages } from '../sqlite/free-pages';
import { groupCommitOf, type SqliteGroupCommit } from '../sqlite/group-commit';
import type { RateDecision, RateLimiter } from './rate-limiter';
import { ADMITTED, FULL_AFTER_MS, assertPerMinute, decide, refill, type TokenBucket } from './token-bucket';

/** Idle buckets deleted per transaction: the write lock is never held for long. */
export const FORGET_BATCH = 500;
/** Idle buckets are looked for at most this often per process; every process doing it is harmless. */
const FORGET_EVERY_MS = 60_000;

interface BucketRow {
	tokens: number;
	updated_at: number;
}

export interface SqliteRateLimiterOptions {
	now?: () => number;
}

export class SqliteRateLimiter implements RateLimiter {
	private readonly statements;
	private readonly commits: SqliteGroupCommit;
	private readonly now: () => number;
	private lastForgotAt = -Infinity;
	private forgetting: Promise<unknown> | null = null;

	constructor(
		private readonly database: SqliteDatabase,
		readonly perMinute: number,
		options: SqliteRateLimiterOptions = {},
	) {
		assertPerMinute(perMinute);
		this.now = options.now ?? Date.now;
		this.commits = groupCommitOf(database);
		this.statements = {
			read: database.prepare<[string], BucketRow>('SELECT tokens, updated_at FROM rate_limit_buckets WHERE bucket = ?'),
			write: database.prepare<[string, number, number]>(
				'INSERT INTO rate_limit_buckets (bucket, tokens, updated_at) VALUES (?, ?, ?) ON CONFLICT (bucket) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at',
			),
			forget: database.prepare<[number, number]>(
				'DELETE FROM rate_limit_buckets WHERE bucket IN (SELECT bucket FROM rate_limit_buckets WHERE updated_at < ? ORDER BY updated_at LIMIT ?)',
			),
		};
	}

	async take(bucketName: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		const now = this.now();
		this.forgetIdleNowAndThen(now);
		// The row is read inside the write transaction: what another process took meanwhile counts.
		return this.commits.write(
			() => {
				const bucket = refill(this.stored(bucketName), perMinute, now);
				const decision = decide(bucket.tokens, perMinute);
				this.statements.write.run(bucketName, decision.allowed ? bucket.tokens - 1 : bucket.tokens, bucket.updatedAt);
				return decision;
			},
			{ durable: false },
		);
	}

	/** One read, no lock and no row written: a bucket never taken from is full. */
	async peek(bucketName: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		return decide(refill(this.stored(bucketName), perMinute, this.now()).tokens, perMinute);
	}

	/**
	 * Deletes the buckets untouched for a minute (full again, so no decision changes), in batches of
	 * `FORGET_BATCH`, each its own short transaction, then gives the freed pages back. Answers how
	 * many went. Buckets per client address would otherwise pile up for ever.
	 */
	async forgetIdle(now: number = this.now()): Promise<number> {
		let removed = 0;
		for (;;) {
			const { changes } = await this.commits.write(() => this.statements.forget.run(now - FULL_AFTER_MS, FORGET_BATCH), { durable: false });
			removed += changes;
			if (changes < FORGET_BATCH) break;
			await nextTurn();
		}
		if (removed > 0) await releaseFreePages(this.database);
		return removed;
	}

	/** Waits for a forgetting under way, so the database can be closed after. */
	async close(): Promise<void> {
		await this.forgetting;
	}

	private stored(bucketName: string): TokenBucket | undefined {
		const row = this.statements.read.get(bucketName);
		return row && { tokens: row.tokens, updatedAt: row.updated_at };
	}

	/** In the background of a take: the request that starts it does not wait for it. */
	private forgetIdleNowAndThen(now: number): void {
		if (this.forgetting || now - this.lastForgotAt < FORGET_EVERY_MS) return;
		this.lastForgotAt = now;
		// A failure (the lock busy past its timeout) only delays the forgetting to the next minute.
		this.forgetting = this.forgetIdle(now)
			.catch(() => undefined)
			.finally(() => (this.forgetting = null));
	}
}
