/**
 * Managed keys and their spend in PostgreSQL, shared by every replica. A budget admission is one
 * call of imagegen_admit_charges (migration 2): it takes the key's row lock, sums the period's
 * spend (generations in flight included) and charges each price only if it fits, so replicas
 * admitting at once are applied one after another, and the lock is held only inside PostgreSQL.
 * Admissions (per key) and refunds that arrive while one call is under way go out together in
 * the next: under load one round trip serves many generations.
 */
import type { Pool } from 'pg';
import type { Admission, KeyPatch, KeyStore, Reservation } from './key-store';
import { Batcher } from '../db/batcher';
import { KEY_COLUMNS, toManagedKey, type KeyRow } from './key-rows';
import { toMicros, type ManagedKey } from './managed-key';

/** The columns a patch may set, by setting. */
const PATCHABLE: { [Setting in keyof KeyPatch]-?: (patch: KeyPatch) => Record<string, unknown> } = {
	name: (patch) => ({ name: patch.name }),
	expiresAt: (patch) => ({ expires_at: patch.expiresAt }),
	blocked: (patch) => ({ blocked: patch.blocked }),
	models: (patch) => ({ models: patch.models }),
	rateLimitPerMinute: (patch) => ({ rate_limit_per_minute: patch.rateLimitPerMinute }),
	budget: (patch) => ({ budget_limit_usd: patch.budget?.limitUsd.toString() ?? null, budget_period: patch.budget?.period ?? null }),
};

/**
 * Adds (or, negative, refunds) amounts to keys' days, in one statement. Rows are locked in key
 * and day order, so two replicas adjusting the same keys never wait on each other in a circle.
 */
const ADJUST = `
	INSERT INTO key_spend_days AS spend (key_id, day, spent_usd)
	SELECT key_id, day, sum(amount) FROM unnest($1::text[], $2::date[], $3::numeric[]) AS input (key_id, day, amount)
	GROUP BY key_id, day ORDER BY key_id, day
	ON CONFLICT (key_id, day) DO UPDATE SET spent_usd = spend.spent_usd + EXCLUDED.spent_usd`;

const ADMIT = 'SELECT ordinal, admitted, spent FROM imagegen_admit_charges($1, $2::numeric[], $3::numeric, $4::date, $5::date) ORDER BY ordinal';

/** A change of a key's spend on one UTC day. */
interface Adjustment {
	keyId: string;
	day: string;
	amountUsd: number;
}

/** What this process charged for a generation still running: refunded if it fails. */
interface Held {
	keyId: string;
	day: string;
	amountUsd: number;
}

const utcDay = (date: Date) => date.toISOString().slice(0, 10);

export class PgKeyStore implements KeyStore {
	/** Admissions waiting for one key (limit, period and day): sent together, decided in order. */
	private readonly admissions = new Map<string, Batcher<Reservation, Admission>>();
	private readonly adjustments: Batcher<Adjustment, void>;
	private readonly held = new Map<string, Held>();

	constructor(private readonly pool: Pool) {
		this.adjustments = new Batcher((batch) => this.adjustAll(batch));
	}

	async create(key: ManagedKey): Promise<void> {
		await this.pool.query(
			`INSERT INTO api_keys (${KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			[
				key.id,
				key.name,
				key.prefix,
				key.secretHash,
				key.previousSecretHash,
				key.previousValidUntil,
				key.createdAt,
				key.expiresAt,
				key.blocked,
				key.revokedAt,
				key.models,
				key.rateLimitPerMinute,
				key.budget?.limitUsd.toString() ?? null,
				key.budget?.period ?? null,
			],
		);
	}

	async list(options: { includeRevoked?: boolean } = {}): Promise<ManagedKey[]> {
		const { rows } = await this.pool.query<KeyRow>(
			`SELECT ${KEY_COLUMNS} FROM api_keys WHERE $1 OR revoked_at IS NULL ORDER BY created_at, id`,
			[options.includeRevoked === true],
		);
		return rows.map(toManagedKey);
	}

	async get(id: string): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, [id]);
		return rows[0] ? toManagedKey(rows[0]) : null;
	}

	async update(id: string, patch: KeyPatch): Promise<ManagedKey | null> {
		const values: unknown[] = [id];
		const assignments: string[] = [];
		for (const setting of Object.keys(PATCHABLE) as Array<keyof KeyPatch>) {
			if (patch[setting] === undefined) continue;
			for (const [column, value] of Object.entries(PATCHABLE[setting](patch))) {
				values.push(value);
				assignments.push(`${column} = $${values.length}`);
			}
		}
		if (assignments.length === 0) return this.get(id);
		// Only the columns sent: a change of another field made meanwhile (on any replica) is kept.
		const { rows } = await this.pool.query<KeyRow>(`UPDATE api_keys SET ${assignments.join(', ')} WHERE id = $1 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`, values);
		return rows[0] ? toManagedKey(rows[0]) : null;
	}

	async revoke(id: string, at: Date): Promise<boolean> {
		const { rowCount } = await this.pool.query('UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [id, at]);
		return rowCount === 1;
	}

	async rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(
			`UPDATE api_keys SET
				previous_secret_hash = CASE WHEN $4::timestamptz IS NULL THEN NULL ELSE secret_hash END,
				previous_valid_until = $4, secret_hash = $2, prefix = $3
			WHERE id = $1 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
			[id, secret.hash, secret.prefix, previousValidUntil],
		);
		return rows[0] ? toManagedKey(rows[0]) : null;
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(
			`SELECT ${KEY_COLUMNS} FROM api_keys WHERE secret_hash = $1
			UNION ALL SELECT ${KEY_COLUMNS} FROM api_keys WHERE previous_secret_hash = $1 LIMIT 1`,
			[hash],
		);
		return rows[0] ? toManagedKey(rows[0]) : null;
	}

