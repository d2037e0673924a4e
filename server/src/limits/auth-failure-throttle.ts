/**
 * Failed authentication per client address: each wrong key a client sends takes a token from its
 * bucket, and a client whose bucket is empty is refused with a 429 before its key is even looked
 * at, the right key included, so guessing cannot go on behind the 429s. Other clients keep their
 * own buckets, so a flood of wrong keys from one address never locks the right key out elsewhere.
 * Buckets live in the service's rate limiter: in memory, or in PostgreSQL for the whole fleet.
 */
import { ImageGenError } from '../../../core/errors';
import type { RateLimiter } from './rate-limiter';

/** Beside API key ids (16 hex characters, `key_…`) in the same table, never equal to one. */
const BUCKET_PREFIX = 'auth-failures:';

export class AuthFailureThrottle {
	/** `perMinute` 0: never throttled. */
	constructor(
		private readonly limiter: RateLimiter,
		private readonly perMinute: number,
	) {}

	/** Refuses a client that has used up its failures. */
	async admit(clientAddress: string): Promise<void> {
		if (this.perMinute === 0) return;
		const decision = await this.limiter.peek(BUCKET_PREFIX + clientAddress, this.perMinute);
		if (!decision.allowed) throw throttled(decision.retryAfterSeconds);
	}

	/** Counts one failure of the client. */
	async failed(clientAddress: string): Promise<void> {
		if (this.perMinute === 0) return;
		await this.limiter.take(BUCKET_PREFIX + clientAddress, this.perMinute);
	}
}

function throttled(retryAfterSeconds: number): ImageGenError {
	return new ImageGenError(429, `Too many requests with a wrong key from this address; retry in ${retryAfterSeconds} s`, {
		code: 'too_many_failed_authentications',
		retryAfterSeconds,
	});
}
