/**
 * What every RateLimiter must do, run against each engine (in memory, SQLite in the data dir,
 * PostgreSQL), so both databases give a key the same requests: a token bucket of `perMinute`,
 * refilled evenly, a Retry-After that says when the next token arrives, a key's own limit in place
 * of the default, a peek that takes nothing, and buckets that stay independent and full once idle.
 */
import type { RateDecision, RateLimiter } from '../../../server/src/limits/rate-limiter';

/** A limiter over fresh (empty) buckets, on the clock `now` (milliseconds) the suite moves. */
export type OpenRateLimiter = (perMinute: number, now: () => number) => Promise<RateLimiter>;

const START = Date.parse('2030-01-01T00:00:00Z');

/** `count` takes sent at once. */
function burst(limiter: RateLimiter, count: number, bucket = 'key-a', perMinute?: number): Promise<RateDecision[]> {
	return Promise.all(Array.from({ length: count }, () => limiter.take(bucket, perMinute)));
}

const allowed = (decisions: RateDecision[]) => decisions.filter((decision) => decision.allowed).length;

export function describeRateLimiterContract(name: string, open: OpenRateLimiter): void {
	describe(`rate limiter contract: ${name}`, () => {
		let now: number;
		const clock = () => now;
		beforeEach(() => {
			now = START;
		});

		it('a burst of 200 admits exactly 60 of a 60/min limit, then the bucket refills evenly', async () => {
			const limiter = await open(60, clock);
			const first = await burst(limiter, 200);
			expect(allowed(first)).toBe(60);
			for (const decision of first.filter((decision) => !decision.allowed)) expect(decision.retryAfterSeconds).toBe(1);
			now += 1000;
			expect(allowed(await burst(limiter, 20))).toBe(1);
			now += 30_000;
			expect(allowed(await burst(limiter, 50))).toBe(30);
			now += 10 * 60_000;
			expect(allowed(await burst(limiter, 100))).toBe(60);
		});

		it('keys do not share a limit', async () => {
			const limiter = await open(5, clock);
			expect(allowed(await burst(limiter, 10, 'key-a'))).toBe(5);
			expect(allowed(await burst(limiter, 10, 'key-b'))).toBe(5);
			expect((await limiter.take('key-a')).allowed).toBe(false);
		});

		it('Retry-After says when the next token arrives', async () => {
			const limiter = await open(6, clock);
			expect(allowed(await burst(limiter, 6))).toBe(6);
			expect(await limiter.take('key-a')).toEqual({ allowed: false, retryAfterSeconds: 10 });
			now += 4000;
			expect(await limiter.take('key-a')).toEqual({ allowed: false, retryAfterSeconds: 6 });
			now += 5500;
			expect(await limiter.take('key-a')).toEqual({ allowed: false, retryAfterSeconds: 1 });
			now += 500;
			expect(await limiter.take('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		});

		it("a key's own limit replaces the default", async () => {
			const limiter = await open(600, clock);
			expect(allowed(await burst(limiter, 10, 'managed', 2))).toBe(2);
			expect(await limiter.take('managed', 2)).toEqual({ allowed: false, retryAfterSeconds: 30 });
			expect(allowed(await burst(limiter, 10, 'flat'))).toBe(10);
		});

		it('peek answers what a take would, without taking', async () => {
			const limiter = await open(2, clock);
			expect(await limiter.peek('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
			expect(allowed(await burst(limiter, 2))).toBe(2);
			for (let look = 0; look < 3; look++) expect(await limiter.peek('key-a')).toEqual({ allowed: false, retryAfterSeconds: 30 });
			now += 30_000;
			expect(await limiter.peek('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
			expect(await limiter.take('key-a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
			expect((await limiter.peek('key-a')).allowed).toBe(false);
		});

		it('a bucket idle for long is full again, however many others came and went meanwhile', async () => {
			const limiter = await open(1, clock);
			for (let address = 0; address < 50; address++) await limiter.take(`auth-failures:198.51.100.${address}`);
			now += 11 * 60_000;
			for (let address = 0; address < 50; address++) expect((await limiter.take(`auth-failures:203.0.113.${address}`)).allowed).toBe(true);
			expect(await limiter.peek('auth-failures:198.51.100.7')).toEqual({ allowed: true, retryAfterSeconds: 0 });
			expect((await limiter.take('auth-failures:198.51.100.7')).allowed).toBe(true);
			expect((await limiter.take('auth-failures:203.0.113.7')).allowed).toBe(false);
		});

		it('0 per minute admits everything, as the default or as a key\'s own; a negative or fractional limit is a programming error', async () => {
			expect(allowed(await burst(await open(0, clock), 100))).toBe(100);
			expect(allowed(await burst(await open(5, clock), 100, 'unlimited', 0))).toBe(100);
			await expect(open(-1, clock)).rejects.toThrow(RangeError);
			await expect(open(1.5, clock)).rejects.toThrow(RangeError);
		});
	});
}
