/**
 * Requests per minute per API key for the whole fleet: one token bucket per key in PostgreSQL
 * (bursts up to the limit, refilled evenly, like the in-memory limiter). Each `take` is a single
 * upsert: PostgreSQL locks the key's row for the statement, so concurrent takes from any number
 * of replicas are applied one after another and together admit at most the limit.
 */
import type { Pool } from 'pg';
import type { RateDecision, RateLimiter } from './rate-limiter';
import { assertPerMinute } from './token-bucket';

export interface PgRateLimiterOptions {
	/**
	 * The time of a take. Defaults to the database's clock, the one clock every replica shares;
	 * tests fix it to count exactly.
	 */
	now?: () => Date;
}

// The refill is computed against the row as it is once locked, so a take that waited for another
// replica's take sees that take's result. GREATEST keeps a bucket's time from going backwards when
// a take that read the clock before waiting for the lock runs after a later one.
const TAKE = `
	INSERT INTO rate_limit_buckets AS bucket (api_key_id, tokens, allowed, updated_at)
	VALUES ($1, $2::float8 - 1, true, COALESCE($3::timestamptz, clock_timestamp()))
	ON CONFLICT (api_key_id) DO UPDATE SET (tokens, allowed, updated_at) = (
		SELECT
			CASE WHEN refill.tokens >= 1 THEN refill.tokens - 1 ELSE refill.tokens END,
			refill.tokens >= 1,
			refill.at
		FROM (
			SELECT
				LEAST($2::float8, bucket.tokens + GREATEST(0, extract(epoch FROM EXCLUDED.updated_at - bucket.updated_at)) * $2::float8 / 60) AS tokens,
				GREATEST(bucket.updated_at, EXCLUDED.updated_at) AS at
		) AS refill
	)
	RETURNING tokens, allowed`;

// The same refill as TAKE, read without a lock or a write: no row is a full bucket.
const PEEK = `
	SELECT LEAST($2::float8, tokens + GREATEST(0, extract(epoch FROM COALESCE($3::timestamptz, clock_timestamp()) - updated_at)) * $2::float8 / 60) AS tokens
	FROM rate_limit_buckets WHERE api_key_id = $1`;

// A bucket refills completely within a minute, so one untouched for ten is full: deleting it
// changes no decision. Buckets per client address (failed authentication) would otherwise pile up.
const FORGET_IDLE = `DELETE FROM rate_limit_buckets WHERE updated_at < COALESCE($1::timestamptz, clock_timestamp()) - interval '10 minutes'`;
const FORGET_EVERY_MS = 60_000;

export class PgRateLimiter implements RateLimiter {
	private lastForgotAt = -Infinity;

	constructor(
		private readonly pool: Pool,
		readonly perMinute: number,
		private readonly options: PgRateLimiterOptions = {},
	) {
		assertPerMinute(perMinute);
	}

	async take(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		// 0 means no limit, as for the in-memory limiter.
		if (perMinute === 0) return { allowed: true, retryAfterSeconds: 0 };
		await this.forgetIdleBuckets();
		const { rows } = await this.pool.query<{ tokens: number; allowed: boolean }>(TAKE, [apiKeyId, perMinute, this.options.now?.() ?? null]);
		const bucket = rows[0]!;
		if (bucket.allowed) return { allowed: true, retryAfterSeconds: 0 };
		return refused(bucket.tokens, perMinute);
	}

	/** At most once a minute per replica; every replica doing it is harmless (the rows are full). */
	private async forgetIdleBuckets(): Promise<void> {
		const now = this.options.now?.();
		const time = now?.getTime() ?? Date.now();
		if (time - this.lastForgotAt < FORGET_EVERY_MS) return;
		this.lastForgotAt = time;
		await this.pool.query(FORGET_IDLE, [now ?? null]);
	}

	async peek(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return { allowed: true, retryAfterSeconds: 0 };
		const { rows } = await this.pool.query<{ tokens: number }>(PEEK, [apiKeyId, perMinute, this.options.now?.() ?? null]);
		const tokens = rows[0]?.tokens ?? perMinute;
		return tokens >= 1 ? { allowed: true, retryAfterSeconds: 0 } : refused(tokens, perMinute);
	}
}

function refused(tokens: number, perMinute: number): RateDecision {
	return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / (perMinute / 60))) };
}
