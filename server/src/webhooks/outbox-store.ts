/**
 * Where webhook deliveries wait and the service secret lives (sql-outbox-store.ts, on the data
 * dir's SQLite database or on PostgreSQL for a fleet; test/server/support/outbox-store-contract.ts).
 *
 * A delivery is enqueued in one write and then belongs to whichever process claims it when due: a
 * claim holds it under a lease (db/lease.ts), its next attempt moved past the lease's end and the
 * claim's token stamped, so no other process takes it while it is being sent; a process that dies
 * mid-send leaves it to be claimed again once the lease ends (at least once: the receiver may see
 * it twice). Only the holder of the latest claim may finish, retry or give it up. Times are Unix
 * milliseconds of the caller's clock.
 */
import { Lease } from '../db/lease';
import type { SqlStatement } from '../db/sql-adapter';

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
	/** The receiver's host as `new URL(url).origin` gives it, stored at enqueue. */
	origin: string;
	/** Attempts made before this one. */
	attempts: number;
	createdAt: number;
	/** Proves the claim is still this process's when the attempt ends. */
	claimToken: string;
}

/** Whom an attempt is busy with: the receiving host and the key whose receivers it serves. */
export interface AttemptTarget {
	origin: string;
	signingKeyId: string | null;
}

/**
 * How many attempts one origin, and one key's receivers together, may have open at once, and the
 * attempts this process has open now: a claim takes no delivery that would pass either cap.
 */
export interface ReceiverCaps {
	perOrigin: number;
	perKey: number;
	busy: readonly AttemptTarget[];
}

export interface BudgetAlertMark {
	keyId: string;
	/** Names the budget period (`day:2026-11-25`, `month:2026-11`, `total`). */
	period: string;
	kind: 'threshold' | 'exhausted';
	/**
	 * The budget the alert is about: one the operator changed (raised after an alert, say) is
	 * alerted anew when it is passed, in the same period. Counted in whole micro-dollars.
	 */
	limitUsd: number;
}

export interface OutboxStore {
	/**
	 * Enqueues the delivery unless its key already has `maxPendingPerKey` pending (without it: in
	 * any case); answers whether it did. The count and the insert are one statement; replicas
	 * enqueueing for one key at the same instant on PostgreSQL may each pass the cap by one.
	 * Unsigned deliveries (operator alerts, once per key, period and kind) are never refused.
	 */
	enqueue(delivery: NewDelivery, now: number, maxPendingPerKey?: number): Promise<boolean>;
	/** `enqueue` as a statement of another store's write, in its transaction (a job's end). */
	enqueueStatement(delivery: NewDelivery, now: number, maxPendingPerKey: number): SqlStatement;
	/** Whether the delivery is pending (or being attempted): false once delivered, given up, or never enqueued. */
	isPending(id: string): Promise<boolean>;
	/** How many deliveries are pending (waiting, under an attempt or for a retry), whichever process enqueued them. */
	pendingCount(): Promise<number>;
	/**
	 * Records the alert and enqueues its delivery in one write, unless it was recorded before (by
	 * any process) for this key, period, kind and budget; answers whether it was enqueued now.
	 */
	enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean>;
	/**
	 * Up to `limit` pending deliveries due at `now`, each claimed until `now + leaseMs`, the longest
	 * due first; with `caps`, only those its origin and key have room for. A claim may take fewer
	 * than there is room for when one key's deliveries wait for a full origin (they rank ahead of
	 * its others); the next claim, which counts the full origin as busy, takes them.
	 */
	claimDue(now: number, limit: number, leaseMs: number, caps?: ReceiverCaps): Promise<ClaimedDelivery[]>;
	/** Received: the row goes. False when the claim was no longer this one's. */
	delivered(claim: ClaimedDelivery): Promise<boolean>;
	/** Failed this time: tried again at `at` (the attempt counted). */
	retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean>;
	/** Failed for good: kept as `failed` for the operator until swept. */
	giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean>;
	/** Deletes deliveries given up before `before`; answers how many. */
	sweepFailed(before: number): Promise<number>;
	/**
	 * Deletes pending deliveries enqueued before `createdBefore` that no attempt holds at `now`
	 * (past their retry window, whether they were retried or waited behind a hanging receiver);
	 * answers how many. One under way finishes as it will.
	 */
	sweepExpired(createdBefore: number, now: number): Promise<number>;
	/** The named secret, made from `create` by whichever caller comes first; every caller gets that one. */
	serviceSecret(name: string, create: () => Buffer): Promise<Buffer>;
	close?(): Promise<void>;
}

