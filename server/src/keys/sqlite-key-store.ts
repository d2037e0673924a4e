/**
 * Managed keys in the data dir's SQLite database, shared by every process on it: the service, a
 * second service during a restart, `imagegen-server keys`. Every change is one statement or one
 * IMMEDIATE transaction, so no process ever writes back a copy it read earlier.
 *
 * A budget admission is one IMMEDIATE transaction that sums the period's spend and charges the
 * price only if it fits: two processes admitting at once are applied one after another.
 */
import { fromMicros, toMicros } from '../../../core/units';
import { bindNumbered, statementCache, type SqliteDatabase, type SqliteStatement } from '../db/sqlite/database';
import { whenUnlocked } from '../db/sqlite/busy';
import { HeldCharges, utcDay, type SpendChange } from './held-charges';
import type { Admission, KeyPatch, KeyStore, Reservation } from './key-store';
import { KEY_SQL, keyValues, patchStatement, rotateValues, toManagedKey, type KeyRow } from './key-rows';
import type { ManagedKey } from './managed-key';

export class SqliteKeyStore implements KeyStore {
	private readonly admit;
	private readonly charges = new HeldCharges();
	/** Patches set different columns: one prepared UPDATE per text, made on first use. */
	private readonly statement: (text: string) => SqliteStatement;

	constructor(private readonly database: SqliteDatabase) {
		this.statement = statementCache(database);
		this.admit = database.transaction((reservation: Reservation, day: string): Admission => {
			const spent = this.row<{ micros: number }>(KEY_SQL.spent, [reservation.keyId, utcDay(reservation.since)])!.micros;
			const amount = toMicros(reservation.amountUsd);
			if (spent + amount > toMicros(reservation.limitUsd)) return { admitted: false, spentUsd: fromMicros(spent) };
			this.statement(KEY_SQL.charge).run(bindNumbered([reservation.keyId, day, amount]));
			return { admitted: true };
		});
	}

	async create(key: ManagedKey): Promise<void> {
		await this.write(KEY_SQL.insert, keyValues(key));
	}

	async list(options: { includeRevoked?: boolean } = {}): Promise<ManagedKey[]> {
		return (this.statement(KEY_SQL.list).all(bindNumbered([options.includeRevoked === true])) as KeyRow[]).map(toManagedKey);
	}

	async get(id: string): Promise<ManagedKey | null> {
		return this.key(this.row<KeyRow>(KEY_SQL.get, [id]));
	}

	async update(id: string, patch: KeyPatch): Promise<ManagedKey | null> {
		const update = patchStatement(id, patch);
		if (!update) return this.get(id);
		return this.key(await whenUnlocked(this.database, () => this.row<KeyRow>(update.text, update.values)));
	}

	async revoke(id: string, at: Date): Promise<boolean> {
		return (await this.write(KEY_SQL.revoke, [id, at])).changes === 1;
	}

	async rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null> {
		return this.key(await whenUnlocked(this.database, () => this.row<KeyRow>(KEY_SQL.rotate, rotateValues(id, secret, previousValidUntil))));
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		return this.key(this.row<KeyRow>(KEY_SQL.bySecret, [hash]));
	}

	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		const day = utcDay(now);
		const admission = await whenUnlocked(this.database, () => this.admit.immediate(reservation, day));
		if (admission.admitted) this.charges.hold(reservation.id, { keyId: reservation.keyId, day, micros: toMicros(reservation.amountUsd) });
		return admission;
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		await this.change(this.charges.settle(reservationId, amountUsd));
	}

	async release(reservationId: string): Promise<void> {
		await this.change(this.charges.settle(reservationId, null));
	}

	async spent(keyId: string, since: Date): Promise<number> {
		return fromMicros(this.row<{ micros: number }>(KEY_SQL.spent, [keyId, utcDay(since)])!.micros);
	}

	private async change(change: SpendChange | undefined): Promise<void> {
		if (change) await this.write(KEY_SQL.charge, [change.keyId, change.day, change.micros]);
	}

	private write(text: string, values: readonly unknown[]) {
		return whenUnlocked(this.database, () => this.statement(text).run(bindNumbered(values)));
	}

	private row<T>(text: string, values: readonly unknown[]): T | undefined {
		return this.statement(text).get(bindNumbered(values)) as T | undefined;
	}

	private key(row: KeyRow | undefined): ManagedKey | null {
		return row ? toManagedKey(row) : null;
	}
}
