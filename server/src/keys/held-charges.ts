/**
 * What this process charged for generations still running, by reservation id: the charge is made
 * at admission, so settling or releasing one only writes the difference to its day, once.
 */
import { toMicros } from '../../../core/units';

/** An amount (positive: a charge, negative: a refund) on one key's UTC day. */
export interface SpendChange {
	keyId: string;
	day: string;
	micros: number;
}

export class HeldCharges {
	private readonly held = new Map<string, SpendChange>();

	hold(reservationId: string, charge: SpendChange): void {
		this.held.set(reservationId, charge);
	}

	/**
	 * The change that turns the charge into `costUsd` (null: refunded); undefined when there is
	 * nothing to write (already settled or released, or the cost is the price charged).
	 */
	settle(reservationId: string, costUsd: number | null): SpendChange | undefined {
		const charge = this.held.get(reservationId);
		if (!charge) return undefined;
		this.held.delete(reservationId);
		const difference = (costUsd === null ? 0 : toMicros(costUsd)) - charge.micros;
		return difference === 0 ? undefined : { ...charge, micros: difference };
	}
}

export const utcDay = (date: Date): string => date.toISOString().slice(0, 10);
