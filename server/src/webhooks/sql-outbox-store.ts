/**
 * The webhook outbox, on the data dir's SQLite database (shared by every process on it) or on
 * PostgreSQL (shared by every replica). An enqueue and an attempt's outcome are durable before they
 * are answered, so an enqueued delivery survives a power cut.
 *
 * A claim ranks the due deliveries its receivers have room for (a read: the once-a-second poll
 * finds nothing due without taking a write lock), then takes them under a lease in one statement
 * that checks each is still due as it writes it, so a delivery another process took meanwhile is
 * passed by, never sent twice; it then ranks again for what it lost, so processes claiming at once
 * split the due deliveries between them.
 */
import { randomUUID } from 'node:crypto';
import type { Dialect, SqlAdapter, SqlStatement } from '../db/sql-adapter';
import { sweepRows } from '../db/sweep';
import { CLAIMED_COLUMNS, OUTBOX_LEASE, OUTBOX_SQL, alertMarkValues, capParameters, claimedDelivery, deliveryValues, eligibleDeliveries, type BudgetAlertMark, type ClaimedDelivery, type DeliveryRow, type NewDelivery, type OutboxStore, type ReceiverCaps } from './outbox-store';

/** Rankings a claim makes at most: each one lost deliveries only because another process claimed them. */
const CLAIM_ROUNDS = 3;

/**
 * What the engines cannot say alike: the process's open attempts read from their JSON (`$5`), and
 * which of the ranked ids (`$4`) a claim may take. PostgreSQL locks them first, passing by those
 * another replica is claiming now instead of waiting for it; SQLite's claim holds the write lock.
 */
const DIALECT_SQL: Record<Dialect, { busy: string; candidates: string }> = {
	sqlite: {
		busy: "SELECT value ->> '$.origin' AS origin, value ->> '$.key' AS key FROM json_each($5)",
		candidates: 'SELECT value FROM json_each($4)',
	},
	postgres: {
		busy: 'SELECT busy.origin, busy.key FROM jsonb_to_recordset(CAST($5 AS jsonb)) AS busy (origin text, key text)',
		candidates: `SELECT id FROM webhook_outbox WHERE id = ANY(CAST($4 AS text[])) AND ${OUTBOX_LEASE.ended('$3')} FOR UPDATE SKIP LOCKED`,
	},
};

export class SqlOutboxStore implements OutboxStore {
	private readonly eligible: string;
	/** Args: the claim's token, its lease's end, now, the ranked ids. */
	private readonly claim: string;

	constructor(private readonly adapter: SqlAdapter) {
		const { busy, candidates } = DIALECT_SQL[adapter.dialect];
		this.eligible = eligibleDeliveries(busy);
		this.claim = OUTBOX_LEASE.claim({ candidates, holder: '$1', until: '$2', now: '$3', returning: CLAIMED_COLUMNS });
	}

	async enqueue(delivery: NewDelivery, now: number, maxPendingPerKey?: number): Promise<boolean> {
		const write = maxPendingPerKey === undefined ? { sql: OUTBOX_SQL.insert, values: deliveryValues(delivery, now) } : this.enqueueStatement(delivery, now, maxPendingPerKey);
		return (await this.adapter.write([write])).changes === 1;
	}

	enqueueStatement(delivery: NewDelivery, now: number, maxPendingPerKey: number): SqlStatement {
		return { sql: OUTBOX_SQL.insertCapped, values: [...deliveryValues(delivery, now), maxPendingPerKey] };
	}

	async isPending(id: string): Promise<boolean> {
		return (await this.adapter.one(OUTBOX_SQL.isPending, [id])) !== undefined;
	}

	async pendingCount(): Promise<number> {
		// PostgreSQL answers count(*), a bigint, as text.
		const row = await this.adapter.one<{ pending: number | string }>(OUTBOX_SQL.pendingCount);
		return Number(row?.pending ?? 0);
	}

	async enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean> {
		// The delivery is inserted only when the mark was new: once per key, period, kind and budget.
		const { changes } = await this.adapter.write([
			{ sql: OUTBOX_SQL.markAlert, values: alertMarkValues(mark, now) },
			{ sql: OUTBOX_SQL.insert, values: deliveryValues(delivery, now), ifChanged: true },
		]);
		return changes === 1;
	}

	async claimDue(now: number, limit: number, leaseMs: number, caps?: ReceiverCaps): Promise<ClaimedDelivery[]> {
		const claimed: ClaimedDelivery[] = [];
		for (let round = 0; round < CLAIM_ROUNDS && claimed.length < limit; round++) {
			const room = limit - claimed.length;
			const { perOrigin, perKey, busy } = capParameters(caps && { ...caps, busy: [...caps.busy, ...claimed] }, room);
			const eligible = await this.adapter.all<{ id: string }>(this.eligible, [now, perOrigin, perKey, room, busy]);
			if (eligible.length === 0) break;
			const token = randomUUID();
			// A claim lost to a power cut only makes the delivery claimable again (at least once): no sync of its own.
			const rows = await this.adapter.write<DeliveryRow[]>(
				[{ sql: this.claim, values: [token, now + leaseMs, now, eligible.map((row) => row.id)], returns: 'rows' }],
				{ durable: false },
			);
			claimed.push(...rows.map((row) => claimedDelivery(row, token)));
			// Every delivery it ranked is its own: nothing was lost to another process.
			if (rows.length === eligible.length) break;
		}
		return claimed.sort((a, b) => a.createdAt - b.createdAt);
	}

	async delivered(claim: ClaimedDelivery): Promise<boolean> {
		return (await this.adapter.write([{ sql: OUTBOX_SQL.delivered, values: [claim.id, claim.claimToken] }])).changes === 1;
	}

	async retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
		return (await this.adapter.write([{ sql: OUTBOX_SQL.retry, values: [claim.id, claim.claimToken, at, error] }])).changes === 1;
	}

	async giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean> {
		return (await this.adapter.write([{ sql: OUTBOX_SQL.giveUp, values: [claim.id, claim.claimToken, now, error] }])).changes === 1;
	}

	async sweepFailed(before: number): Promise<number> {
		return sweepRows(this.adapter, 'webhook_outbox', OUTBOX_SQL.sweepable, [before]);
	}

	async sweepExpired(createdBefore: number, now: number): Promise<number> {
		return sweepRows(this.adapter, 'webhook_outbox', OUTBOX_SQL.expired, [createdBefore, now]);
	}

	async serviceSecret(name: string, create: () => Buffer): Promise<Buffer> {
		const stored = await this.adapter.one<{ secret: Uint8Array }>(OUTBOX_SQL.readSecret, [name]);
		// Another process may write first: whatever row stands after the insert is the secret.
		const { secret } =
			stored ??
			(await this.adapter.write<{ secret: Uint8Array }>([
				{ sql: OUTBOX_SQL.writeSecret, values: [name, create()] },
				{ sql: OUTBOX_SQL.readSecret, values: [name], returns: 'row' },
			]));
		// Read back through SQLite's commit thread it is a plain Uint8Array.
		return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength);
	}
}
