/**
 * Managed keys and their spend in PostgreSQL, shared by every replica. A budget admission is one
 * call of imagegen_admit_charges (migration 2): it takes the key's row lock, sums the spend of the
 * period and the live reservations, and inserts each reservation only if it fits, so replicas
 * admitting at once are applied one after another, and the lock is held only inside PostgreSQL.
 * Admissions (per key) and settlements that arrive while one call is under way go out together
 * in the next: under load one round trip serves many generations.
 */
import type { Pool } from 'pg';
import type { ModelId } from '../../../core/models';
import type { Admission, KeyStore, Reservation } from '../keys/key-store';
import { Batcher } from './batcher';
import type { BudgetPeriod, KeySettings, ManagedKey } from '../keys/managed-key';

const COLUMNS = `id, name, prefix, secret_hash, previous_secret_hash, previous_valid_until, created_at, expires_at, blocked,
	revoked_at, models, rate_limit_per_minute, budget_limit_usd, budget_period`;

interface KeyRow {
	id: string;
	name: string;
	prefix: string;
	secret_hash: string;
	previous_secret_hash: string | null;
	previous_valid_until: Date | null;
	created_at: Date;
	expires_at: Date | null;
	blocked: boolean;
	revoked_at: Date | null;
	models: string[] | null;
	rate_limit_per_minute: number | null;
	/** numeric arrives as text. */
	budget_limit_usd: string | null;
	budget_period: string | null;
}

/** Moves reservations into the spend of their UTC day, in one statement: never counted twice, never lost between. */
const SETTLE = `
	WITH input AS (SELECT * FROM unnest($1::text[], $2::numeric[]) AS input (id, amount)),
	settled AS (DELETE FROM key_reservations AS held USING input WHERE held.id = input.id RETURNING held.key_id, held.at, input.amount)
	INSERT INTO key_spend_days AS spend (key_id, day, spent_usd)
	SELECT key_id, (at AT TIME ZONE 'UTC')::date, sum(amount) FROM settled GROUP BY 1, 2
	ON CONFLICT (key_id, day) DO UPDATE SET spent_usd = spend.spent_usd + EXCLUDED.spent_usd`;

const ADMIT = 'SELECT ordinal, admitted, spent, reserved FROM imagegen_admit_charges($1, $2::text[], $3::numeric[], $4::numeric, $5, $6, $7) ORDER BY ordinal';

interface Settlement {
	id: string;
	amountUsd: number;
}

export class PgKeyStore implements KeyStore {
	/** Admissions waiting for one key (and limit and period): sent together, decided in order. */
	private readonly admissions = new Map<string, Batcher<{ reservation: Reservation; now: Date }, Admission>>();
	private readonly settlements: Batcher<Settlement, void>;

	constructor(private readonly pool: Pool) {
		this.settlements = new Batcher((batch) => this.settleAll(batch));
	}

	async create(key: ManagedKey): Promise<void> {
		await this.pool.query(
			`INSERT INTO api_keys (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
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
			`SELECT ${COLUMNS} FROM api_keys WHERE $1 OR revoked_at IS NULL ORDER BY created_at, id`,
			[options.includeRevoked === true],
		);
		return rows.map(toKey);
	}

	async get(id: string): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, [id]);
		return rows[0] ? toKey(rows[0]) : null;
	}

	async update(id: string, settings: KeySettings): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(
			`UPDATE api_keys SET name = $2, expires_at = $3, blocked = $4, models = $5, rate_limit_per_minute = $6,
				budget_limit_usd = $7, budget_period = $8
			WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
			[
				id,
				settings.name,
				settings.expiresAt,
				settings.blocked,
				settings.models,
				settings.rateLimitPerMinute,
				settings.budget?.limitUsd.toString() ?? null,
				settings.budget?.period ?? null,
			],
		);
		return rows[0] ? toKey(rows[0]) : null;
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
			WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
			[id, secret.hash, secret.prefix, previousValidUntil],
		);
		return rows[0] ? toKey(rows[0]) : null;
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(
			`SELECT ${COLUMNS} FROM api_keys WHERE secret_hash = $1
			UNION ALL SELECT ${COLUMNS} FROM api_keys WHERE previous_secret_hash = $1 LIMIT 1`,
			[hash],
		);
		return rows[0] ? toKey(rows[0]) : null;
	}

	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		const group = `${reservation.keyId}\u0000${reservation.limitUsd}\u0000${reservation.since.getTime()}`;
		let batcher = this.admissions.get(group);
		if (!batcher) {
			batcher = new Batcher((batch) => this.admitAll(batch), 256, () => this.admissions.delete(group));
			this.admissions.set(group, batcher);
		}
		return batcher.submit({ reservation, now });
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		await this.settlements.submit({ id: reservationId, amountUsd });
	}

	private async admitAll(batch: Array<{ reservation: Reservation; now: Date }>): Promise<Admission[]> {
		const first = batch[0]!.reservation;
		const now = batch[batch.length - 1]!.now;
		const leaseUntil = new Date(Math.max(...batch.map((each) => each.reservation.leaseUntil.getTime())));
		// Named: prepared once per connection, not parsed and planned on every call.
		const { rows } = await this.pool.query<{ admitted: boolean; spent: string; reserved: string }>({
			name: 'imagegen-admit-charges',
			text: ADMIT,
			values: [
				first.keyId,
				batch.map((each) => each.reservation.id),
				batch.map((each) => each.reservation.amountUsd.toString()),
				first.limitUsd.toString(),
				first.since,
				now,
				leaseUntil,
			],
		});
		return rows.map((row) => (row.admitted ? { admitted: true } : { admitted: false, spentUsd: Number(row.spent), reservedUsd: Number(row.reserved) }));
	}

	private async settleAll(batch: Settlement[]): Promise<void[]> {
		await this.pool.query({
			name: 'imagegen-settle-charges',
			text: SETTLE,
			values: [batch.map((each) => each.id), batch.map((each) => each.amountUsd.toString())],
		});
		return batch.map(() => undefined);
	}

	async release(reservationId: string): Promise<void> {
		await this.pool.query('DELETE FROM key_reservations WHERE id = $1', [reservationId]);
	}

	async spent(keyId: string, since: Date): Promise<number> {
		const { rows } = await this.pool.query<{ spent: string }>(
			"SELECT COALESCE(sum(spent_usd), 0) AS spent FROM key_spend_days WHERE key_id = $1 AND day >= ($2::timestamptz AT TIME ZONE 'UTC')::date",
			[keyId, since],
		);
		return Number(rows[0]!.spent);
	}
}

function toKey(row: KeyRow): ManagedKey {
	return {
		id: row.id,
		name: row.name,
		prefix: row.prefix,
		secretHash: row.secret_hash,
		previousSecretHash: row.previous_secret_hash,
		previousValidUntil: row.previous_valid_until,
		createdAt: row.created_at,
		expiresAt: row.expires_at,
		blocked: row.blocked,
		revokedAt: row.revoked_at,
		models: row.models as ModelId[] | null,
		rateLimitPerMinute: row.rate_limit_per_minute,
		budget:
			row.budget_limit_usd !== null && row.budget_period !== null
				? { limitUsd: Number(row.budget_limit_usd), period: row.budget_period as BudgetPeriod }
				: null,
	};
}
