/**
 * Managed keys and their spend in PostgreSQL, shared by every replica. A budget admission takes
 * the key's row lock and then, in a fresh statement of the same transaction (so it sees every
 * charge committed by whoever held the lock before), sums spend and live reservations and inserts
 * its own reservation only if it fits: replicas admitting at once are applied one after another.
 */
import type { Pool } from 'pg';
import type { ModelId } from '../../../core/models';
import type { Admission, KeyStore, Reservation } from '../keys/key-store';
import type { BudgetPeriod, KeySettings, ManagedKey } from '../keys/managed-key';
import { withConnection } from './connection';

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

const ADMIT = `
	WITH totals AS (
		SELECT
			COALESCE(sum(amount_usd) FILTER (WHERE settled), 0) AS spent,
			COALESCE(sum(amount_usd) FILTER (WHERE NOT settled), 0) AS reserved
		FROM key_charges
		WHERE key_id = $1 AND at >= $2 AND (settled OR lease_until > $6)
	), admitted AS (
		INSERT INTO key_charges (id, key_id, amount_usd, at, settled, lease_until)
		SELECT $3, $1, $4::numeric, $6, false, $7 FROM totals WHERE spent + reserved + $4::numeric <= $5::numeric
		RETURNING id
	)
	SELECT spent, reserved, (SELECT count(*) FROM admitted)::int AS admitted FROM totals`;

export class PgKeyStore implements KeyStore {
	constructor(private readonly pool: Pool) {}

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
		return withConnection(
			this.pool,
			async (client) => {
				// The key's row is the lock every admission for this key queues on.
				await client.query('SELECT 1 FROM api_keys WHERE id = $1 FOR UPDATE', [reservation.keyId]);
				const { rows } = await client.query<{ spent: string; reserved: string; admitted: number }>(ADMIT, [
					reservation.keyId,
					reservation.since,
					reservation.id,
					reservation.amountUsd.toString(),
					reservation.limitUsd.toString(),
					now,
					reservation.leaseUntil,
				]);
				const row = rows[0]!;
				if (row.admitted === 1) return { admitted: true } as const;
				return { admitted: false, spentUsd: Number(row.spent), reservedUsd: Number(row.reserved) } as const;
			},
			{ transaction: true },
		);
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		await this.pool.query('UPDATE key_charges SET settled = true, amount_usd = $2::numeric WHERE id = $1', [reservationId, amountUsd.toString()]);
	}

	async release(reservationId: string): Promise<void> {
		await this.pool.query('DELETE FROM key_charges WHERE id = $1 AND NOT settled', [reservationId]);
	}

	async spent(keyId: string, since: Date): Promise<number> {
		const { rows } = await this.pool.query<{ spent: string }>(
			'SELECT COALESCE(sum(amount_usd), 0) AS spent FROM key_charges WHERE key_id = $1 AND at >= $2 AND settled',
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
