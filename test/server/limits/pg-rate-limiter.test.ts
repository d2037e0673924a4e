/**
 * One rate limit for the fleet: three PgRateLimiters (three replicas, each with its own pool) on
 * one database admit together at most the configured requests per minute per key.
 */
import { PgRateLimiter } from '../../../server/src/limits/pg-rate-limiter';
import type { RateDecision } from '../../../server/src/limits/rate-limiter';
import { useDatabasePerTest } from '../support/postgres';

const database = useDatabasePerTest();

async function fleet(replicas: number, perMinute: number, now?: () => Date): Promise<PgRateLimiter[]> {
	return (await database.replicas(replicas)).map((replica) => new PgRateLimiter(replica.pool, perMinute, { now }));
}

/** `count` takes at once, spread over the replicas in turn. */
function burst(limiters: PgRateLimiter[], count: number, key = 'key-a'): Promise<RateDecision[]> {
	return Promise.all(Array.from({ length: count }, (_, index) => limiters[index % limiters.length]!.take(key)));
}

const allowed = (decisions: RateDecision[]) => decisions.filter((decision) => decision.allowed).length;

describe('PostgreSQL rate limiter', () => {
	it('three replicas taking 200 at once admit exactly 60 of a 60/min limit, then refill evenly', async () => {
		let now = new Date('2030-01-01T00:00:00Z');
		const limiters = await fleet(3, 60, () => now);
		const first = await burst(limiters, 200);
		expect(allowed(first)).toBe(60);
		for (const decision of first.filter((decision) => !decision.allowed)) expect(decision.retryAfterSeconds).toBe(1);

		now = new Date(now.getTime() + 1000);
		expect(allowed(await burst(limiters, 20))).toBe(1);
		now = new Date(now.getTime() + 30_000);
		expect(allowed(await burst(limiters, 50))).toBe(30);
		now = new Date(now.getTime() + 10 * 60_000);
		expect(allowed(await burst(limiters, 100))).toBe(60);
	});

	it('keys do not share a limit', async () => {
		const now = new Date('2030-01-01T00:00:00Z');
		const limiters = await fleet(2, 5, () => now);
		expect(allowed(await burst(limiters, 10, 'key-a'))).toBe(5);
		expect(allowed(await burst(limiters, 10, 'key-b'))).toBe(5);
		expect((await limiters[0]!.take('key-a')).allowed).toBe(false);
	});

	it('Retry-After says when the next token arrives', async () => {
		let now = new Date('2030-01-01T00:00:00Z');
		const [limiter] = await fleet(1, 6, () => now);
		expect(allowed(await burst([limiter!], 6))).toBe(6);
		expect(await limiter!.take('key-a')).toEqual({ allowed: false, retryAfterSeconds: 10 });
		now = new Date(now.getTime() + 4000);
		expect(await limiter!.take('key-a')).toEqual({ allowed: false, retryAfterSeconds: 6 });
		now = new Date(now.getTime() + 5500);
		expect(await limiter!.take('key-a')).toEqual({ allowed: false, retryAfterSeconds: 1 });
		now = new Date(now.getTime() + 500);
		expect(await limiter!.take('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
	});

	it('on the database clock, a burst is held to the limit plus what refilled while it ran', async () => {
		const limiters = await fleet(3, 60);
		const started = Date.now();
		const decisions = await burst(limiters, 200);
		const elapsedSeconds = (Date.now() - started) / 1000;
		expect(allowed(decisions)).toBeGreaterThanOrEqual(60);
		expect(allowed(decisions)).toBeLessThanOrEqual(60 + Math.ceil(elapsedSeconds));
		const refused = decisions.filter((decision) => !decision.allowed);
		expect(refused.length).toBeGreaterThan(0);
		for (const decision of refused) expect(decision.retryAfterSeconds).toBe(1);
	});

	it('peek answers what a take would, without taking or writing a bucket', async () => {
		let now = new Date('2030-01-01T00:00:00Z');
		const [limiter] = await fleet(1, 2, () => now);
		expect(await limiter!.peek('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		const [replica] = await database.replicas(1);
		expect((await replica!.pool.query('SELECT * FROM rate_limit_buckets')).rows).toEqual([]);
		expect(allowed(await burst([limiter!], 2))).toBe(2);
		for (let look = 0; look < 3; look++) expect(await limiter!.peek('key-a')).toEqual({ allowed: false, retryAfterSeconds: 30 });
		now = new Date(now.getTime() + 30_000);
		expect(await limiter!.peek('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		expect(await limiter!.take('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		expect((await limiter!.peek('key-a')).allowed).toBe(false);
	});

	it('forgets buckets that have long refilled, so many client addresses do not grow the table for ever', async () => {
		let now = new Date('2030-01-01T00:00:00Z');
		const [limiter] = await fleet(1, 2, () => now);
		for (let address = 0; address < 50; address++) await limiter!.take(`auth-failures:198.51.100.${address}`);
		now = new Date(now.getTime() + 9 * 60_000);
		await limiter!.take('key-recent');
		await limiter!.take('key-recent');
		now = new Date(now.getTime() + 2 * 60_000);
		expect((await limiter!.take('key-new')).allowed).toBe(true);
		const [replica] = await database.replicas(1);
		const { rows } = await replica!.pool.query<{ api_key_id: string }>('SELECT api_key_id FROM rate_limit_buckets ORDER BY api_key_id');
		expect(rows.map((row) => row.api_key_id)).toEqual(['key-new', 'key-recent']);
		// What was forgotten was full anyway; what was kept still counts.
		expect(await limiter!.peek('auth-failures:198.51.100.7')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		expect((await limiter!.take('key-recent')).allowed).toBe(true);
	});

	it('0 per minute means no limit; a negative or fractional limit is a programming error', async () => {
		const limiters = await fleet(1, 0);
		expect(allowed(await burst(limiters, 100))).toBe(100);
		const [replica] = await database.replicas(1);
		const { rows } = await replica!.pool.query('SELECT * FROM rate_limit_buckets');
		expect(rows).toEqual([]);
		expect(() => new PgRateLimiter(replica!.pool, -1)).toThrow(RangeError);
		expect(() => new PgRateLimiter(replica!.pool, 1.5)).toThrow(RangeError);
	});
});
