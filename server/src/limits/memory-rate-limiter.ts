/**
 * Requests per minute per API key (or failed authentications per client address), as a token
 * bucket: bursts up to the limit, refilled evenly.
 * In memory, for one process alone (an embedded service, tests): the service itself keeps its
 * buckets in its database, which every process on the data dir or the fleet shares.
 */
import type { RateDecision, RateLimiter } from './rate-limiter';
import { ADMITTED, FULL_AFTER_MS, assertPerMinute, decide, refill, type TokenBucket } from './token-bucket';

const FIRST_PRUNE_AT = 10_000;

export class MemoryRateLimiter implements RateLimiter {
	private readonly buckets = new Map<string, TokenBucket>();
	/** Buckets are also kept per client address (failed authentication): many addresses must not grow the map for ever. */
	private pruneAt = FIRST_PRUNE_AT;

	/** `perMinute` 0 admits everything. */
	constructor(
		readonly perMinute: number,
		private readonly now: () => number = Date.now,
	) {
		assertPerMinute(perMinute);
	}

	async take(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
		const bucket = this.refilled(apiKeyId, perMinute);
		if (!this.buckets.has(apiKeyId) && this.buckets.size >= this.pruneAt) this.prune(bucket.updatedAt);
		this.buckets.set(apiKeyId, bucket);
		const decision = decide(bucket.tokens, perMinute);
		if (decision.allowed) bucket.tokens -= 1;
		return decision;
	}

	async peek(apiKeyId: string, perMinute: number = this.perMinute): Promise<RateDecision> {
		if (perMinute === 0) return ADMITTED;
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
	private refilled(apiKeyId: string, perMinute: number): TokenBucket {
		return refill(this.buckets.get(apiKeyId), perMinute, this.now());
	}
}