	/**
	 * Charges the price at admission, so a generation in flight counts as spent on every replica
	 * without a second write when it succeeds (the common case); a failure refunds it. A replica
	 * that dies mid-generation leaves the charge: the key never spends past its budget. The
	 * reservation's lease is therefore not needed here.
	 */
	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		const day = utcDay(now);
		const group = `${reservation.keyId}\u0000${reservation.limitUsd}\u0000${utcDay(reservation.since)}\u0000${day}`;
		let batcher = this.admissions.get(group);
		if (!batcher) {
			batcher = new Batcher((batch) => this.admitAll(batch, utcDay(reservation.since), day), 256, () => this.admissions.delete(group));
			this.admissions.set(group, batcher);
		}
		const admission = await batcher.submit(reservation);
		if (admission.admitted) this.held.set(reservation.id, { keyId: reservation.keyId, day, amountUsd: reservation.amountUsd });
		return admission;
	}

	/** Only a cost that differs from the price charged at admission needs a write. */
	async settle(reservationId: string, amountUsd: number): Promise<void> {
		const held = this.held.get(reservationId);
		if (!held) return;
		this.held.delete(reservationId);
		if (toMicros(amountUsd) !== toMicros(held.amountUsd)) await this.adjustments.submit({ keyId: held.keyId, day: held.day, amountUsd: amountUsd - held.amountUsd });
	}

	async release(reservationId: string): Promise<void> {
		const held = this.held.get(reservationId);
		if (!held) return;
		this.held.delete(reservationId);
		await this.adjustments.submit({ keyId: held.keyId, day: held.day, amountUsd: -held.amountUsd });
	}

	private async admitAll(batch: Reservation[], since: string, day: string): Promise<Admission[]> {
		const first = batch[0]!;
		// Named: prepared once per connection, not parsed and planned on every call.
		const { rows } = await this.pool.query<{ admitted: boolean; spent: string }>({
			name: 'imagegen-admit-charges',
			text: ADMIT,
			values: [first.keyId, batch.map((each) => each.amountUsd.toString()), first.limitUsd.toString(), since, day],
		});
		return rows.map((row) => (row.admitted ? { admitted: true } : { admitted: false, spentUsd: Number(row.spent), reservedUsd: 0 }));
	}

	private async adjustAll(batch: Adjustment[]): Promise<void[]> {
		await this.pool.query({
			name: 'imagegen-adjust-spend',
			text: ADJUST,
			values: [batch.map((each) => each.keyId), batch.map((each) => each.day), batch.map((each) => each.amountUsd.toString())],
		});
		return batch.map(() => undefined);
	}

	async now(): Promise<Date> {
		const { rows } = await this.pool.query<{ now: Date }>('SELECT now() AS now');
		return rows[0]!.now;
	}

	async spent(keyId: string, since: Date): Promise<number> {
		const { rows } = await this.pool.query<{ spent: string }>(
			'SELECT COALESCE(sum(spent_usd), 0) AS spent FROM key_spend_days WHERE key_id = $1 AND day >= $2::date',
			[keyId, utcDay(since)],
		);
		return Number(rows[0]!.spent);
	}
}
