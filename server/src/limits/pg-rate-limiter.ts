/**
 * Requests per minute per API key for the whole fleet: one token bucket per key in PostgreSQL, in
 * the table and with the statements the data dir's limiter uses (bucket-rows.ts). Each `take` is a
 * single upsert: PostgreSQL locks the key's row for the statement, so concurrent takes from any
 * number of replicas are applied one after another and together admit at most the limit.
 */
import type { Pool } from 'pg';
import { BUCKET_SQL, FORGET_BATCH, peekDecision, takeDecision } from './bucket-rows';
import type { RateDecision, RateLimiter } from './rate-limiter';
import { ADMITTED, assertPerMinute } from './token-bucket';

export interface PgRateLimiterOptions {
	/**
	 * The time of a take. Defaults to the database's clock, the one clock every replica shares;
	 * tests fix it to count exactly.
	 */
	now?: () => Date;
}

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
		if (perMinute === 0) return ADMITTED;
		await this.forgetIdleBuckets();
		const { rows } = await this.pool.query<{ tokens: number; allowed: boolean }>(BUCKET_SQL.take, [apiKeyId, perMinute, this.time()]);
		return takeDecision(rows[0]!, perMinute);
	}

	/** At most once a minute per replica; every replica doing it is harmless (the rows are full). */
	private async forgetIdleBuckets(): Promise<void> {
		const time = this.options.now?.().getTime() ?? Date.now();
		if (time - this.lastForgotAt < FORGET_EVERY_MS) return;
		this.lastForgotAt = time;
		while ((await this.pool.query(BUCKET_SQL.forgetIdle, [this.time(), FORGET_BATCH])).rowCount === FORGET_BATCH);
	}

	async peek(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		const { rows } = await this.pool.query<{ tokens: number }>(BUCKET_SQL.peek, [apiKeyId, perMinute, this.time()]);
		return peekDecision(rows[0], perMinute);
	}

	/** The fixed time in unix milliseconds, or null for the database's clock. */
	private time(): number | null {
		return this.options.now?.().getTime() ?? null;
	}
}
