/**
 * The token bucket every rate limiter keeps (in memory, in the data dir, in PostgreSQL): up to
 * `perMinute` tokens, refilled evenly at `perMinute` a minute, one taken per admitted request.
 */
import type { RateDecision } from './rate-limiter';

export interface TokenBucket {
	tokens: number;
	/** Milliseconds since the epoch. */
	updatedAt: number;
}

/** An empty bucket is full again after a minute, whatever its limit: forgetting it then changes nothing. */
export const FULL_AFTER_MS = 60_000;

export const ADMITTED: RateDecision = Object.freeze({ allowed: true, retryAfterSeconds: 0 });

/** 0 admits everything; anything but a whole number of at least 0 is a programming error. */
export function assertPerMinute(perMinute: number): void {
	if (!Number.isSafeInteger(perMinute) || perMinute < 0) throw new RangeError(`perMinute must be a non-negative integer; got ${perMinute}`);
}

/**
 * `bucket` as of `now` (a full one when there is none). Its time never goes backwards, so a take
 * that read the clock before another process's later one refills nothing twice.
 */
export function refill(bucket: TokenBucket | undefined, perMinute: number, now: number): TokenBucket {
	if (!bucket) return { tokens: perMinute, updatedAt: now };
	const elapsed = Math.max(0, now - bucket.updatedAt);
	return { tokens: Math.min(perMinute, bucket.tokens + elapsed * (perMinute / 60_000)), updatedAt: Math.max(bucket.updatedAt, now) };
}

/** Admitted with a whole token left; otherwise the seconds until the next one arrives. */
export function decide(tokens: number, perMinute: number): RateDecision {
	if (tokens >= 1) return ADMITTED;
	return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / (perMinute / 60_000) / 1000)) };
}
