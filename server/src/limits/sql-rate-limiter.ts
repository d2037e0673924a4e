/**
 * Requests per minute per API key (and failed authentications per client address: any bucket
 * name) in the service's database, one token bucket per name (bucket-rows.ts): the data dir's
 * SQLite for every process on it, PostgreSQL for the fleet. Each `take` is one upsert, applied
 * under the row's lock (PostgreSQL) or the database's write lock (SQLite), so takes from any
 * number of processes or replicas are applied one after another and together admit at most the limit.
 *
 * A bucket is no billing record: a take is not synced on its own (a power cut may give a key back
 * a few requests), which keeps it off the disk's sync on every request (SQLite; PostgreSQL
 * syncs every commit).
 *
 * Clock: the `now` option (tests fix it to count exactly), else the database's.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Changes, SqlAdapter } from '../db/sql-adapter';
import { bucketStatements, FORGET_BATCH } from './bucket-rows';
import type { RateDecision, RateLimiter } from './rate-limiter';
import { ADMITTED, assertPerMinute, decide } from './token-bucket';

/** Idle buckets are looked for at most this often per process; every process doing it is harmless. */
const FORGET_EVERY_MS = 60_000;

interface SqlRateLimiterOptions {
	/** The time of a take in unix milliseconds; else the database's clock. */
	now?: () => number;
}

export class SqlRateLimiter implements RateLimiter {
	private readonly sql: ReturnType<typeof bucketStatements>;
	private lastForgotAt = -Infinity;
	private forgetting: Promise<unknown> | null = null;

	constructor(
		private readonly adapter: SqlAdapter,
		readonly perMinute: number,
		private readonly options: SqlRateLimiterOptions = {},
	) {
		assertPerMinute(perMinute);
		this.sql = bucketStatements(adapter.dialect);
	}

	async take(bucket: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		// 0 means no limit, as for the in-memory limiter.
		if (perMinute === 0) return ADMITTED;
		const time = this.time();
		this.forgetIdleNowAndThen(time);
		const row = await this.adapter.write<{ tokens: number; allowed: boolean | number }>(
			[{ sql: this.sql.take, values: [bucket, perMinute, time], returns: 'row' }],
			{ durable: false },
		);
		// PostgreSQL answers a boolean, SQLite 0 or 1.
		return row.allowed ? ADMITTED : decide(row.tokens, perMinute);
	}

	/** One read, no lock and no row written: a bucket never taken from is full. */
	async peek(bucket: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		const row = await this.adapter.one<{ tokens: number }>(this.sql.peek, [bucket, perMinute, this.time()]);
		return decide(row?.tokens ?? perMinute, perMinute);
	}

	/**
	 * Deletes the buckets untouched for a minute at `now` (full again, so no decision changes), in
	 * batches of `FORGET_BATCH`, each its own short transaction, then gives the engine their space
	 * back. Answers how many went. Buckets per client address would otherwise pile up for ever.
	 */
	async forgetIdle(now: number | null = this.time()): Promise<number> {
		let removed = 0;
		for (;;) {
			const { changes } = await this.adapter.write<Changes>([{ sql: this.sql.forgetIdle, values: [now, FORGET_BATCH] }], { durable: false });
			removed += changes;
			if (changes < FORGET_BATCH) break;
			await nextTurn();
		}
		if (removed > 0) await this.adapter.reclaimSpace();
		return removed;
	}

	/** Waits for a forgetting under way, so the database can be closed after. */
	async close(): Promise<void> {
		await this.forgetting;
	}

	/** The time of a statement in unix milliseconds, or null for the database's clock. */
	private time(): number | null {
		return this.options.now?.() ?? null;
	}

	/** At most once a minute per process, in the background of a take: the request that starts it does not wait for it. */
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
