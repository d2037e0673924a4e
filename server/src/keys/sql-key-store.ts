/**
 * Managed keys and their spend in one database, through the SQL adapter: the data dir's SQLite
 * database, shared by every process on it (the service, a second service during a restart,
 * `imagegen-server keys`), or PostgreSQL, shared by every replica. Every change of a key is one
 * statement, so no process ever writes back a copy it read earlier.
 *
 * Reservations are budget-reservations.ts. Those of one key that arrive while its transaction is
 * under way wait and go together in the next one, decided in order: under load one transaction
 * (one turn with the key's lock) serves many generations instead of each queueing for the lock.
 * Settlements and releases that arrive while one write of them is under way go together in the
 * next, summed per key and day, so a busy key's row takes one update for many generations.
 */
import { fromMicros, toMicros } from '../../../core/units';
import { Batcher } from '../db/batcher';
import type { SqlAdapter } from '../db/sql-adapter';
import { reserveInOrder } from './budget-reservations';
import type { Admission, KeyPatch, KeyStore, Reservation } from './key-store';
import { KEY_SQL, keyValues, patchStatement, rotateValues, toManagedKey, type KeyRow } from './key-rows';
import type { ManagedKey } from './managed-key';
import { OpenReservations, sumByKeyAndDay, utcDay, type SpendChange } from './open-reservations';

/** The most reservations of one key decided in one transaction. */
const MAX_RESERVATIONS_PER_TRANSACTION = 256;

export class SqlKeyStore implements KeyStore {
	/** Reservations waiting for one key (limit, period and day). */
	private readonly waiting = new Map<string, Batcher<Reservation, Admission>>();
	private readonly reservations = new OpenReservations();
	private readonly spendChanges = new Batcher<SpendChange, void>((changes) => this.addSpendAll(changes));
	/** PostgreSQL's clock, which every replica shares; the data dir's processes share this machine's. */
	readonly now?: () => Promise<Date>;

	constructor(private readonly adapter: SqlAdapter) {
		if (adapter.dialect === 'postgres') this.now = () => adapter.now();
	}

	async create(key: ManagedKey): Promise<void> {
		await this.adapter.write([{ sql: KEY_SQL.insert, values: keyValues(key) }]);
	}

	async list(options: { includeRevoked?: boolean } = {}): Promise<ManagedKey[]> {
		return (await this.adapter.all<KeyRow>(KEY_SQL.list, [options.includeRevoked === true])).map(toManagedKey);
	}

	async get(id: string): Promise<ManagedKey | null> {
		return this.key(await this.adapter.one<KeyRow>(KEY_SQL.get, [id]));
	}

	async update(id: string, patch: KeyPatch): Promise<ManagedKey | null> {
		const update = patchStatement(id, patch);
		if (!update) return this.get(id);
		return this.key(await this.adapter.write<KeyRow | undefined>([{ sql: update.text, values: update.values, returns: 'row' }]));
	}

	async revoke(id: string, at: Date): Promise<boolean> {
		return (await this.adapter.write([{ sql: KEY_SQL.revoke, values: [id, at] }])).changes === 1;
	}

	async rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null> {
		return this.key(await this.adapter.write<KeyRow | undefined>([{ sql: KEY_SQL.rotate, values: rotateValues(id, secret, previousValidUntil), returns: 'row' }]));
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		return this.key(await this.adapter.one<KeyRow>(KEY_SQL.bySecret, [hash]));
	}

	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		const day = utcDay(now);
		const admission = await this.waitingFor(reservation, day).submit(reservation);
		if (admission.admitted) this.reservations.add(reservation.id, { keyId: reservation.keyId, day, micros: toMicros(reservation.amountUsd) });
		return admission;
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		await this.addSpend(this.reservations.close(reservationId, amountUsd));
	}

	async release(reservationId: string): Promise<void> {
		await this.addSpend(this.reservations.close(reservationId, null));
	}

	async spent(keyId: string, since: Date): Promise<number> {
		return fromMicros((await this.adapter.one<{ micros: number | string }>(KEY_SQL.spent, [keyId, utcDay(since)]))!.micros);
	}

	private waitingFor(reservation: Reservation, day: string): Batcher<Reservation, Admission> {
		const since = utcDay(reservation.since);
		const group = `${reservation.keyId}\u0000${reservation.limitUsd}\u0000${since}\u0000${day}`;
		let batcher = this.waiting.get(group);
		if (!batcher) {
			const batch = { keyId: reservation.keyId, limitUsd: reservation.limitUsd, since, day };
			batcher = new Batcher(
				(reservations) => reserveInOrder(this.adapter, { ...batch, reservations }),
				MAX_RESERVATIONS_PER_TRANSACTION,
				() => this.waiting.delete(group),
			);
			this.waiting.set(group, batcher);
		}
		return batcher;
	}

	private async addSpend(change: SpendChange | undefined): Promise<void> {
		if (change) await this.spendChanges.submit(change);
	}

	private async addSpendAll(changes: SpendChange[]): Promise<void[]> {
		const sums = sumByKeyAndDay(changes);
		if (sums.length > 0) await this.adapter.write(sums.map((sum) => ({ sql: KEY_SQL.addSpend, values: [sum.keyId, sum.day, sum.micros] })));
		return changes.map(() => undefined);
	}

	private key(row: KeyRow | undefined): ManagedKey | null {
		return row ? toManagedKey(row) : null;
	}
}
