/**
 * Requests per minute per API key. In memory for one process; in PostgreSQL for a fleet, where
 * N replicas together admit at most the configured rate.
 */
export interface RateDecision {
	allowed: boolean;
	/** When refused: seconds until a request would be admitted. */
	retryAfterSeconds: number;
}

export interface RateLimiter {
	readonly perMinute: number;
	take(apiKeyId: string): Promise<RateDecision>;
	close?(): Promise<void>;
}
