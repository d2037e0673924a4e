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
import { bindNumbered, type SqliteDatabase } from '../sqlite/database';
import { releaseFreePages } from '../sqlite/free-pages';
import { groupCommitOf, type SqliteGroupCommit } from '../sqlite/group-commit';
import { BUCKET_SQL, FORGET_BATCH, peekDecision, takeDecision } from './bucket-rows';
import type { RateDecision, RateLimiter } from './rate-limiter';
import { ADMITTED, assertPerMinute } from './token-bucket';

/** Idle buckets are looked for at most this often per process; every process doing it is harmless. */
const FORGET_EVERY_MS = 60_000;

interface BucketRow {
	tokens: number;
	allowed: number;
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
		// The database's clock of the shared statements, when no time is passed: this machine's (the
		// group commit's thread, which runs the takes, defines it on its connection too).
		database.function('imagegen_clock_ms', { deterministic: false }, () => Date.now());
		this.statements = {
			peek: database.prepare<[Record<string, unknown>], Pick<BucketRow, 'tokens'>>(BUCKET_SQL.peek),
		};
	}

	async take(bucketName: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		const now = this.now();
		this.forgetIdleNowAndThen(now);
		const row = await this.commits.write<BucketRow>([{ sql: BUCKET_SQL.take, values: bindNumbered([bucketName, perMinute, now]), row: true }], { durable: false });
		return takeDecision(row, perMinute);
	}

	/** One read, no lock and no row written: a bucket never taken from is full. */
	async peek(bucketName: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		return peekDecision(this.statements.peek.get(bindNumbered([bucketName, perMinute, this.now()])), perMinute);
	}

	/**
	 * Deletes the buckets untouched for a minute (full again, so no decision changes), in batches of
	 * `FORGET_BATCH`, each its own short transaction, then gives the freed pages back. Answers how
	 * many went. Buckets per client address would otherwise pile up for ever.
	 */
	async forgetIdle(now: number = this.now()): Promise<number> {
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

	/** Waits for a forgetting under way, so the database can be closed after. */
	async close(): Promise<void> {
		await this.forgetting;
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
