/**
 * A budget's reservations, one rule for both databases: inside one transaction the key's row is
 * locked (PostgreSQL: `FOR UPDATE`; SQLite's IMMEDIATE transaction holds the whole database), the
 * period's spend is summed, generations in flight included, and each price is reserved only while
 * spent + price ≤ limit. The reservations of every process and replica on the database are
 * therefore made one after another, and a key never spends past its limit.
 *
 * The sum is a statement of its own after the lock: under PostgreSQL's READ COMMITTED each
 * statement reads a fresh snapshot, so it sees every reservation committed by whoever held the
 * lock before; a sum in the locking statement would read the rows as they were before the wait.
 */
import { fromMicros, toMicros } from '../../../core/units';
import type { SqlAdapter } from '../db/sql-adapter';
import type { Admission, Reservation } from './key-store';
import { KEY_SQL } from './key-rows';

/** Reservations of one key, limit, period and day, decided in order: each counts those reserved before it. */
export interface ReservationBatch {
	keyId: string;
	limitUsd: number;
	/** The budget period's first UTC day (YYYY-MM-DD). */
	since: string;
	/** The UTC day the prices are reserved on. */
	day: string;
	reservations: readonly Reservation[];
}

export function reserveInOrder(adapter: SqlAdapter, batch: ReservationBatch): Promise<Admission[]> {
	const lockKey = `SELECT id FROM api_keys WHERE id = $1 ${adapter.forUpdate}`;
	return adapter.transaction(async (transaction) => {
		await transaction.one(lockKey, [batch.keyId]);
		let spent = Number((await transaction.one<{ micros: number | string }>(KEY_SQL.spent, [batch.keyId, batch.since]))!.micros);
		const limit = toMicros(batch.limitUsd);
		let reserved = 0;
		const admissions = batch.reservations.map((reservation): Admission => {
			const price = toMicros(reservation.amountUsd);
			if (spent + price > limit) return { admitted: false, spentUsd: fromMicros(spent) };
			spent += price;
			reserved += price;
			return { admitted: true };
		});
		if (reserved > 0) await transaction.run(KEY_SQL.addSpend, [batch.keyId, batch.day, reserved]);
		return admissions;
	});
}
