/**
 * What migration 7 (amounts in micro-dollars) must answer on either engine for the same history
 * written before it (db/money-upgrade.test.ts, sqlite/money-upgrade.test.ts): each amount rounded
 * half up to the micro-dollar, key-a's limit of $0.0105 and spend of $0.007 kept.
 */
import type { KeyStore } from '../../../server/src/keys/key-store';

/** key-a's usage report: each day total rounded, not the sum of the rounded lines (3 × 2 µ$ ≠ 5 µ$). */
export const UPGRADED_DAYS = [
	{ date: '2030-03-10', model: 'p-image', images: 3, cost_usd: 0.000005 },
	{ date: '2030-03-10', model: 'textimage-v2', images: 2, cost_usd: 0.012346 },
	{ date: '2030-03-11', model: 'p-image', images: 2, cost_usd: 0.007 },
];

/** Each line's request id and micro-dollars. */
export const UPGRADED_LINES = [
	['r1', 2],
	['r2', 2],
	['r3', 2],
	['r4', 12_346],
	['r5', 0],
	['r6', 7_000],
];

/** The budget kept: $0.007 spent of $0.0105, so one more $0.0035 fits and a second does not. */
export async function expectBudgetKept(keys: KeyStore): Promise<void> {
	expect((await keys.get('key-a'))!.budget).toEqual({ limitUsd: 0.0105, period: 'total' });
	expect(await keys.spent('key-a', new Date(0))).toBe(0.007);
	const reservation = { keyId: 'key-a', amountUsd: 0.0035, limitUsd: 0.0105, since: new Date(0) };
	expect(await keys.reserve({ ...reservation, id: 'fits' })).toEqual({ admitted: true });
	expect(await keys.reserve({ ...reservation, id: 'over' })).toEqual({ admitted: false, spentUsd: 0.0105 });
}
