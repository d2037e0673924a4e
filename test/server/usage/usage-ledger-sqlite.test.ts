/** The usage ledger on the data dir's SQLite database, in process: durable records, retries that lose and double nothing, health, exact sums. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlUsageLedger, type SqlUsageLedgerOptions } from '../../../server/src/usage/sql-usage-ledger';
import { eventually } from '../support/http';
import { connectionPerOpen } from '../support/sqlite-data-dir';
import { describeUsageLedgerContract } from '../support/usage-ledger-contract';

let dataDir: string;
const databases: SqliteDatabase[] = [];
const errors: string[] = [];
const log = { error: (_details: object, message: string) => void errors.push(message), info: () => undefined };
const open = (busyTimeoutMs?: number) => {
	const database = openSqliteDatabase(dataDir, { busyTimeoutMs });
	databases.push(database);
	return database;
};
beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-ledger-'));
	errors.length = 0;
});
afterEach(() => {
	for (const database of databases.splice(0)) if (database.open) database.close();
	rmSync(dataDir, { recursive: true, force: true });
});

/** The ledger over its own adapter on `database`, as the service builds it. */
const ledgerOn = (database: SqliteDatabase, options: Partial<SqlUsageLedgerOptions> = {}) => new SqlUsageLedger(new SqliteAdapter(database), { log, ...options });

const entry = (requestId: string, images = 1) => ({ apiKeyId: 'key-a', model: 'p-image', images, costUsd: 0.0035 * images, at: new Date('2030-01-02T03:04:05Z'), requestId });

test('record resolves once the line is committed; another process on the file reads it', async () => {
	const ledger = ledgerOn(open());
	await Promise.all([ledger.record(entry('r1')), ledger.record(entry('r2', 2)), ledger.record({ ...entry('r3'), provider: 'replicate' })]);
	const other = open();
	expect(other.prepare('SELECT request_id, provider FROM usage_lines ORDER BY request_id').all()).toEqual([
		{ request_id: 'r1', provider: null },
		{ request_id: 'r2', provider: null },
		{ request_id: 'r3', provider: 'replicate' },
	]);
	expect(await ledgerOn(other).rows('key-a')).toEqual([{ date: '2030-01-02', model: 'p-image', images: 4, seconds: 0, cost_usd: 0.014 }]);
	expect(ledger.health()).toEqual({ status: 'ok', pending: 0 });
	await ledger.close();
});

test('a write lock held past the busy timeout: the entry is kept and retried, health is degraded, then it is written once', async () => {
	const ledger = ledgerOn(open(20), { retryDelayMs: 20, maxRetryDelayMs: 80 });
	const holder = open();
	holder.exec('BEGIN IMMEDIATE');
	let durable = false;
	const recorded = ledger.record(entry('r1')).then(() => (durable = true));
	// Two failed tries: the first starts the commit thread, which takes a few hundred ms on a busy machine.
	expect(await eventually(() => errors.length >= 2, 5_000, 20)).toBe(true);
	expect(durable).toBe(false);
	expect(ledger.health()).toMatchObject({ status: 'degraded', pending: 1 });
	holder.exec('COMMIT');
	await recorded;
	expect(ledger.health()).toEqual({ status: 'ok', pending: 0 });
	expect(await ledger.rows('key-a')).toEqual([{ date: '2030-01-02', model: 'p-image', images: 1, seconds: 0, cost_usd: 0.0035 }]);
	await ledger.close();
});

test('close waits for queued entries, and gives up (logged, the record rejected) when the lock is never released', async () => {
	const ledger = ledgerOn(open(20), { retryDelayMs: 20, maxRetryDelayMs: 40 });
	const holder = open();
	holder.exec('BEGIN IMMEDIATE');
	const lost = ledger.record(entry('r1'));
	const started = Date.now();
	await ledger.close(300);
	expect(Date.now() - started).toBeLessThan(2_000);
	expect(errors).toContain('usage ledger closed with entries not yet written to the database');
	await expect(lost).rejects.toThrow(/closed before the entry was written to the database: .*locked/);
	holder.exec('ROLLBACK');
});

test('sums of micro-dollars stay exact, a cost is counted to the nearest micro-dollar, and a report reads the day totals, not the lines', async () => {
	const ledger = ledgerOn(open());
	// 40,000 × $0.3 in doubles is 11,999.999999999…; in micro-dollars it is exact. Half a micro-dollar rounds up, less down.
	const many = Array.from({ length: 40_000 }, (_, index) => ({ ...entry(`r${index}`), costUsd: 0.3 }));
	await Promise.all([...many, { ...entry('half'), costUsd: 0.0000005 }, { ...entry('less'), costUsd: 0.000000499 }].map((each) => ledger.record(each)));
	expect(await ledger.rows('key-a')).toEqual([{ date: '2030-01-02', model: 'p-image', images: 40_002, seconds: 0, cost_usd: 12_000.000001 }]);
	const plan = open()
		.prepare("EXPLAIN QUERY PLAN SELECT day, model, images, cost_micros FROM usage_days WHERE api_key_id = 'key-a' AND day >= '0' AND day <= '9' ORDER BY day, model")
		.all() as Array<{ detail: string }>;
	expect(plan.map((step) => step.detail).join('\n')).toMatch(/SEARCH usage_days USING PRIMARY KEY/);
	await ledger.close();
});

describeUsageLedgerContract('SQLite', () => connectionPerOpen('imagegen-ledger-contract-', (database) => ledgerOn(database)));
