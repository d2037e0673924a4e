/**
 * Months of history must not slow or swell the service's start: the quick variant of
 * bench/history-startup.mjs fills a data dir's database with idempotent answers in retention and
 * usage lines over 60 days, then starts the real CLI on it twice. Every start is checked: sampled
 * replays byte for byte, usage totals exact per day and model, and its size flat against an empty
 * data dir (answers stay in the database until a replay asks for one).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BENCH = join(__dirname, '..', '..', '..', 'bench', 'history-startup.mjs');

test('a long history starts as fast and as small as an empty data dir, replays byte for byte and keeps totals exact, twice', async () => {
	const { stdout } = await run(process.execPath, [BENCH, '--idempotency-records', '200000', '--usage-lines', '300000', '--days', '60'], { maxBuffer: 1 << 20 });
	const result = JSON.parse(stdout.trim().split('\n').pop()!);
	expect(result.skipped).toBeUndefined();
	for (const start of [result.first, result.again]) {
		expect(start.replaysChecked).toBeGreaterThan(5);
		expect(start.replaysMatched).toBe(start.replaysChecked);
		// 3 models a day over 60 days.
		expect(start.usageRows).toBe(3 * 60);
		expect(start.usageExact).toBe(true);
		expect(start.startMs).toBeLessThan(10_000);
		expect(start.peakRssMb).toBeLessThan(result.baseline.peakRssMb + 40);
	}
}, 240_000);
