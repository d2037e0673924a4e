/**
 * A token bucket as both databases store it (`rate_limit_buckets`: tokens, whether the last take
 * was admitted, and the time of its last refill in unix milliseconds) and the statements both run,
 * refill included: numbered `$n` parameters, which SQLite reads as named ones (sqlite/database.ts
 * `bindNumbered`), and only what both dialects read alike (CASE rather than LEAST and GREATEST).
 *
 * The time of a take is `$3` when the caller fixes it, else `imagegen_clock_ms()`, the database's
 * clock: on PostgreSQL a function of migration 8, the one clock every replica shares; on SQLite
 * this machine's, which every process on the data dir shares (`SqliteRateLimiter` defines it).
 */
import type { RateDecision, RateLimiter } from './rate-limiter';
import { ADMITTED, FULL_AFTER_MS, assertPerMinute, decide } from './token-bucket';

const PER_MINUTE = 'CAST($2 AS double precision)';
const NOW = 'COALESCE(CAST($3 AS bigint), imagegen_clock_ms())';
const MINUTE_MS = 60_000;

/** The later of `at` and the bucket's own time: a take that read the clock before another's later one refills nothing twice. */
const later = (at: string) => `CASE WHEN ${at} > stored.updated_ms THEN ${at} ELSE stored.updated_ms END`;

/** The stored bucket refilled evenly up to `at`, never past the limit. */
function refilledAt(at: string): string {
	const tokens = `stored.tokens + (${later(at)} - stored.updated_ms) * ${PER_MINUTE} / ${MINUTE_MS}`;
	return `CASE WHEN ${tokens} < ${PER_MINUTE} THEN ${tokens} ELSE ${PER_MINUTE} END`;
}

export const BUCKET_SQL = {
	/**
	 * One statement: the row is locked (PostgreSQL) or the write lock held (SQLite) while it runs, so
	 * the refill is computed from what every other take left, and concurrent takes from any number of
	 * processes or replicas together admit at most the limit. Args: bucket, per minute, time or null.
	 */
	take: `INSERT INTO rate_limit_buckets AS stored (bucket, tokens, allowed, updated_ms)
		VALUES ($1, ${PER_MINUTE} - 1, true, ${NOW})
		ON CONFLICT (bucket) DO UPDATE SET (tokens, allowed, updated_ms) = (
			SELECT CASE WHEN refill.tokens >= 1 THEN refill.tokens - 1 ELSE refill.tokens END, refill.tokens >= 1, refill.at
			FROM (SELECT ${refilledAt('EXCLUDED.updated_ms')} AS tokens, ${later('EXCLUDED.updated_ms')} AS at) AS refill
		)
		RETURNING tokens, allowed`,
	/** The same refill, read without a lock or a write; no row is a full bucket. Same arguments. */
	peek: `SELECT ${refilledAt(NOW)} AS tokens FROM rate_limit_buckets AS stored WHERE bucket = $1`,
	/**
	 * Up to `$2` buckets untouched for a minute: full again, so deleting them changes no decision,
	 * and buckets per client address (failed authentication) do not pile up. Args: time or null, batch.
	 * The idle test is repeated outside the subquery: on PostgreSQL a take that updates a chosen
	 * bucket meanwhile makes the delete check the row again, and only the outer test is checked again
	 * (a bucket deleted after takes made it whole again, and admitted more than the limit).
	 */
	forgetIdle: `DELETE FROM rate_limit_buckets WHERE bucket IN (
		SELECT bucket FROM rate_limit_buckets WHERE updated_ms < COALESCE(CAST($1 AS bigint), imagegen_clock_ms()) - ${FULL_AFTER_MS} ORDER BY updated_ms LIMIT $2
	) AND updated_ms < COALESCE(CAST($1 AS bigint), imagegen_clock_ms()) - ${FULL_AFTER_MS}`,
};

/** Idle buckets deleted per statement: the lock is never held for long. */
export const FORGET_BATCH = 500;

/** Idle buckets are looked for at most this often per process; every process doing it is harmless. */
const FORGET_EVERY_MS = 60_000;

/**
 * Both engines' limiter; each says how it runs a statement and deletes idle buckets. Idle buckets
 * are forgotten at most once a minute per process, in the background of a take: the request that
 * starts it does not wait for it.
 */
export abstract class BucketRateLimiter implements RateLimiter {
	private lastForgotAt = -Infinity;
	private forgetting: Promise<unknown> | null = null;

	constructor(readonly perMinute: number) {
		assertPerMinute(perMinute);
	}

	/** The time of a statement in unix milliseconds, or null for the database's clock. */
	protected abstract time(): number | null;
	/** The row `sql` answers for `values` (`$1`, `$2` …); `take` writes. */
	protected abstract row<Row>(sql: string, values: unknown[], take: boolean): Promise<Row | undefined>;
	/** Deletes the buckets idle at `now` (`BUCKET_SQL.forgetIdle`, in batches); answers how many went. */
	abstract forgetIdle(now: number | null): Promise<number>;

	async take(bucket: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		// 0 means no limit, as for the in-memory limiter.
		if (perMinute === 0) return ADMITTED;
		const time = this.time();
		this.forgetIdleNowAndThen(time);
		const row = await this.row<{ tokens: number; allowed: boolean | number }>(BUCKET_SQL.take, [bucket, perMinute, time], true);
		// PostgreSQL answers a boolean, SQLite 0 or 1.
		return row!.allowed ? ADMITTED : decide(row!.tokens, perMinute);
	}

	/** One read, no lock and no row written: a bucket never taken from is full. */
	async peek(bucket: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		const row = await this.row<{ tokens: number }>(BUCKET_SQL.peek, [bucket, perMinute, this.time()], false);
		return decide(row?.tokens ?? perMinute, perMinute);
	}

	/** Waits for a forgetting under way, so the database can be closed after. */
	async close(): Promise<void> {
		await this.forgetting;
	}

	private forgetIdleNowAndThen(time: number | null): void {
		const now = time ?? Date.now();
		if (this.forgetting || now - this.lastForgotAt < FORGET_EVERY_MS) return;
		this.lastForgotAt = now;
		// A failure (the lock busy past its timeout, the database away) only delays it to the next minute.
		this.forgetting = this.forgetIdle(time)
			.catch(() => undefined)
			.finally(() => (this.forgetting = null));
	}
}