/** A delivery's row as both engines read it (PostgreSQL answers a bigint as text). */
export interface DeliveryRow {
	id: string;
	url: string;
	origin: string;
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
		origin: row.origin,
		signingKeyId: row.signing_key_id,
		body: row.body,
		eventType: row.event_type,
		createdAt: Number(row.created_at),
		attempts: row.attempts,
		claimToken,
	};
}

/** The columns a claim answers, as both engines name them. */
export const CLAIMED_COLUMNS = 'id, url, origin, signing_key_id, body, event_type, created_at, attempts';

/**
 * A pending delivery is the latest claim's (`claim_token`) until `next_attempt_at`: the time it is
 * due is also the end of its lease, so one that was never claimed, or whose holder stopped, is due.
 */
export const OUTBOX_LEASE = new Lease({ table: 'webhook_outbox', holder: 'claim_token', until: 'next_attempt_at', live: "state = 'pending'" });

/**
 * The statements both engines run as they are (numbered `$n` parameters). An attempt's outcome is
 * written only by the holder of the latest claim: `$1` the delivery's id, `$2` its claim token.
 */
export const OUTBOX_SQL = {
	/** Args: `deliveryValues`. */
	insert: 'INSERT INTO webhook_outbox (id, url, origin, signing_key_id, body, event_type, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)',
	/** Args: `deliveryValues`, then the most pending deliveries its key may have (the partial index of pending rows counts them). */
	insertCapped: `INSERT INTO webhook_outbox (id, url, origin, signing_key_id, body, event_type, created_at, next_attempt_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $7
		WHERE (SELECT count(*) FROM webhook_outbox WHERE state = 'pending' AND signing_key_id = $4) < CAST($8 AS INTEGER)`,
	isPending: "SELECT 1 AS pending FROM webhook_outbox WHERE id = $1 AND state = 'pending'",
	/** Counted from the partial index of pending rows, never the bodies. */
	pendingCount: "SELECT count(*) AS pending FROM webhook_outbox WHERE state = 'pending'",
	/** Args: `alertMarkValues`; the delivery is inserted after it only when the mark was new. */
	markAlert: 'INSERT INTO budget_alerts (key_id, period, kind, sent_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
	delivered: `DELETE FROM webhook_outbox WHERE ${OUTBOX_LEASE.heldBy('$1', '$2')}`,
	/** Args: id, claim token, when to try again, the error. */
	retry: `UPDATE webhook_outbox SET attempts = attempts + 1, next_attempt_at = $3, last_error = $4, claim_token = NULL WHERE ${OUTBOX_LEASE.heldBy('$1', '$2')}`,
	/** Args: id, claim token, now, the error. */
	giveUp: `UPDATE webhook_outbox SET attempts = attempts + 1, state = 'failed', finished_at = $3, last_error = $4, claim_token = NULL
		WHERE ${OUTBOX_LEASE.heldBy('$1', '$2')}`,
	/** Deliveries given up before `$1`: what a sweep deletes. */
	sweepable: "state = 'failed' AND finished_at < $1",
	/** Pending deliveries enqueued before `$1` and not held by an attempt at `$2` (a retry's pause holds none). */
	expired: `state = 'pending' AND created_at < $1 AND (claim_token IS NULL OR ${OUTBOX_LEASE.unheld('$2')})`,
	readSecret: 'SELECT secret FROM service_secrets WHERE name = $1',
	writeSecret: 'INSERT INTO service_secrets (name, secret) VALUES ($1, $2) ON CONFLICT DO NOTHING',
};

