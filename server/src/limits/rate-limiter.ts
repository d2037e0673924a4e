/**
 * Requests per minute per API key (and failed authentications per client address: any bucket
 * name). In the data dir's SQLite database for every process on the data dir, in PostgreSQL for
 * a fleet: N processes together admit at most the configured rate. In memory for one process alone.
 */
export interface RateDecision {
	allowed: boolean;
	/** When refused: seconds until a request would be admitted. */
	retryAfterSeconds: number;
}

export interface RateLimiter {
	readonly perMinute: number;
	/** `perMinute`: this key's own limit (a managed key's), instead of the service's default. */
	take(apiKeyId: string, perMinute?: number): Promise<RateDecision>;
	/** What `take` would answer now, without taking anything (and without creating a bucket). */
	peek(apiKeyId: string, perMinute?: number): Promise<RateDecision>;
	close?(): Promise<void>;
}
