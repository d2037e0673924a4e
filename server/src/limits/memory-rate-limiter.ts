/**
 * Requests per minute per API key, as a token bucket: bursts up to the limit, refilled evenly.
 * In memory: one process serves one data dir, so there is nothing to share.
 */
import type { RateDecision, RateLimiter } from './rate-limiter';

interface Bucket {
	tokens: number;
	updatedAt: number;
}

export class MemoryRateLimiter implements RateLimiter {
	private readonly buckets = new Map<string, Bucket>();

	/** `perMinute` 0 admits everything. */
	constructor(
		readonly perMinute: number,
		private readonly now: () => number = Date.now,
	) {}

	async take(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute <= 0) return { allowed: true, retryAfterSeconds: 0 };
		const refillPerMs = perMinute / 60_000;
		const time = this.now();
		const bucket = this.buckets.get(apiKeyId) ?? { tokens: perMinute, updatedAt: time };
		bucket.tokens = Math.min(perMinute, bucket.tokens + (time - bucket.updatedAt) * refillPerMs);
		bucket.updatedAt = time;
		this.buckets.set(apiKeyId, bucket);
		if (bucket.tokens < 1) {
			return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000)) };
		}
		bucket.tokens -= 1;
		return { allowed: true, retryAfterSeconds: 0 };
	}
}
