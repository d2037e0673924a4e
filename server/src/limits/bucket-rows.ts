/**
 * A token bucket as both databases store it (`rate_limit_buckets`: tokens, whether the last take
 * was admitted, and the time of its last refill in unix milliseconds) and the statements both run,
 * refill included: numbered `$n` parameters and only what both dialects read alike (CASE rather
 * than LEAST and GREATEST).
 *
 * The time of a take is `$3` when the caller fixes it, else the database's clock, the one place
 * the texts differ: on PostgreSQL `imagegen_clock_ms()` (defined by its schema), the one clock
 * every replica shares; on SQLite this machine's, which every process on the data dir shares, read
 * once per statement.
 */
import type { Dialect } from '../db/sql-adapter';
import { FULL_AFTER_MS } from './token-bucket';

const CLOCK_MS: Record<Dialect, string> = {
	postgres: 'imagegen_clock_ms()',
	sqlite: "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)",
};

const PER_MINUTE = 'CAST($2 AS double precision)';
const MINUTE_MS = 60_000;

/** The later of `at` and the bucket's own time: a take that read the clock before another's later one refills nothing twice. */
const later = (at: string) => `CASE WHEN ${at} > stored.updated_ms THEN ${at} ELSE stored.updated_ms END`;

/** The stored bucket refilled evenly up to `at`, never past the limit. */
function refilledAt(at: string): string {
	const tokens = `stored.tokens + (${later(at)} - stored.updated_ms) * ${PER_MINUTE} / ${MINUTE_MS}`;
	return `CASE WHEN ${tokens} < ${PER_MINUTE} THEN ${tokens} ELSE ${PER_MINUTE} END`;
}

/** The bucket statements on one engine; each text is built once, when the limiter is made. */
export function bucketStatements(dialect: Dialect) {
	const clock = CLOCK_MS[dialect];
	const now = `COALESCE(CAST($3 AS bigint), ${clock})`;
	const idleBefore = `COALESCE(CAST($1 AS bigint), ${clock}) - ${FULL_AFTER_MS}`;
	return {
		/**
		 * One statement: the row is locked (PostgreSQL) or the write lock held (SQLite) while it runs,
		 * so the refill is computed from what every other take left, and concurrent takes from any
		 * number of processes or replicas together admit at most the limit. Args: bucket, per minute,
		 * time or null.
		 */
		take: `INSERT INTO rate_limit_buckets AS stored (bucket, tokens, allowed, updated_ms)
			VALUES ($1, ${PER_MINUTE} - 1, true, ${now})
			ON CONFLICT (bucket) DO UPDATE SET (tokens, allowed, updated_ms) = (
				SELECT CASE WHEN refill.tokens >= 1 THEN refill.tokens - 1 ELSE refill.tokens END, refill.tokens >= 1, refill.at
				FROM (SELECT ${refilledAt('EXCLUDED.updated_ms')} AS tokens, ${later('EXCLUDED.updated_ms')} AS at) AS refill
			)
			RETURNING tokens, allowed`,
		/** The same refill, read without a lock or a write; no row is a full bucket. Same arguments. */
		peek: `SELECT ${refilledAt(now)} AS tokens FROM rate_limit_buckets AS stored WHERE bucket = $1`,
		/**
		 * Up to `$2` buckets untouched for a minute: full again, so deleting them changes no decision,
		 * and buckets per client address (failed authentication) do not pile up. Args: time or null,
		 * batch. The idle test is repeated outside the subquery: on PostgreSQL a take that updates a
		 * chosen bucket meanwhile makes the delete check the row again, and only the outer test is
		 * checked again (a bucket deleted after takes made it whole again, and admitted more than the limit).
		 */
		forgetIdle: `DELETE FROM rate_limit_buckets WHERE bucket IN (
			SELECT bucket FROM rate_limit_buckets WHERE updated_ms < ${idleBefore} ORDER BY updated_ms LIMIT $2
		) AND updated_ms < ${idleBefore}`,
	};
}

/** Idle buckets deleted per statement: the lock is never held for long. */
export const FORGET_BATCH = 500;
