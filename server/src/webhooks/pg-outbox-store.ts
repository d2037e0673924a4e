/**
 * The webhook outbox in PostgreSQL, shared by every replica. A claim is one statement that locks
 * the due rows it takes (`FOR UPDATE SKIP LOCKED`), so replicas claiming at once split the due
 * deliveries between them instead of sending one twice.
 */
import type { Pool } from 'pg';
import { claimedDelivery, type BudgetAlertMark, type ClaimedDelivery, type DeliveryRow, type NewDelivery, type OutboxStore } from './outbox-store';

const INSERT = 'INSERT INTO webhook_outbox (id, url, signing_key_id, body, event_type, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, $6)';

/** The alert's mark and its delivery in one statement: the delivery is inserted only if the mark was. */
const ENQUEUE_ALERT = `
	WITH marked AS (
		INSERT INTO budget_alerts (key_id, period, kind, sent_at) VALUES ($7, $8, $9, $6) ON CONFLICT DO NOTHING RETURNING 1
	)
	INSERT INTO webhook_outbox (id, url, signing_key_id, body, event_type, created_at, next_attempt_at)
	SELECT $1, $2, $3, $4, $5, $6, $6 FROM marked`;

const CLAIM = `
	UPDATE webhook_outbox AS delivery SET next_attempt_at = $3, claim_token = gen_random_uuid()::text
	FROM (
		SELECT id FROM webhook_outbox WHERE state = 'pending' AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED
	) AS due
	WHERE delivery.id = due.id
	RETURNING delivery.id, delivery.url, delivery.signing_key_id, delivery.body, delivery.event_type, delivery.created_at, delivery.attempts, delivery.claim_token`;

export class PgOutboxStore implements OutboxStore {
	constructor(private readonly pool: Pool) {}

	async enqueue(delivery: NewDelivery, now: number): Promise<void> {
		await this.pool.query(INSERT, [delivery.id, delivery.url, delivery.signingKeyId, delivery.body, delivery.eventType, now]);
	}

	async enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean> {
		const { rowCount } = await this.pool.query(ENQUEUE_ALERT, [
			delivery.id,
			delivery.url,
			delivery.signingKeyId,
			delivery.body,
			delivery.eventType,
			now,
			mark.keyId,
			mark.period,
			mark.kind,
		]);
		return rowCount === 1;
	}

	async claimDue(now: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
		if (limit <= 0) return [];
		const { rows } = await this.pool.query<DeliveryRow & { claim_token: string }>(CLAIM, [now, limit, now + leaseMs]);
		return rows
			.map((row) => claimedDelivery(row, row.claim_token))
			.sort((a, b) => a.createdAt - b.createdAt);
	}

	async delivered(claim: ClaimedDelivery): Promise<boolean> {
		const { rowCount } = await this.pool.query("DELETE FROM webhook_outbox WHERE id = $1 AND claim_token = $2 AND state = 'pending'", [claim.id, claim.claimToken]);
		return rowCount === 1;
	}

	async retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
		const { rowCount } = await this.pool.query(
			"UPDATE webhook_outbox SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2, claim_token = NULL WHERE id = $3 AND claim_token = $4 AND state = 'pending'",
			[at, error, claim.id, claim.claimToken],
		);
		return rowCount === 1;
	}

	async giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean> {
		const { rowCount } = await this.pool.query(
			"UPDATE webhook_outbox SET attempts = attempts + 1, state = 'failed', finished_at = $1, last_error = $2, claim_token = NULL WHERE id = $3 AND claim_token = $4 AND state = 'pending'",
			[now, error, claim.id, claim.claimToken],
		);
		return rowCount === 1;
	}

	async sweepFailed(before: number): Promise<number> {
		const { rowCount } = await this.pool.query("DELETE FROM webhook_outbox WHERE state = 'failed' AND finished_at < $1", [before]);
		return rowCount ?? 0;
	}

	async serviceSecret(name: string, create: () => Buffer): Promise<Buffer> {
		await this.pool.query('INSERT INTO service_secrets (name, secret) VALUES ($1, $2) ON CONFLICT DO NOTHING', [name, create()]);
		const { rows } = await this.pool.query<{ secret: Buffer }>('SELECT secret FROM service_secrets WHERE name = $1', [name]);
		return rows[0]!.secret;
	}
}

