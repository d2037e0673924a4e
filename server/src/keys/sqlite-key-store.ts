/**
 * Managed keys in the data dir's SQLite database, shared by every process on it: the service, a
 * second service during a restart, `imagegen-server keys`. Every change is one statement or one
 * IMMEDIATE transaction, so no process ever writes back a copy it read earlier.
 *
 * A budget admission is one IMMEDIATE transaction that sums the period's settled spend and the
 * live reservations and inserts the new one only if it fits: two processes admitting at once are
 * applied one after another. A reservation left by a process that died counts until its lease
 * ends, then is deleted by the next admission of that key.
 */
import type { SqliteDatabase } from '../sqlite/database';
import { whenUnlocked } from '../sqlite/busy';
import type { Admission, KeyPatch, KeyStore, Reservation } from './key-store';
import { KEY_COLUMNS, toManagedKey, type KeyRow } from './key-rows';
import { fromMicros, toMicros, type ManagedKey } from './managed-key';

/** The columns a patch may set, by setting, with how a value is stored. */
const PATCHABLE: { [Setting in keyof KeyPatch]-?: (patch: KeyPatch) => Record<string, unknown> } = {
	name: (patch) => ({ name: patch.name }),
	expiresAt: (patch) => ({ expires_at: millisOrNull(patch.expiresAt ?? null) }),
	blocked: (patch) => ({ blocked: patch.blocked ? 1 : 0 }),
	models: (patch) => ({ models: patch.models ? JSON.stringify(patch.models) : null }),
	rateLimitPerMinute: (patch) => ({ rate_limit_per_minute: patch.rateLimitPerMinute ?? null }),
	budget: (patch) => ({ budget_limit_usd: patch.budget?.limitUsd ?? null, budget_period: patch.budget?.period ?? null }),
};

const utcDay = (at: number) => new Date(at).toISOString().slice(0, 10);

export class SqliteKeyStore implements KeyStore {
	private readonly statements;
	private readonly admit;
	private readonly settleOnce;
	/** Patches set different columns: one prepared UPDATE per set of columns, made on first use. */
	private readonly updates = new Map<string, ReturnType<SqliteDatabase['prepare']>>();

	constructor(private readonly database: SqliteDatabase) {
		this.statements = {
			insert: database.prepare(`INSERT INTO api_keys (id, name, prefix, secret_hash, previous_secret_hash, previous_valid_until, created_at, expires_at, blocked,
				revoked_at, models, rate_limit_per_minute, budget_limit_usd, budget_period) VALUES (@id, @name, @prefix, @secret_hash, @previous_secret_hash,
				@previous_valid_until, @created_at, @expires_at, @blocked, @revoked_at, @models, @rate_limit_per_minute, @budget_limit_usd, @budget_period)`),
			list: database.prepare<[number], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE ? OR revoked_at IS NULL ORDER BY created_at, id`),
			get: database.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ? AND revoked_at IS NULL`),
			revoke: database.prepare<[number, string]>('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
			rotate: database.prepare<[{ id: string; hash: string; prefix: string; until: number | null }], KeyRow>(`UPDATE api_keys SET
				previous_secret_hash = CASE WHEN @until IS NULL THEN NULL ELSE secret_hash END,
				previous_valid_until = @until, secret_hash = @hash, prefix = @prefix
				WHERE id = @id AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`),
			bySecret: database.prepare<[{ hash: string }], KeyRow>(
				`SELECT ${KEY_COLUMNS} FROM api_keys WHERE secret_hash = @hash UNION ALL SELECT ${KEY_COLUMNS} FROM api_keys WHERE previous_secret_hash = @hash LIMIT 1`,
			),
			spent: database.prepare<[string, string], { micros: number }>('SELECT COALESCE(sum(spent_micros), 0) AS micros FROM key_spend_days WHERE key_id = ? AND day >= ?'),
			reserved: database.prepare<[string, number, number], { micros: number }>(
				'SELECT COALESCE(sum(micros), 0) AS micros FROM key_reservations WHERE key_id = ? AND lease_until > ? AND at >= ?',
			),
			dropExpired: database.prepare<[string, number]>('DELETE FROM key_reservations WHERE key_id = ? AND lease_until <= ?'),
			hold: database.prepare<[string, string, number, number, number]>('INSERT INTO key_reservations (id, key_id, at, micros, lease_until) VALUES (?, ?, ?, ?, ?)'),
			take: database.prepare<[string], { key_id: string; at: number }>('DELETE FROM key_reservations WHERE id = ? RETURNING key_id, at'),
			charge: database.prepare<[string, string, number]>(
				'INSERT INTO key_spend_days (key_id, day, spent_micros) VALUES (?, ?, ?) ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = spent_micros + excluded.spent_micros',
			),
		};
		this.admit = database.transaction((reservation: Reservation, now: number): Admission => {
			const { keyId } = reservation;
			this.statements.dropExpired.run(keyId, now);
			const spent = this.statements.spent.get(keyId, utcDay(reservation.since.getTime()))!.micros;
			const reserved = this.statements.reserved.get(keyId, now, reservation.since.getTime())!.micros;
			const amount = toMicros(reservation.amountUsd);
			if (spent + reserved + amount > toMicros(reservation.limitUsd)) return { admitted: false, spentUsd: fromMicros(spent), reservedUsd: fromMicros(reserved) };
			this.statements.hold.run(reservation.id, keyId, now, amount, reservation.leaseUntil.getTime());
			return { admitted: true };
		});
		this.settleOnce = database.transaction((reservationId: string, micros: number | null) => {
			const held = this.statements.take.get(reservationId);
			// Settled or released already (or dropped once its lease ended): nothing to count twice.
			if (held && micros !== null) this.statements.charge.run(held.key_id, utcDay(held.at), micros);
		});
	}

