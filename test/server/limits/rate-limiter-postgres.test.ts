/**
 * One rate limit for the fleet: the contract on PostgreSQL, and three limiters (three replicas, each
 * with its own pool) on one database admit together at most the configured requests per minute per key.
 */
import { SqlRateLimiter } from '../../../server/src/limits/sql-rate-limiter';
import type { RateDecision } from '../../../server/src/limits/rate-limiter';
import { useDatabasePerTest } from '../support/postgres';
import { describeRateLimiterContract } from '../support/rate-limiter-contract';

const database = useDatabasePerTest();

describeRateLimiterContract('PostgreSQL', async (perMinute, now) => {
	const [replica] = await database.replicas(1);
	return new SqlRateLimiter(replica!, perMinute, { now });
});

async function fleet(replicas: number, perMinute: number, now?: () => Date): Promise<SqlRateLimiter[]> {
	return (await database.replicas(replicas)).map((replica) => new SqlRateLimiter(replica, perMinute, now ? { now: () => now().getTime() } : {}));
}

/** `count` takes at once, spread over the replicas in turn. */
function burst(limiters: SqlRateLimiter[], count: number, key = 'key-a'): Promise<RateDecision[]> {
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

	it('peek writes no bucket', async () => {
		const [limiter] = await fleet(1, 2, () => new Date('2030-01-01T00:00:00Z'));
		expect(await limiter!.peek('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		const [replica] = await database.replicas(1);
		expect((await replica!.pool.query('SELECT * FROM rate_limit_buckets')).rows).toEqual([]);
	});

	it('forgets buckets that have long refilled, so many client addresses do not grow the table for ever', async () => {
		let now = new Date('2030-01-01T00:00:00Z');
		const [limiter] = await fleet(1, 2, () => now);
		for (let address = 0; address < 50; address++) await limiter!.take(`auth-failures:198.51.100.${address}`);
		now = new Date(now.getTime() + 9 * 60_000);
		await limiter!.take('key-recent');
		await limiter!.take('key-recent');
		now = new Date(now.getTime() + 30_000);
		expect((await limiter!.take('key-new')).allowed).toBe(true);
		// Forgetting runs in the background of a take.
		await limiter!.close();
		const [replica] = await database.replicas(1);
		const { rows } = await replica!.pool.query<{ bucket: string }>('SELECT bucket FROM rate_limit_buckets ORDER BY bucket');
		expect(rows.map((row) => row.bucket)).toEqual(['key-new', 'key-recent']);
		// What was forgotten was full anyway; what was kept still counts: emptied 30 s ago, one token back.
		expect(await limiter!.peek('auth-failures:198.51.100.7')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		expect((await limiter!.take('key-recent')).allowed).toBe(true);
		expect((await limiter!.take('key-recent')).allowed).toBe(false);
	});

	it('0 per minute writes no bucket', async () => {
		const limiters = await fleet(1, 0);
		expect(allowed(await burst(limiters, 100))).toBe(100);
		const [replica] = await database.replicas(1);
		const { rows } = await replica!.pool.query('SELECT * FROM rate_limit_buckets');
		expect(rows).toEqual([]);
	});
});
