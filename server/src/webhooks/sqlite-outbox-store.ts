/**
 * The webhook outbox in the data dir's SQLite database, shared by every process on it. Writes go
 * through the group commit (sqlite/group-commit.ts); an enqueue and an attempt's outcome are
 * durable before they are answered, so an enqueued delivery survives a power cut. A claim stamps
 * and answers its rows in one statement inside the group's IMMEDIATE transaction, which holds the
 * write lock, so two processes never claim the same row; the once-a-second poll takes that lock only when a read
 * found something due.
 */
import { bindNumbered, type SqliteDatabase } from '../db/sqlite/database';
import { groupCommitOf, type SqliteGroupCommit, type WriteStatement } from '../db/sqlite/group-commit';
import { CLAIMED_COLUMNS, OUTBOX_SQL, capParameters, claimedDelivery, deliveryValues, eligibleDeliveries, type BudgetAlertMark, type ClaimedDelivery, type DeliveryRow, type NewDelivery, type OutboxStore, type ReceiverCaps } from './outbox-store';

const MARK_ALERT = 'INSERT INTO budget_alerts (key_id, period, kind, sent_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING';
/**
 * Stamps the due rows its receivers have room for with a lease and a claim token of their own, and
 * answers them: one statement, one transaction, so the ranking sees every other process's claims.
 */
const ELIGIBLE = eligibleDeliveries('SELECT ? AS due_at, ? AS per_origin, ? AS per_key, ? AS claim_limit', "SELECT value ->> '$.origin' AS origin, value ->> '$.key' AS key FROM json_each(?)");
const CLAIM = `UPDATE webhook_outbox SET next_attempt_at = ?, claim_token = lower(hex(randomblob(16)))
	WHERE id IN (${ELIGIBLE}) RETURNING ${CLAIMED_COLUMNS}`;

type Changed = { changes: number };

export class SqliteOutboxStore implements OutboxStore {
	private readonly commits: SqliteGroupCommit;
	private readonly statements;

	constructor(database: SqliteDatabase) {
		this.commits = groupCommitOf(database);
		this.statements = {
			eligible: database.prepare<unknown[], { id: string }>(ELIGIBLE),
			readSecret: database.prepare<[Record<string, unknown>], { secret: Buffer }>(OUTBOX_SQL.readSecret),
		};
	}

	async enqueue(delivery: NewDelivery, now: number): Promise<void> {
		await this.commits.write([insert(delivery, now)]);
	}

	async enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean> {
		// The delivery is inserted only when the mark was new: once per key, period and kind.
		const { changes } = await this.commits.write<Changed>([{ sql: MARK_ALERT, values: [mark.keyId, mark.period, mark.kind, now] }, { ...insert(delivery, now), ifChanged: true }]);
		return changes === 1;
	}

	async claimDue(now: number, limit: number, leaseMs: number, caps?: ReceiverCaps): Promise<ClaimedDelivery[]> {
		if (limit <= 0) return [];
		// Polled every second and at each enqueue: a read finds nothing that may go without taking the write lock.
		const [, ...eligibleValues] = claimValues(now, 1, leaseMs, caps);
		if (!this.statements.eligible.get(...eligibleValues)) return [];
		// A claim lost to a power cut only makes the delivery claimable again (at least once): no sync of its own.
		const rows = await this.commits.write<Array<DeliveryRow & { claim_token: string }>>([{ sql: CLAIM, values: claimValues(now, limit, leaseMs, caps), rows: true }], { durable: false });
		return rows.map((row) => claimedDelivery(row, row.claim_token)).sort((a, b) => a.createdAt - b.createdAt);
	}

	async delivered(claim: ClaimedDelivery): Promise<boolean> {
		return (await this.commits.write<Changed>([statement(OUTBOX_SQL.delivered, [claim.id, claim.claimToken])])).changes === 1;
	}

	async retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
		return (await this.commits.write<Changed>([statement(OUTBOX_SQL.retry, [claim.id, claim.claimToken, at, error])])).changes === 1;
	}

	async giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean> {
		return (await this.commits.write<Changed>([statement(OUTBOX_SQL.giveUp, [claim.id, claim.claimToken, now, error])])).changes === 1;
	}

	async sweepFailed(before: number): Promise<number> {
		// A sweep lost to a power cut is made again by the next one.
		return (await this.commits.write<Changed>([statement(OUTBOX_SQL.sweep, [before])], { durable: false })).changes;
	}

	async serviceSecret(name: string, create: () => Buffer): Promise<Buffer> {
		const stored = this.statements.readSecret.get(bindNumbered([name]));
		if (stored) return stored.secret;
		// Another process may write first: whatever row stands after the insert is the secret.
		const row = await this.commits.write<{ secret: Uint8Array }>([statement(OUTBOX_SQL.writeSecret, [name, create()]), { ...statement(OUTBOX_SQL.readSecret, [name]), row: true }]);
		// It crossed from the commit thread as a plain Uint8Array.
		return Buffer.from(row.secret.buffer, row.secret.byteOffset, row.secret.byteLength);
	}
}

function claimValues(now: number, limit: number, leaseMs: number, caps: ReceiverCaps | undefined): unknown[] {
	const { perOrigin, perKey, busy } = capParameters(caps, limit);
	return [now + leaseMs, now, perOrigin, perKey, limit, busy];
}

function statement(sql: string, values: readonly unknown[]): WriteStatement {
	return { sql, values: bindNumbered(values) };
}

function insert(delivery: NewDelivery, now: number): WriteStatement {
	return statement(OUTBOX_SQL.insert, deliveryValues(delivery, now));
}
