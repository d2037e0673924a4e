/** The in-memory token buckets: peek without taking, and forgetting only buckets that have refilled. */
import { MemoryRateLimiter } from '../../../server/src/limits/memory-rate-limiter';

describe('MemoryRateLimiter', () => {
	it('peek answers what a take would, without taking', async () => {
		let now = 0;
		const limiter = new MemoryRateLimiter(2, () => now);
		expect(await limiter.peek('a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		expect((await limiter.take('a')).allowed).toBe(true);
		expect((await limiter.take('a')).allowed).toBe(true);
		for (let look = 0; look < 3; look++) expect(await limiter.peek('a')).toEqual({ allowed: false, retryAfterSeconds: 30 });
		now += 30_000;
		expect(await limiter.peek('a')).toEqual({ allowed: true, retryAfterSeconds: 0 });
		expect((await limiter.take('a')).allowed).toBe(true);
		expect((await limiter.peek('a')).allowed).toBe(false);
	});

	it('many client addresses: refilled buckets are forgotten, emptied ones are kept', async () => {
		let now = 0;
		const limiter = new MemoryRateLimiter(1, () => now);
		for (let address = 0; address < 12_000; address++) await limiter.take(`client-${address}`);
		now += 59_000;
		expect((await limiter.take('recent')).allowed).toBe(true);
		now += 1_000;
		// The first 12,000 have refilled: a sweep may drop them; "recent" is still empty and stays so.
		for (let address = 0; address < 12_000; address++) await limiter.take(`later-${address}`);
		expect(await limiter.peek('recent')).toEqual({ allowed: false, retryAfterSeconds: 59 });
		expect((await limiter.take('client-5')).allowed).toBe(true);
		expect((await limiter.take('later-5')).allowed).toBe(false);
	});
});
