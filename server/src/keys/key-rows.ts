/**
 * A managed key as both databases store it: the same columns, read back into a ManagedKey. The
 * drivers differ only in how values arrive (PostgreSQL: timestamps as Dates, booleans, text[],
 * numeric as text; SQLite: unix milliseconds, 0/1, JSON text, REAL). How each stores a value it
 * writes stays with its store.
 */
import type { ModelId } from '../../../core/models';
import type { BudgetPeriod, ManagedKey } from './managed-key';

export const KEY_COLUMNS = `id, name, prefix, secret_hash, previous_secret_hash, previous_valid_until, created_at, expires_at, blocked,
	revoked_at, models, rate_limit_per_minute, budget_limit_usd, budget_period`;

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
	/** PostgreSQL's numeric arrives as text. */
	budget_limit_usd: string | number | null;
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
		models: (typeof row.models === 'string' ? JSON.parse(row.models) : row.models) as ModelId[] | null,
		rateLimitPerMinute: row.rate_limit_per_minute,
		budget:
			row.budget_limit_usd !== null && row.budget_period !== null
				? { limitUsd: Number(row.budget_limit_usd), period: row.budget_period as BudgetPeriod }
				: null,
	};
}

function timeOrNull(time: Time | null): Date | null {
	return time === null ? null : new Date(time);
}
