/** The in-memory token buckets: the contract, and forgetting only buckets that have refilled. */
import { MemoryRateLimiter } from '../../../server/src/limits/memory-rate-limiter';
import { describeRateLimiterContract } from '../support/rate-limiter-contract';

describeRateLimiterContract('in memory', async (perMinute, now) => new MemoryRateLimiter(perMinute, now));

describe('MemoryRateLimiter', () => {
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
