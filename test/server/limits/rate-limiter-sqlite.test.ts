/**
 * Rate limits in the data dir's database: the contract, and what only sharing one file shows —
 * three connections (three processes) admit together exactly the limit, peeks write nothing, and
 * idle buckets are deleted in bounded batches so client addresses never grow the table for ever.
 */
import { FORGET_BATCH } from '../../../server/src/limits/bucket-rows';
import { SqlRateLimiter } from '../../../server/src/limits/sql-rate-limiter';
import type { RateDecision } from '../../../server/src/limits/rate-limiter';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { describeRateLimiterContract } from '../support/rate-limiter-contract';
import { useSqliteDataDir } from '../support/sqlite-data-dir';

const dataDir = useSqliteDataDir('imagegen-rate-limits-');
const limiters: SqlRateLimiter[] = [];
afterEach(async () => {
	// Before the data dir's hook closes the databases: a forgetting may still be under way.
	for (const limiter of limiters.splice(0)) await limiter.close();
});

function open(perMinute: number, now: () => number, database = dataDir.openDatabase()): SqlRateLimiter {
	const limiter = new SqlRateLimiter(new SqliteAdapter(database), perMinute, { now });
	limiters.push(limiter);
	return limiter;
}

describeRateLimiterContract('SQLite', async (perMinute, now) => open(perMinute, now));

const allowed = (decisions: RateDecision[]) => decisions.filter((decision) => decision.allowed).length;

describe('SQLite rate limiter on one data dir', () => {
	let now = Date.parse('2030-01-01T00:00:00Z');
	const clock = () => now;

	it('three connections taking 300 at once admit exactly 60 of a 60/min limit, and each sees the others\' takes', async () => {
		const processes = [open(60, clock), open(60, clock), open(60, clock)];
		const decisions = await Promise.all(Array.from({ length: 300 }, (_, index) => processes[index % 3]!.take('key-a')));
		expect(allowed(decisions)).toBe(60);
		for (const limiter of processes) expect(await limiter.peek('key-a')).toEqual({ allowed: false, retryAfterSeconds: 1 });
		now += 1000;
		expect((await processes[2]!.take('key-a')).allowed).toBe(true);
		expect((await processes[0]!.take('key-a')).allowed).toBe(false);
	});

	it('peek and an unlimited take write no row', async () => {
		const database = dataDir.openDatabase();
		const limiter = open(0, clock, database);
		await limiter.take('key-a');
		await limiter.peek('key-a', 5);
		expect(database.prepare('SELECT count(*) AS n FROM rate_limit_buckets').get()).toEqual({ n: 0 });
	});

	it('deletes buckets idle for a minute in batches, keeping the ones still refilling', async () => {
		const database = dataDir.openDatabase();
		const limiter = open(2, clock, database);
		const transactions: number[] = [];
		const idle = 2 * FORGET_BATCH + 7;
		for (let address = 0; address < idle; address++) await limiter.take(`auth-failures:198.51.100.${address}`);
		now += 59_000;
		await limiter.take('key-recent');
		await limiter.take('key-recent');
		now += 2_000;
		const group = groupCommitOf(database);
		const write = group.write.bind(group);
		group.write = (work, options) => {
			transactions.push(1);
			return write(work, options);
		};
		expect(await limiter.forgetIdle()).toBe(idle);
		// Each batch its own transaction: the write lock is never held for the whole sweep.
		expect(transactions.length).toBe(3);
		const rows = database.prepare<[], { bucket: string }>('SELECT bucket FROM rate_limit_buckets ORDER BY bucket').all();
		expect(rows.map((row) => row.bucket)).toEqual(['key-recent']);
		// What was kept still counts: emptied 2 s ago, it has not refilled a token yet.
		expect((await limiter.take('key-recent')).allowed).toBe(false);
	});

	it('a take forgets idle buckets by itself at most once a minute, without waiting for it', async () => {
		const database = dataDir.openDatabase();
		const limiter = open(1, clock, database);
		const count = () => (database.prepare('SELECT count(*) AS n FROM rate_limit_buckets').get() as { n: number }).n;
		for (let address = 0; address < 20; address++) await limiter.take(`client-${address}`);
		now += 61_000;
		await limiter.take('later-1');
		await limiter.close();
		expect(count()).toBe(1);
		for (let address = 0; address < 20; address++) await limiter.take(`client-${address}`);
		now += 30_000;
		await limiter.take('later-2');
		await limiter.close();
		// Less than a minute since the last look: the 20 stay until the next one.
		expect(count()).toBe(22);
		now += 31_000;
		await limiter.take('later-3');
		await limiter.close();
		expect(count()).toBe(2);
	});
});
