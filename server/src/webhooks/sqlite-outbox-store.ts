/**
 * The webhook outbox in the data dir's SQLite database, shared by every process on it. Writes go
 * through the group commit (sqlite/group-commit.ts); an enqueue and an attempt's outcome are
 * durable before they are answered, so an enqueued delivery survives a power cut. A claim reads
 * and stamps its rows inside one IMMEDIATE transaction, which holds the write lock, so two
 * processes never claim the same row; the once-a-second poll takes that lock only when a read
 * found something due.
 */
import { randomUUID } from 'node:crypto';
import type { SqliteDatabase } from '../sqlite/database';
import { groupCommitOf, type SqliteGroupCommit } from '../sqlite/group-commit';
import { claimedDelivery, type BudgetAlertMark, type ClaimedDelivery, type DeliveryRow, type NewDelivery, type OutboxStore } from './outbox-store';

export class SqliteOutboxStore implements OutboxStore {
	private readonly commits: SqliteGroupCommit;
	private readonly statements;

	constructor(database: SqliteDatabase) {
		this.commits = groupCommitOf(database);
		this.statements = {
			insert: database.prepare<[string, string, string | null, string, string, number, number]>(
				'INSERT INTO webhook_outbox (id, url, signing_key_id, body, event_type, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
			),
			markAlert: database.prepare<[string, string, string, number]>(
				'INSERT INTO budget_alerts (key_id, period, kind, sent_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
			),
			due: database.prepare<[number, number], DeliveryRow>(
				"SELECT id, url, signing_key_id, body, event_type, created_at, attempts FROM webhook_outbox WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
			),
			anyDue: database.prepare<[number], { due: 1 }>("SELECT 1 AS due FROM webhook_outbox WHERE state = 'pending' AND next_attempt_at <= ? LIMIT 1"),
			claim: database.prepare<[number, string, string]>('UPDATE webhook_outbox SET next_attempt_at = ?, claim_token = ? WHERE id = ?'),
			remove: database.prepare<[string, string]>("DELETE FROM webhook_outbox WHERE id = ? AND claim_token = ? AND state = 'pending'"),
			retry: database.prepare<[number, string, string, string]>(
				"UPDATE webhook_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?, claim_token = NULL WHERE id = ? AND claim_token = ? AND state = 'pending'",
			),
			giveUp: database.prepare<[number, string, string, string]>(
				"UPDATE webhook_outbox SET attempts = attempts + 1, state = 'failed', finished_at = ?, last_error = ?, claim_token = NULL WHERE id = ? AND claim_token = ? AND state = 'pending'",
			),
			sweep: database.prepare<[number]>("DELETE FROM webhook_outbox WHERE state = 'failed' AND finished_at < ?"),
			readSecret: database.prepare<[string], { secret: Buffer }>('SELECT secret FROM service_secrets WHERE name = ?'),
			writeSecret: database.prepare<[string, Buffer]>('INSERT INTO service_secrets (name, secret) VALUES (?, ?) ON CONFLICT DO NOTHING'),
		};
	}

	async enqueue(delivery: NewDelivery, now: number): Promise<void> {
		await this.commits.write(() => this.insert(delivery, now));
	}

	async enqueueAlert(mark: BudgetAlertMark, delivery: NewDelivery, now: number): Promise<boolean> {
		return this.commits.write(() => {
			if (this.statements.markAlert.run(mark.keyId, mark.period, mark.kind, now).changes === 0) return false;
			this.insert(delivery, now);
			return true;
		});
	}

	async claimDue(now: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
		// Polled every second: a read finds nothing due without taking the write lock.
		if (limit <= 0 || !this.statements.anyDue.get(now)) return [];
		// A claim lost to a power cut only makes the delivery claimable again (at least once): no sync of its own.
		return this.commits.write(
			() =>
				this.statements.due.all(now, limit).map((row) => {
					const claimToken = randomUUID();
					this.statements.claim.run(now + leaseMs, claimToken, row.id);
					return claimedDelivery(row, claimToken);
				}),
			{ durable: false },
		);
	}

	async delivered(claim: ClaimedDelivery): Promise<boolean> {
		return this.commits.write(() => this.statements.remove.run(claim.id, claim.claimToken).changes === 1);
	}

	async retryAt(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
		return this.commits.write(() => this.statements.retry.run(at, error, claim.id, claim.claimToken).changes === 1);
	}

	async giveUp(claim: ClaimedDelivery, now: number, error: string): Promise<boolean> {
		return this.commits.write(() => this.statements.giveUp.run(now, error, claim.id, claim.claimToken).changes === 1);
	}

	async sweepFailed(before: number): Promise<number> {
		// A sweep lost to a power cut is made again by the next one.
		return this.commits.write(() => this.statements.sweep.run(before).changes, { durable: false });
	}

	async serviceSecret(name: string, create: () => Buffer): Promise<Buffer> {
		const stored = this.statements.readSecret.get(name);
		if (stored) return stored.secret;
		// Another process may write first: whatever row stands after the insert is the secret.
		return this.commits.write(() => {
			this.statements.writeSecret.run(name, create());
			return this.statements.readSecret.get(name)!.secret;
		});
	}

	private insert(delivery: NewDelivery, now: number): void {
		this.statements.insert.run(delivery.id, delivery.url, delivery.signingKeyId, delivery.body, delivery.eventType, now, now);
	}
}
