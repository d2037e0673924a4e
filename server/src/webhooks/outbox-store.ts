/**
 * Where webhook deliveries wait and the service secret lives: the data dir's SQLite database
 * (sqlite-outbox-store.ts) or PostgreSQL for a fleet (pg-outbox-store.ts). Both pass
 * test/server/support/outbox-store-contract.ts.
 *
 * A delivery is enqueued in one write and then belongs to whichever process claims it when due: a
 * claim moves its next attempt past the lease and stamps a token, so no other process takes it
 * while it is being sent; a process that dies mid-send leaves it to be claimed again once the lease
 * ends (at least once: the receiver may see it twice). Only the holder of the latest claim may
 * finish, retry or give it up. Times are Unix milliseconds of the caller's clock.
 */

export interface NewDelivery {
	/** The `webhook-id`: the same on every attempt. */
	id: string;
	url: string;
	/** The API key whose derived secret signs it; null: sent unsigned (operator alerts). */
	signingKeyId: string | null;
	/** The exact bytes sent on every attempt. */
	body: string;
	/** `generation.succeeded`, `budget.threshold`, …: for logs, never sent on its own. */
	eventType: string;
}

export interface ClaimedDelivery extends NewDelivery {
	/** Attempts made before this one. */
	attempts: number;
	createdAt: number;
	/** Proves the claim is still this process's when the attempt ends. */
	claimToken: string;
}

export interface BudgetAlertMark {
	keyId: string;
	/** Names the budget period (`day:2026-11-25`, `month:2026-11`, `total`). */
	period: string;
	kind: 'threshold' | 'exhausted';
}

export interface OutboxStore {
	enqueue(delivery: NewDelivery, now: number): Promise<void>;
	/**
	 * Records the alert and enqueues its delivery in one write, unless it was recorded before (by
	 * any process); answers whether it was enqueued now.
	 */
	enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean>;
	/** Up to `limit` pending deliveries due at `now`, each claimed until `now + leaseMs`. */
	claimDue(now: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]>;
	/** Received: the row goes. False when the claim was no longer this one's. */
	delivered(claim: ClaimedDelivery): Promise<boolean>;
	/** Failed this time: tried again at `at` (the attempt counted). */
	retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean>;
	/** Failed for good: kept as `failed` for the operator until swept. */
	giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean>;
	/** Deletes deliveries given up before `before`; answers how many. */
	sweepFailed(before: number): Promise<number>;
	/** The named secret, made from `create` by whichever caller comes first; every caller gets that one. */
	serviceSecret(name: string, create: () => Buffer): Promise<Buffer>;
	close?(): Promise<void>;
}

/** A delivery's row as both engines read it (PostgreSQL answers a bigint as text). */
export interface DeliveryRow {
	id: string;
	url: string;
	signing_key_id: string | null;
	body: string;
	event_type: string;
	created_at: number | string;
	attempts: number;
}

export function claimedDelivery(row: DeliveryRow, claimToken: string): ClaimedDelivery {
	return {
		id: row.id,
		url: row.url,
		signingKeyId: row.signing_key_id,
		body: row.body,
		eventType: row.event_type,
		createdAt: Number(row.created_at),
		attempts: row.attempts,
		claimToken,
	};
}

/** An error text short enough for a row and a log line. */
export function shortError(text: string): string {
	return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
