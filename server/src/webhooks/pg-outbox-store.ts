/**
 * The webhook outbox in PostgreSQL, shared by every replica. A claim ranks the due deliveries its
 * receivers have room for, then takes them in one statement that locks them (`FOR UPDATE SKIP
 * LOCKED`) and checks each is still due, so a delivery another replica took meanwhile is passed
 * by, never sent twice; the claim then ranks again for what it lost, so replicas claiming at once
 * split the due deliveries between them.
 */
import type { Pool } from 'pg';
import { CLAIMED_COLUMNS, OUTBOX_SQL, capParameters, claimedDelivery, deliveryValues, eligibleDeliveries, type BudgetAlertMark, type ClaimedDelivery, type DeliveryRow, type NewDelivery, type OutboxStore, type ReceiverCaps } from './outbox-store';

/** The alert's mark and its delivery in one statement: the delivery (`deliveryValues`) is inserted only if the mark was. */
const ENQUEUE_ALERT = `
	WITH marked AS (
		INSERT INTO budget_alerts (key_id, period, kind, sent_at) VALUES ($8, $9, $10, $7) ON CONFLICT DO NOTHING RETURNING 1
	)
	INSERT INTO webhook_outbox (id, url, origin, signing_key_id, body, event_type, created_at, next_attempt_at)
	SELECT $1, $2, $3, $4, $5, $6, $7, $7 FROM marked`;

const ELIGIBLE = eligibleDeliveries(
	'SELECT $1::bigint AS due_at, $2::integer AS per_origin, $3::integer AS per_key, $4::integer AS claim_limit',
	'SELECT busy.origin, busy.key FROM jsonb_to_recordset($5::jsonb) AS busy (origin text, key text)',
);

const CLAIM = `
	UPDATE webhook_outbox AS delivery SET next_attempt_at = $3, claim_token = gen_random_uuid()::text
	FROM (
		SELECT id FROM webhook_outbox WHERE id = ANY($2::text[]) AND state = 'pending' AND next_attempt_at <= $1 FOR UPDATE SKIP LOCKED
	) AS due
	WHERE delivery.id = due.id
	RETURNING ${CLAIMED_COLUMNS.split(', ').map((column) => `delivery.${column}`).join(', ')}`;

/** Rankings a claim makes at most: each one lost deliveries only because another replica claimed them. */
const CLAIM_ROUNDS = 3;

export class PgOutboxStore implements OutboxStore {
	constructor(private readonly pool: Pool) {}

	async enqueue(delivery: NewDelivery, now: number): Promise<void> {
		await this.pool.query(OUTBOX_SQL.insert, deliveryValues(delivery, now));
	}

	async enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean> {
		const { rowCount } = await this.pool.query(ENQUEUE_ALERT, [...deliveryValues(delivery, now), mark.keyId, mark.period, mark.kind]);
		return rowCount === 1;
	}

	async claimDue(now: number, limit: number, leaseMs: number, caps?: ReceiverCaps): Promise<ClaimedDelivery[]> {
		const claimed: ClaimedDelivery[] = [];
		for (let round = 0; round < CLAIM_ROUNDS && claimed.length < limit; round++) {
			const room = limit - claimed.length;
			const { perOrigin, perKey, busy } = capParameters(caps && { ...caps, busy: [...caps.busy, ...claimed] }, room);
			const eligible = await this.pool.query<{ id: string }>(ELIGIBLE, [now, perOrigin, perKey, room, busy]);
			if (eligible.rows.length === 0) break;
			const { rows } = await this.pool.query<DeliveryRow & { claim_token: string }>(CLAIM, [now, eligible.rows.map((row) => row.id), now + leaseMs]);
			claimed.push(...rows.map((row) => claimedDelivery(row, row.claim_token)));
			// Every delivery it ranked is its own: nothing was lost to another replica.
			if (rows.length === eligible.rows.length) break;
		}
		return claimed.sort((a, b) => a.createdAt - b.createdAt);
	}

	async delivered(claim: ClaimedDelivery): Promise<boolean> {
		return (await this.pool.query(OUTBOX_SQL.delivered, [claim.id, claim.claimToken])).rowCount === 1;
	}

	async retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
		return (await this.pool.query(OUTBOX_SQL.retry, [claim.id, claim.claimToken, at, error])).rowCount === 1;
	}

	async giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean> {
		return (await this.pool.query(OUTBOX_SQL.giveUp, [claim.id, claim.claimToken, now, error])).rowCount === 1;
	}

	async sweepFailed(before: number): Promise<number> {
		return (await this.pool.query(OUTBOX_SQL.sweep, [before])).rowCount ?? 0;
	}

	async serviceSecret(name: string, create: () => Buffer): Promise<Buffer> {
		await this.pool.query(OUTBOX_SQL.writeSecret, [name, create()]);
		const { rows } = await this.pool.query<{ secret: Buffer }>(OUTBOX_SQL.readSecret, [name]);
		return rows[0]!.secret;
	}
}

