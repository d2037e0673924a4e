/**
 * Requests per minute per API key for the whole fleet: one token bucket per key in PostgreSQL, in
 * the table and with the statements the data dir's limiter uses (bucket-rows.ts). Each `take` is a
 * single upsert: PostgreSQL locks the key's row for the statement, so concurrent takes from any
 * number of replicas are applied one after another and together admit at most the limit.
 */
import type { Pool } from 'pg';
import { BUCKET_SQL, BucketRateLimiter, FORGET_BATCH } from './bucket-rows';

interface PgRateLimiterOptions {
	/**
	 * The time of a take. Defaults to the database's clock, the one clock every replica shares;
	 * tests fix it to count exactly.
	 */
	now?: () => Date;
}

export class PgRateLimiter extends BucketRateLimiter {
	constructor(
		private readonly pool: Pool,
		perMinute: number,
		private readonly options: PgRateLimiterOptions = {},
	) {
		super(perMinute);
	}

	async forgetIdle(now: number | null): Promise<number> {
		for (let removed = 0; ; ) {
			const { rowCount } = await this.pool.query(BUCKET_SQL.forgetIdle, [now, FORGET_BATCH]);
			removed += rowCount ?? 0;
			if (rowCount !== FORGET_BATCH) return removed;
		}
	}

	protected time(): number | null {
		return this.options.now?.().getTime() ?? null;
	}

	protected async row<Row>(sql: string, values: unknown[]): Promise<Row | undefined> {
		return (await this.pool.query(sql, values)).rows[0] as Row | undefined;
	}
}
