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
	private readonly refillPerMs: number;

	/** `perMinute` 0 admits everything. */
	constructor(
		readonly perMinute: number,
		private readonly now: () => number = Date.now,
	) {
		this.refillPerMs = perMinute / 60_000;
	}

	async take(apiKeyId: string): Promise<RateDecision> {
		if (this.perMinute <= 0) return { allowed: true, retryAfterSeconds: 0 };
		const time = this.now();
		const bucket = this.buckets.get(apiKeyId) ?? { tokens: this.perMinute, updatedAt: time };
		bucket.tokens = Math.min(this.perMinute, bucket.tokens + (time - bucket.updatedAt) * this.refillPerMs);
		bucket.updatedAt = time;
		this.buckets.set(apiKeyId, bucket);
		if (bucket.tokens < 1) {
			return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.refillPerMs / 1000)) };
		}
		bucket.tokens -= 1;
		return { allowed: true, retryAfterSeconds: 0 };
	}
}