/** The values of `OUTBOX_SQL.insert`, in its order. */
export function deliveryValues(delivery: NewDelivery, now: number): unknown[] {
	return [delivery.id, delivery.url, originOf(delivery.url), delivery.signingKeyId, delivery.body, delivery.eventType, now];
}

/**
 * The values of `OUTBOX_SQL.markAlert`. The budget is kept in the period's column (the table's key
 * is key, period and kind), as whole micro-dollars so that 0.1 + 0.2 and 0.3 are one budget.
 */
export function alertMarkValues(mark: BudgetAlertMark, now: number): unknown[] {
	return [mark.keyId, `${mark.period} budget:${Math.round(mark.limitUsd * 1e6)}`, mark.kind, now];
}

/** A receiver's host, what the per-origin cap counts by (`https://hooks.example:8443`). */
export function originOf(url: string): string {
	return new URL(url).origin;
}

/** The claim's parameters for the SQL: the caps (unbounded without them) and the busy targets as JSON. */
export function capParameters(caps: ReceiverCaps | undefined, limit: number): { perOrigin: number; perKey: number; busy: string } {
	const busy = (caps?.busy ?? []).map((target) => ({ origin: target.origin, key: target.signingKeyId }));
	return { perOrigin: caps?.perOrigin ?? limit, perKey: caps?.perKey ?? limit, busy: JSON.stringify(busy) };
}

/**
 * The ids a claim takes, the longest due first, as one query both engines run; its parameters are
 * `$1` now, `$2` the per-origin cap, `$3` the per-key cap, `$4` how many at most, and `busy` a
 * select of the process's open attempts as (`origin`, `key`). A delivery goes only where its origin and its key
 * both have room: it is ranked within its origin among the deliveries whose key has room, and
 * within its key among those whose origin has room, so a key that is full never takes an origin's
 * room from another key, nor a full origin a key's.
 */
export function eligibleDeliveries(busy: string): string {
	// Deliveries of a full origin or key are passed over before ranking, so the sort covers only
	// what may go (a receiver that hangs at its cap with thousands due costs a scan of the index).
	return `WITH parameters AS MATERIALIZED (
			SELECT CAST($1 AS BIGINT) AS due_at, CAST($2 AS INTEGER) AS per_origin, CAST($3 AS INTEGER) AS per_key, CAST($4 AS INTEGER) AS claim_limit
		),
		busy AS MATERIALIZED (${busy}),
		origin_busy AS MATERIALIZED (SELECT origin, count(*) AS open FROM busy GROUP BY origin),
		key_busy AS MATERIALIZED (SELECT key, count(*) AS open FROM busy GROUP BY key),
		due AS (
			SELECT delivery.id, delivery.origin, delivery.signing_key_id, delivery.next_attempt_at, delivery.created_at,
				coalesce(origin_busy.open, 0) AS origin_busy, coalesce(key_busy.open, 0) AS key_busy
			FROM parameters
				JOIN webhook_outbox AS delivery ON delivery.state = 'pending' AND delivery.next_attempt_at <= parameters.due_at
				LEFT JOIN origin_busy ON origin_busy.origin = delivery.origin
				LEFT JOIN key_busy ON key_busy.key IS NOT DISTINCT FROM delivery.signing_key_id
			WHERE coalesce(origin_busy.open, 0) < parameters.per_origin AND coalesce(key_busy.open, 0) < parameters.per_key
		),
		ranked AS (
			SELECT due.*,
				row_number() OVER (PARTITION BY origin ORDER BY next_attempt_at, created_at, id) AS origin_nth,
				row_number() OVER (PARTITION BY signing_key_id ORDER BY next_attempt_at, created_at, id) AS key_nth
			FROM due
		)
		SELECT ranked.id FROM ranked, parameters
		WHERE origin_busy + origin_nth <= per_origin AND key_busy + key_nth <= per_key
		ORDER BY next_attempt_at, created_at, id LIMIT (SELECT claim_limit FROM parameters)`;
}

/** An error text short enough for a row and a log line. */
export function shortError(text: string): string {
	return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}
