/**
 * Requests per minute per API key, as a token bucket: bursts up to the limit, refilled evenly.
 * In memory: one process serves one data dir, so there is nothing to share.
 */
import { ImageGenError } from '../../core/errors';

export type RateLimiter = (apiKeyId: string) => void;

interface Bucket {
	tokens: number;
	updatedAt: number;
}

export function createRateLimiter(perMinute: number, now: () => number = Date.now): RateLimiter {
	if (perMinute <= 0) return () => undefined;
	const buckets = new Map<string, Bucket>();
	const refillPerMs = perMinute / 60_000;
	return (apiKeyId) => {
		const time = now();
		const bucket = buckets.get(apiKeyId) ?? { tokens: perMinute, updatedAt: time };
		bucket.tokens = Math.min(perMinute, bucket.tokens + (time - bucket.updatedAt) * refillPerMs);
		bucket.updatedAt = time;
		buckets.set(apiKeyId, bucket);
		if (bucket.tokens < 1) {
			const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));
			throw new ImageGenError(429, `Rate limit of ${perMinute} requests per minute reached for this API key; retry in ${retryAfterSeconds} s`, {
				retryAfterSeconds,
			});
		}
		bucket.tokens -= 1;
	};
}