	async create(key: ManagedKey): Promise<void> {
		await whenUnlocked(this.database, () => this.statements.insert.run(toRow(key)));
	}

	async list(options: { includeRevoked?: boolean } = {}): Promise<ManagedKey[]> {
		return this.statements.list.all(options.includeRevoked ? 1 : 0).map(toManagedKey);
	}

	async get(id: string): Promise<ManagedKey | null> {
		const row = this.statements.get.get(id);
		return row ? toManagedKey(row) : null;
	}

	async update(id: string, patch: KeyPatch): Promise<ManagedKey | null> {
		const values: Record<string, unknown> = {};
		for (const setting of Object.keys(PATCHABLE) as Array<keyof KeyPatch>) {
			if (patch[setting] !== undefined) Object.assign(values, PATCHABLE[setting](patch));
		}
		const columns = Object.keys(values);
		if (columns.length === 0) return this.get(id);
		const signature = columns.join(',');
		let statement = this.updates.get(signature);
		if (!statement) {
			statement = this.database.prepare(`UPDATE api_keys SET ${columns.map((column) => `${column} = @${column}`).join(', ')} WHERE id = @id AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`);
			this.updates.set(signature, statement);
		}
		const update = statement;
		const row = (await whenUnlocked(this.database, () => update.get({ ...values, id }))) as KeyRow | undefined;
		return row ? toManagedKey(row) : null;
	}

	async revoke(id: string, at: Date): Promise<boolean> {
		return (await whenUnlocked(this.database, () => this.statements.revoke.run(at.getTime(), id))).changes === 1;
	}

	async rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null> {
		const row = await whenUnlocked(this.database, () => this.statements.rotate.get({ id, hash: secret.hash, prefix: secret.prefix, until: millisOrNull(previousValidUntil) }));
		return row ? toManagedKey(row) : null;
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		const row = this.statements.bySecret.get({ hash });
		return row ? toManagedKey(row) : null;
	}

	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		return whenUnlocked(this.database, () => this.admit.immediate(reservation, now.getTime()));
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		await whenUnlocked(this.database, () => this.settleOnce.immediate(reservationId, toMicros(amountUsd)));
	}

	async release(reservationId: string): Promise<void> {
		await whenUnlocked(this.database, () => this.settleOnce.immediate(reservationId, null));
	}

	async spent(keyId: string, since: Date): Promise<number> {
		return fromMicros(this.statements.spent.get(keyId, utcDay(since.getTime()))!.micros);
	}
}

function millisOrNull(date: Date | null): number | null {
	return date ? date.getTime() : null;
}

function toRow(key: ManagedKey): Record<string, unknown> {
	return {
		id: key.id,
		prefix: key.prefix,
		secret_hash: key.secretHash,
		previous_secret_hash: key.previousSecretHash,
		previous_valid_until: millisOrNull(key.previousValidUntil),
		created_at: key.createdAt.getTime(),
		revoked_at: millisOrNull(key.revokedAt),
		...Object.assign({}, ...Object.values(PATCHABLE).map((column) => column(key))),
	};
}
