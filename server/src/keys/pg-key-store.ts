/**
 * Managed keys and their spend in PostgreSQL, shared by every replica. A budget admission is one
 * call of imagegen_admit_charges (migration 7): it takes the key's row lock, sums the period's
 * spend (generations in flight included) and charges each price only if it fits, so replicas
 * admitting at once are applied one after another, and the lock is held only inside PostgreSQL.
 * Admissions (per key) and spend changes that arrive while one call is under way go out together
 * in the next: under load one round trip serves many generations.
 */
import type { Pool } from 'pg';
import { fromMicros, toMicros } from '../../../core/units';
import { Batcher } from '../db/batcher';
import { HeldCharges, utcDay, type SpendChange } from './held-charges';
import type { Admission, KeyPatch, KeyStore, Reservation } from './key-store';
import { KEY_SQL, keyValues, patchStatement, rotateValues, toManagedKey, type KeyRow } from './key-rows';
import type { ManagedKey } from './managed-key';

/**
 * Adds (or, negative, refunds) amounts to keys' days, in one statement. Rows are locked in key
 * and day order, so two replicas changing the same keys never wait on each other in a circle.
 */
const CHANGE_SPEND = `
	INSERT INTO key_spend_days AS spend (key_id, day, spent_micros)
	SELECT key_id, day, sum(micros) FROM unnest($1::text[], $2::date[], $3::bigint[]) AS input (key_id, day, micros)
	GROUP BY key_id, day ORDER BY key_id, day
	ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = spend.spent_micros + EXCLUDED.spent_micros`;

const ADMIT = 'SELECT ordinal, admitted, spent FROM imagegen_admit_charges($1, $2::bigint[], $3::bigint, $4::date, $5::date) ORDER BY ordinal';

export class PgKeyStore implements KeyStore {
	/** Admissions waiting for one key (limit, period and day): sent together, decided in order. */
	private readonly admissions = new Map<string, Batcher<Reservation, Admission>>();
	private readonly changes: Batcher<SpendChange, void>;
	private readonly charges = new HeldCharges();

	constructor(private readonly pool: Pool) {
		this.changes = new Batcher((batch) => this.changeAll(batch));
	}

	async create(key: ManagedKey): Promise<void> {
		await this.pool.query(KEY_SQL.insert, keyValues(key));
	}

	async list(options: { includeRevoked?: boolean } = {}): Promise<ManagedKey[]> {
		return (await this.pool.query<KeyRow>(KEY_SQL.list, [options.includeRevoked === true])).rows.map(toManagedKey);
	}

	async get(id: string): Promise<ManagedKey | null> {
		return this.key(KEY_SQL.get, [id]);
	}

	async update(id: string, patch: KeyPatch): Promise<ManagedKey | null> {
		const update = patchStatement(id, patch);
		return update ? this.key(update.text, update.values) : this.get(id);
	}

	async revoke(id: string, at: Date): Promise<boolean> {
		return (await this.pool.query(KEY_SQL.revoke, [id, at])).rowCount === 1;
	}

	async rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null> {
		return this.key(KEY_SQL.rotate, rotateValues(id, secret, previousValidUntil));
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		return this.key(KEY_SQL.bySecret, [hash]);
	}

	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		const day = utcDay(now);
		const since = utcDay(reservation.since);
		const group = `${reservation.keyId}\u0000${reservation.limitUsd}\u0000${since}\u0000${day}`;
		let batcher = this.admissions.get(group);
		if (!batcher) {
			batcher = new Batcher((batch) => this.admitAll(batch, since, day), 256, () => this.admissions.delete(group));
			this.admissions.set(group, batcher);
		}
		const admission = await batcher.submit(reservation);
		if (admission.admitted) this.charges.hold(reservation.id, { keyId: reservation.keyId, day, micros: toMicros(reservation.amountUsd) });
		return admission;
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		await this.change(this.charges.settle(reservationId, amountUsd));
	}

	async release(reservationId: string): Promise<void> {
		await this.change(this.charges.settle(reservationId, null));
	}

	async now(): Promise<Date> {
		const { rows } = await this.pool.query<{ now: Date }>('SELECT now() AS now');
		return rows[0]!.now;
	}

	async spent(keyId: string, since: Date): Promise<number> {
		return fromMicros((await this.pool.query<{ micros: string }>(KEY_SQL.spent, [keyId, utcDay(since)])).rows[0]!.micros);
	}

	private async change(change: SpendChange | undefined): Promise<void> {
		if (change) await this.changes.submit(change);
	}

	private async key(text: string, values: unknown[]): Promise<ManagedKey | null> {
		const { rows } = await this.pool.query<KeyRow>(text, values);
		return rows[0] ? toManagedKey(rows[0]) : null;
	}

	private async admitAll(batch: Reservation[], since: string, day: string): Promise<Admission[]> {
		const first = batch[0]!;
		// Named: prepared once per connection, not parsed and planned on every call.
		const { rows } = await this.pool.query<{ admitted: boolean; spent: string }>({
			name: 'imagegen-admit-charges',
			text: ADMIT,
			values: [first.keyId, batch.map((each) => toMicros(each.amountUsd)), toMicros(first.limitUsd), since, day],
		});
		return rows.map((row) => (row.admitted ? { admitted: true } : { admitted: false, spentUsd: fromMicros(row.spent) }));
	}

	private async changeAll(batch: SpendChange[]): Promise<void[]> {
		await this.pool.query({
			name: 'imagegen-change-spend',
			text: CHANGE_SPEND,
			values: [batch.map((each) => each.keyId), batch.map((each) => each.day), batch.map((each) => each.micros)],
		});
		return batch.map(() => undefined);
	}
}
