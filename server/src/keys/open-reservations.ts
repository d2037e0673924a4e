/**
 * What this process reserved for generations still running, by reservation id: the price is added
 * to the key's spend at admission, so settling or releasing one only writes the difference to its
 * day, once.
 */
import { toMicros } from '../../../core/units';

/** An amount (positive: added to spend, negative: given back) on one key's UTC day. */
export interface SpendChange {
	keyId: string;
	day: string;
	micros: number;
}

export class OpenReservations {
	private readonly open = new Map<string, SpendChange>();

	add(reservationId: string, reserved: SpendChange): void {
		this.open.set(reservationId, reserved);
	}

	/**
	 * The change that turns the reserved price into `costUsd` (null: released, the whole price given
	 * back); undefined when there is nothing to write (already settled or released, not reserved
	 * here, or the cost is the price reserved).
	 */
	close(reservationId: string, costUsd: number | null): SpendChange | undefined {
		const reserved = this.open.get(reservationId);
		if (!reserved) return undefined;
		this.open.delete(reservationId);
		const difference = (costUsd === null ? 0 : toMicros(costUsd)) - reserved.micros;
		return difference === 0 ? undefined : { ...reserved, micros: difference };
	}
}

export const utcDay = (date: Date): string => date.toISOString().slice(0, 10);

/**
 * The changes summed per key and day (those that cancel out dropped), in key and day order: rows
 * are then locked in one order, so two processes writing the same keys never wait on each other
 * in a circle.
 */
export function sumByKeyAndDay(changes: readonly SpendChange[]): SpendChange[] {
	const sums = new Map<string, SpendChange>();
	for (const change of changes) {
		const group = `${change.keyId}\u0000${change.day}`;
		const sum = sums.get(group);
		if (sum) sum.micros += change.micros;
		else sums.set(group, { ...change });
	}
	return [...sums.entries()]
		.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
		.map(([, sum]) => sum)
		.filter((sum) => sum.micros !== 0);
}
