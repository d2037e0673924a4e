/**
 * A retention sweep: the rows a condition selects deleted in batches, each its own short write, so
 * SQLite's write lock is never held for long and the event loop gets a turn between them; then the
 * freed space is given back where the engine does not do it itself.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SqlAdapter } from './sql-adapter';

/** Rows deleted per write. */
export const SWEEP_BATCH = 500;

/**
 * Deletes every row of `table` (keyed by `id`) that `where` selects, `where`'s parameters being
 * `values`; answers how many went. Committed, not synced: a sweep a power cut undid is made again
 * by the next one.
 */
export async function sweepRows(adapter: SqlAdapter, table: string, where: string, values: readonly unknown[]): Promise<number> {
	const batch = `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${where} LIMIT $${values.length + 1})`;
	let removed = 0;
	for (;;) {
		const { changes } = await adapter.write([{ sql: batch, values: [...values, SWEEP_BATCH] }], { durable: false });
		removed += changes;
		if (changes < SWEEP_BATCH) break;
		await nextTurn();
	}
	if (removed > 0) await adapter.reclaimSpace();
	return removed;
}
