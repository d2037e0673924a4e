/**
 * Requests per minute per API key (or failed authentications per client address), as a token
 * bucket: bursts up to the limit, refilled evenly.
 * In memory: one process serves one data dir, so there is nothing to share.
 */
import type { RateDecision, RateLimiter } from './rate-limiter';

interface Bucket {
	tokens: number;
	updatedAt: number;
}

/** A bucket untouched this long has refilled completely: forgetting it changes nothing. */
const FULL_AFTER_MS = 60_000;
const FIRST_PRUNE_AT = 10_000;

export class MemoryRateLimiter implements RateLimiter {
	private readonly buckets = new Map<string, Bucket>();
	/** Buckets are also kept per client address (failed authentication): many addresses must not grow the map for ever. */
	private pruneAt = FIRST_PRUNE_AT;

	/** `perMinute` 0 admits everything. */
	constructor(
		readonly perMinute: number,
		private readonly now: () => number = Date.now,
	) {}

	async take(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute <= 0) return { allowed: true, retryAfterSeconds: 0 };
		const bucket = this.refilled(apiKeyId, perMinute);
		if (!this.buckets.has(apiKeyId) && this.buckets.size >= this.pruneAt) this.prune(bucket.updatedAt);
		this.buckets.set(apiKeyId, bucket);
		const decision = decide(bucket.tokens, perMinute);
		if (decision.allowed) bucket.tokens -= 1;
		return decision;
	}

	async peek(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute <= 0) return { allowed: true, retryAfterSeconds: 0 };
		return decide(this.refilled(apiKeyId, perMinute).tokens, perMinute);
	}

	private prune(now: number): void {
		for (const [id, bucket] of this.buckets) {
			if (now - bucket.updatedAt >= FULL_AFTER_MS) this.buckets.delete(id);
		}
		// Doubling keeps the sweeps rare while every bucket is fresh.
		this.pruneAt = Math.max(FIRST_PRUNE_AT, this.buckets.size * 2);
	}

	/** The key's bucket as of now (a full one for a key never seen), not stored. */
	private refilled(apiKeyId: string, perMinute: number): Bucket {
		const time = this.now();
		const bucket = this.buckets.get(apiKeyId) ?? { tokens: perMinute, updatedAt: time };
		return { tokens: Math.min(perMinute, bucket.tokens + (time - bucket.updatedAt) * (perMinute / 60_000)), updatedAt: time };
	}
}

function decide(tokens: number, perMinute: number): RateDecision {
	if (tokens >= 1) return { allowed: true, retryAfterSeconds: 0 };
	return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / (perMinute / 60_000) / 1000)) };
}
