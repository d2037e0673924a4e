/**
 * Months of history must not stop the service from starting: the quick variant of
 * bench/history.mjs starts the real CLI, with its heap capped below the size of the history, on
 * idempotency answers in the data dir's database and on a usage ledger over 60 days (repeated
 * lines, a torn last line). Keeping the answers or every request id in memory runs out of heap;
 * bodies read from the database only for a replay do not.
 * Every start is checked: sampled replays byte for byte, usage totals exact per key, day and model.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BENCH = join(__dirname, '..', '..', 'bench', 'history.mjs');

test('a history larger than the heap starts, replays byte for byte and keeps totals exact, twice', async () => {
	const { stdout } = await run(process.execPath, [BENCH, '--answers-mb', '64', '--ledger-lines', '300000', '--days', '60', '--heap-mb', '64'], { maxBuffer: 1 << 20 });
	const result = JSON.parse(stdout.trim().split('\n').pop()!);
	for (const start of [result.idempotency.first, result.idempotency.again]) {
		expect(start.replaysChecked).toBeGreaterThan(5);
		expect(start.replaysMatched).toBe(start.replaysChecked);
	}
	for (const start of [result.ledger.first, result.ledger.again]) {
		// 3 keys × 60 days (each key generates with one model).
		expect(start.rows).toBe(3 * 60);
		expect(start.exact).toBe(true);
	}
}, 240_000);
