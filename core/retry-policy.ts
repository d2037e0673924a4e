/** When and how long to wait before repeating a request that was refused for now: shared by the nodes (calling the service) and the service (calling model hosts). */

export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/**
 * Never repeated, whatever else says so: a spent budget (402) and a refused key or model (401,
 * 403) stay refused until an operator acts or the budget period resets, and every repeat of a
 * 402 would only add load to a service that has already said no.
 */
export const FINAL_STATUSES: ReadonlySet<number> = new Set([401, 402, 403]);

export interface RetryPolicy {
	/** Repeats after the first attempt; 0 disables retrying. */
	maxRetries: number;
	baseDelayMs: number;
	maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 3, baseDelayMs: 1_000, maxDelayMs: 30_000 };

/**
 * `Retry-After` is either delta-seconds or an HTTP date. Answers milliseconds, or undefined when
 * the header is absent or unreadable.
 */
export function parseRetryAfter(header: unknown, now: number = Date.now()): number | undefined {
	const value = Array.isArray(header) ? header[0] : header;
	if (typeof value !== 'string' && typeof value !== 'number') return undefined;
	const text = String(value).trim();
	if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
	const date = Date.parse(text);
	return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The wait before retry number `attempt` (1-based): what the service asked for when it said, else
 * exponential backoff with equal jitter: half the exponential step fixed, the other half random.
 * Equal rather than full jitter because full jitter may retry almost at once, against a host
 * that has just said it is overloaded; the random half still spreads clients apart. Capped
 * either way so a node never stalls for minutes.
 */
export function retryDelayMs(
	attempt: number,
	retryAfterMs: number | undefined,
	policy: RetryPolicy,
	random: () => number = Math.random,
): number {
	if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxDelayMs);
	const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
	return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * A 409 is retried only for `idempotency_in_progress`: the same request is still running on the
 * service, and repeating it after `Retry-After` gets its answer. Any other conflict stays an error.
 */
export const IDEMPOTENCY_IN_PROGRESS = 'idempotency_in_progress';

/** `errorCode`: the `error.code` of the service's answer, when there is one. */
export function shouldRetry(status: number, attempt: number, policy: RetryPolicy, errorCode?: string): boolean {
	if (attempt > policy.maxRetries) return false;
	if (FINAL_STATUSES.has(status)) return false;
	return RETRYABLE_STATUSES.has(status) || (status === 409 && errorCode === IDEMPOTENCY_IN_PROGRESS);
}

/** `error.code` of an error answer in the service's shape, if it is one. */
export function errorCodeOf(body: unknown): string | undefined {
	const code = (body as { error?: { code?: unknown } } | null | undefined)?.error?.code;
	return typeof code === 'string' ? code : undefined;
}
