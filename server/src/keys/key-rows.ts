/**
 * A managed key as both databases store it: the same columns and the same statements, run through
 * the SQL adapter (db/sql-adapter.ts), which binds the values each driver's way. Rows come back as
 * the driver gives them (PostgreSQL: Dates, booleans, text[], bigint as text; SQLite: unix
 * milliseconds, 0/1, JSON text), and `toManagedKey` reads either.
 */
import type { CatalogModelId } from '../../../core/video-models';
import { fromMicros, toMicros } from '../../../core/units';
import type { KeyPatch } from './key-store';
import type { BudgetPeriod, ManagedKey } from './managed-key';

const COLUMNS = ['id', 'name', 'prefix', 'secret_hash', 'previous_secret_hash', 'previous_valid_until', 'created_at', 'expires_at', 'blocked', 'revoked_at',
	'models', 'rate_limit_per_minute', 'budget_limit_micros', 'budget_period'] as const;

const KEY_COLUMNS = COLUMNS.join(', ');

/** The columns a patch may set, by setting: the only place a setting meets its columns. */
const PATCHABLE: { [Setting in keyof KeyPatch]-?: (patch: KeyPatch) => Record<string, unknown> } = {
	name: (patch) => ({ name: patch.name }),
	expiresAt: (patch) => ({ expires_at: patch.expiresAt ?? null }),
	blocked: (patch) => ({ blocked: patch.blocked }),
	models: (patch) => ({ models: patch.models ?? null }),
	rateLimitPerMinute: (patch) => ({ rate_limit_per_minute: patch.rateLimitPerMinute ?? null }),
	budget: (patch) => ({ budget_limit_micros: patch.budget ? toMicros(patch.budget.limitUsd) : null, budget_period: patch.budget?.period ?? null }),
};

export const KEY_SQL = {
	insert: `INSERT INTO api_keys (${KEY_COLUMNS}) VALUES (${COLUMNS.map((_, index) => `$${index + 1}`).join(', ')})`,
	list: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE $1 OR revoked_at IS NULL ORDER BY created_at, id`,
	get: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND revoked_at IS NULL`,
	revoke: 'UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL',
	rotate: `UPDATE api_keys SET previous_secret_hash = CASE WHEN $5 THEN secret_hash END, previous_valid_until = $4, secret_hash = $2, prefix = $3
		WHERE id = $1 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
	bySecret: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE secret_hash = $1 UNION ALL SELECT ${KEY_COLUMNS} FROM api_keys WHERE previous_secret_hash = $1 LIMIT 1`,
	/** Settled spend plus generations in flight (reserved at admission), from a UTC day on. */
	spent: 'SELECT COALESCE(sum(spent_micros), 0) AS micros FROM key_spend_days WHERE key_id = $1 AND day >= $2',
	/** Adds `$3` micro-dollars (negative: given back) to the key's spend of UTC day `$2`. */
	addSpend: `INSERT INTO key_spend_days AS spend (key_id, day, spent_micros) VALUES ($1, $2, $3)
		ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = spend.spent_micros + excluded.spent_micros`,
};

/** The values of `KEY_SQL.insert`, in its order. */
export function keyValues(key: ManagedKey): unknown[] {
	const row: Record<string, unknown> = {
		id: key.id,
		prefix: key.prefix,
		secret_hash: key.secretHash,
		previous_secret_hash: key.previousSecretHash,
		previous_valid_until: key.previousValidUntil,
		created_at: key.createdAt,
		revoked_at: key.revokedAt,
		...Object.assign({}, ...Object.values(PATCHABLE).map((columns) => columns(key))),
	};
	return COLUMNS.map((column) => row[column]);
}

/** The values of `KEY_SQL.rotate`, in its order. */
export function rotateValues(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): unknown[] {
	return [id, secret.hash, secret.prefix, previousValidUntil, previousValidUntil !== null];
}

/**
 * The UPDATE of a patch's settings only (a change of another field made meanwhile, by any process or
 * replica, is kept), with its values ($1 is the id); undefined when the patch sets nothing.
 */
export function patchStatement(id: string, patch: KeyPatch): { text: string; values: unknown[] } | undefined {
	const values: unknown[] = [id];
	const assignments: string[] = [];
	for (const setting of Object.keys(PATCHABLE) as Array<keyof KeyPatch>) {
		if (patch[setting] === undefined) continue;
		for (const [column, value] of Object.entries(PATCHABLE[setting](patch))) {
			values.push(value);
			assignments.push(`${column} = $${values.length}`);
		}
	}
	if (assignments.length === 0) return undefined;
	return { text: `UPDATE api_keys SET ${assignments.join(', ')} WHERE id = $1 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`, values };
}

type Time = Date | number;

export interface KeyRow {
	id: string;
	name: string;
	prefix: string;
	secret_hash: string;
	previous_secret_hash: string | null;
	previous_valid_until: Time | null;
	created_at: Time;
	expires_at: Time | null;
	blocked: boolean | number;
	revoked_at: Time | null;
	/** PostgreSQL's text[] arrives as an array, SQLite's as JSON text. */
	models: string[] | string | null;
	rate_limit_per_minute: number | null;
	/** PostgreSQL's bigint arrives as text. */
	budget_limit_micros: string | number | null;
	budget_period: string | null;
}

export function toManagedKey(row: KeyRow): ManagedKey {
	return {
		id: row.id,
		name: row.name,
		prefix: row.prefix,
		secretHash: row.secret_hash,
		previousSecretHash: row.previous_secret_hash,
		previousValidUntil: timeOrNull(row.previous_valid_until),
		createdAt: new Date(row.created_at),
		expiresAt: timeOrNull(row.expires_at),
		blocked: Boolean(row.blocked),
		revokedAt: timeOrNull(row.revoked_at),
		models: (typeof row.models === 'string' ? JSON.parse(row.models) : row.models) as CatalogModelId[] | null,
		rateLimitPerMinute: row.rate_limit_per_minute,
		budget:
			row.budget_limit_micros !== null && row.budget_period !== null
				? { limitUsd: fromMicros(row.budget_limit_micros), period: row.budget_period as BudgetPeriod }
				: null,
	};
}

function timeOrNull(time: Time | null): Date | null {
	return time === null ? null : new Date(time);
}
