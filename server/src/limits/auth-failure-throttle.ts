/**
 * Failed authentication per client address. A wrong key takes a token from the client's bucket and
 * is answered 401 only if there was one; otherwise 429. A right key is answered only if the
 * client's bucket is not empty; otherwise 429 too, so a client that has used up its failures
 * cannot tell a right guess from a wrong one, and guessing stops paying. Both are judged after the
 * key was looked at, so a burst of concurrent guesses is answered by the same atomic count: at
 * most the allowance of them learn anything. Other clients keep their own buckets, so a flood of
 * wrong keys from one address never locks the right key out elsewhere. Buckets live in the
 * service's rate limiter: in the data dir's database for every process on it, or in PostgreSQL
 * for the whole fleet.
 */
import { ImageGenError } from '../../../core/errors';
import type { Authenticator, Principal } from '../keys/authenticate';
import type { RateLimiter } from './rate-limiter';

/** Beside API key ids (16 hex characters, `key_…`) in the same table, never equal to one. */
const BUCKET_PREFIX = 'auth-failures:';

export class AuthFailureThrottle {
	/** `perMinute` 0: never throttled. */
	constructor(
		private readonly limiter: RateLimiter,
		private readonly perMinute: number,
		/** Whether an authentication error is a key that matched nothing (what guessing gets). */
		private readonly isWrongKey: (error: unknown) => boolean,
	) {}

	/** `authenticate`, answering by the client's failure count (request.ip: see --trust-proxy). */
	guard(authenticate: Authenticator): Authenticator {
		if (this.perMinute === 0) return authenticate;
		return async (request) => {
			const bucket = BUCKET_PREFIX + request.ip;
			let principal: Principal;
			try {
				principal = await authenticate(request);
			} catch (error) {
				if (this.isWrongKey(error)) {
					const decision = await this.limiter.take(bucket, this.perMinute);
					if (!decision.allowed) throw throttled(decision.retryAfterSeconds);
				}
				throw error;
			}
			const decision = await this.limiter.peek(bucket, this.perMinute);
			if (!decision.allowed) throw throttled(decision.retryAfterSeconds);
			return principal;
		};
	}
}

function throttled(retryAfterSeconds: number): ImageGenError {
	return new ImageGenError(429, `Too many requests with a wrong key from this address; retry in ${retryAfterSeconds} s`, {
		code: 'too_many_failed_authentications',
		retryAfterSeconds,
	});
}
