/**
 * The usage ledger on PostgreSQL: two ledgers on one database are two replicas, and each reports the
 * generations of both. A database that refuses writes delays entries (retried, logged, health
 * degraded) but never loses or double-counts them.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqlUsageLedger, type SqlUsageLedgerOptions } from '../../../server/src/usage/sql-usage-ledger';
import { openDatabase, type Database } from '../../../server/src/db/postgres/postgres';
import type { UsageEntry } from '../../../server/src/usage/usage-ledger';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';
import { describeUsageLedgerContract } from '../support/usage-ledger-contract';

const postgres = usePostgresCluster();
let url: string;
const opened: Array<{ ledger: SqlUsageLedger; database: Database }> = [];
beforeEach(async () => {
	url = await postgres.createDatabase();
});
afterEach(async () => {
	for (const { ledger, database } of opened.splice(0)) {
		await ledger.close();
		await database.close();
	}
});

function errorLog() {
	const errors: Array<{ details: Record<string, unknown>; message: string }> = [];
	return { errors, error: (details: object, message: string) => void errors.push({ details: details as Record<string, unknown>, message }) };
}

async function replica(options: Partial<SqlUsageLedgerOptions> = {}) {
	const log = errorLog();
	const database = await openDatabase(url);
	const ledger = new SqlUsageLedger(database, { log, retryDelayMs: 20, maxRetryDelayMs: 100, ...options });
	opened.push({ ledger, database });
	return { ledger, log, database };
}

/** A replica that keeps what PostgreSQL cannot take in `dataDir`, started as the service starts it. */
async function replicaKeepingIn(dataDir: string, options: Partial<SqlUsageLedgerOptions> = {}) {
	const started = await replica({ pendingDir: dataDir, ...options });
	await started.ledger.start();
	return started;
}

const pendingFiles = (dataDir: string) => readdirSync(dataDir).filter((name) => name.startsWith('usage-pending-'));

function entry(overrides: Partial<UsageEntry> = {}): UsageEntry {
	return { apiKeyId: 'key-a', model: 'p-image', images: 1, costUsd: 0.005, at: new Date('2030-03-10T12:00:00Z'), requestId: randomUUID(), ...overrides };
}

async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (!(await condition())) {
		if (Date.now() > deadline) throw new Error('condition not met in time');
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
}

describe('usage ledger on PostgreSQL', () => {
	it('any replica reports the generations of all, per UTC day and model, between dates inclusive', async () => {
		const a = await replica();
		const b = await replica();
		await Promise.all([
			a.ledger.record(entry({ images: 2, costUsd: 0.01 })),
			b.ledger.record(entry({ images: 1, costUsd: 0.005 })),
			b.ledger.record(entry({ model: 'textimage-v2', images: 4, costUsd: 0.32 })),
			a.ledger.record(entry({ at: new Date('2030-03-10T23:59:59.999Z'), costUsd: 0.000_000_4 })),
			b.ledger.record(entry({ at: new Date('2030-03-11T00:00:00.000Z'), costUsd: 0.1 + 0.2 })),
			a.ledger.record(entry({ apiKeyId: 'key-b', images: 9 })),
		]);
		const expected = [
			{ date: '2030-03-10', model: 'p-image', images: 4, seconds: 0, cost_usd: 0.015 },
			{ date: '2030-03-10', model: 'textimage-v2', images: 4, seconds: 0, cost_usd: 0.32 },
			{ date: '2030-03-11', model: 'p-image', images: 1, seconds: 0, cost_usd: 0.3 },
		];
		expect(await a.ledger.rows('key-a')).toEqual(expected);
		expect(await b.ledger.rows('key-a')).toEqual(expected);
		expect(await b.ledger.rows('key-a', '2030-03-11')).toEqual(expected.slice(2));
		expect(await b.ledger.rows('key-a', undefined, '2030-03-10')).toEqual(expected.slice(0, 2));
		expect(await b.ledger.rows('key-a', '2030-03-10', '2030-03-10')).toEqual(expected.slice(0, 2));
		expect(await b.ledger.rows('key-a', '2030-03-12', '2030-12-31')).toEqual([]);
		expect(await a.ledger.rows('key-b')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 9, seconds: 0, cost_usd: 0.005 }]);
		expect(await a.ledger.rows('key-nobody')).toEqual([]);
	});

	it('an entry recorded again (a retried request, on any replica, even in one batch) counts once', async () => {
		const a = await replica();
		const b = await replica();
		const once = entry({ images: 3 });
		await Promise.all([a.ledger.record(once), a.ledger.record(once), b.ledger.record(once)]);
		await a.ledger.record(once);
		expect(await b.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 3, seconds: 0, cost_usd: 0.005 }]);
	});

	it('loses nothing under a burst', async () => {
		const a = await replica();
		await Promise.all(Array.from({ length: 1234 }, () => a.ledger.record(entry({ costUsd: 0.001 }))));
		expect(await a.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 1234, seconds: 0, cost_usd: 1.234 }]);
		expect(a.ledger.health()).toEqual({ status: 'ok', pending: 0 });
	});

	it('keeps and retries entries while the table cannot be written, degraded until they land once', async () => {
		const a = await replica();
		const b = await replica();
		expect(a.ledger.health()).toEqual({ status: 'ok', pending: 0 });
		await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');

		let durable = false;
		const recording = a.ledger.record(entry({ images: 2 })).then(() => (durable = true));
		const second = a.ledger.record(entry({ model: 'p-image-edit' }));
		await eventually(() => a.log.errors.length >= 3);
		expect(durable).toBe(false);
		const health = a.ledger.health();
		expect(health).toMatchObject({ status: 'degraded', pending: 2 });
		expect(health.lastError).toMatch(/usage_days/);
		expect(a.log.errors[0]!.message).toMatch(/retrying/);
		expect(a.log.errors.map((logged) => logged.details.attempt)).toEqual(expect.arrayContaining([1, 2, 3]));

		// Meanwhile the other replica's reads fail loudly rather than answering a wrong total.
		await expect(b.ledger.rows('key-a')).rejects.toThrow(/usage_days/);

		await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');
		await recording;
		await second;
		expect(a.ledger.health()).toEqual({ status: 'ok', pending: 0 });
		expect(await b.ledger.rows('key-a')).toEqual([
			{ date: '2030-03-10', model: 'p-image', images: 2, seconds: 0, cost_usd: 0.005 },
			{ date: '2030-03-10', model: 'p-image-edit', images: 1, seconds: 0, cost_usd: 0.005 },
		]);
	});

	it('close waits for queued entries; past its timeout it logs them and fails their record()', async () => {
		const a = await replica({ closeTimeoutMs: 10_000 });
		await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');
		const recorded = a.ledger.record(entry());
		await eventually(() => a.ledger.health().status === 'degraded');
		const closing = a.ledger.close();
		await new Promise((resolve) => setTimeout(resolve, 200));
		await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');
		await closing;
		await recorded;
		await expect(a.ledger.record(entry())).rejects.toThrow(/closed/);

		const b = await replica({ closeTimeoutMs: 300 });
		await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');
		const lost = b.ledger.record(entry());
		lost.catch(() => undefined);
		// Once a write has failed, the connection is up: no insert still connecting can land after close.
		await eventually(() => b.ledger.health().status === 'degraded');
		await b.ledger.close();
		await expect(lost).rejects.toThrow(/closed before the entry was written/);
		expect(b.log.errors.at(-1)).toMatchObject({ message: expect.stringMatching(/closed with entries not yet written/), details: { pending: 1 } });
		await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');
		expect(await b.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 1, seconds: 0, cost_usd: 0.005 }]);
	});

	it('a shutdown during an outage keeps the unwritten entries on disk; the next start writes them, once', async () => {
		const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-pending-'));
		try {
			const a = await replicaKeepingIn(dataDir, { closeTimeoutMs: 300 });
			await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');
			const kept = entry({ images: 3 });
			const recorded = a.ledger.record(kept);
			await eventually(() => a.ledger.health().status === 'degraded');
			await a.ledger.close();
			// Kept, not failed: the line is on this replica's disk.
			await expect(recorded).resolves.toBeUndefined();
			expect(a.log.errors.at(-1)).toMatchObject({ message: expect.stringMatching(/kept on disk/), details: { kept: 1 } });
			const files = pendingFiles(dataDir);
			expect(files).toHaveLength(1);
			expect(readFileSync(join(dataDir, files[0]!), 'utf8')).toContain(kept.requestId);
			const copy = mkdtempSync(join(tmpdir(), 'imagegen-pending-copy-'));
			cpSync(dataDir, copy, { recursive: true });

			await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');
			const b = await replicaKeepingIn(dataDir);
			await eventually(async () => (await b.ledger.rows('key-a')).length > 0);
			expect(await b.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 3, seconds: 0, cost_usd: 0.005 }]);
			await eventually(() => pendingFiles(dataDir).length === 0);

			// The same file found again (a copy restored from a backup): the request id counts once.
			const c = await replicaKeepingIn(copy);
			await eventually(() => pendingFiles(copy).length === 0);
			expect(await c.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 3, seconds: 0, cost_usd: 0.005 }]);
			rmSync(copy, { recursive: true, force: true });
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it('video lines kept on disk during an outage keep their seconds; the next start sums them in one write', async () => {
		const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-pending-'));
		try {
			const a = await replicaKeepingIn(dataDir, { closeTimeoutMs: 300 });
			await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');
			const recorded = [12, 8].map((seconds) => a.ledger.record(entry({ model: 'p-video', images: 0, seconds, costUsd: seconds * 0.02 })));
			await eventually(() => a.ledger.health().pending === 2);
			await a.ledger.close();
			await expect(Promise.all(recorded)).resolves.toEqual([undefined, undefined]);
			await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');

			// Both kept lines go in one statement: their seconds are summed per day and model there.
			const b = await replicaKeepingIn(dataDir);
			await eventually(async () => (await b.ledger.rows('key-a')).length > 0);
			expect(await b.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-video', images: 0, seconds: 20, cost_usd: 0.4 }]);
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it('entries are on disk from the first failed write, so a replica that dies during an outage loses none', async () => {
		const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-pending-'));
		const afterCrash = mkdtempSync(join(tmpdir(), 'imagegen-pending-crash-'));
		try {
			const a = await replicaKeepingIn(dataDir);
			await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');
			const first = entry({ model: 'p-image-edit' });
			const second = entry({ model: 'textimage-v2' });
			void a.ledger.record(first);
			void a.ledger.record(second);
			await eventually(() => pendingFiles(dataDir).some((name) => readFileSync(join(dataDir, name), 'utf8').includes(second.requestId)));
			// What a crash right now leaves behind: the data dir as it is.
			cpSync(dataDir, afterCrash, { recursive: true });
			await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');

			const b = await replicaKeepingIn(afterCrash);
			await eventually(async () => (await b.ledger.rows('key-a')).length === 2);
			// The replica that did not die writes its queue too; each request still counts once.
			await eventually(() => a.ledger.health().pending === 0);
			await eventually(() => pendingFiles(dataDir).length === 0 && pendingFiles(afterCrash).length === 0);
			expect(await b.ledger.rows('key-a')).toEqual([
				{ date: '2030-03-10', model: 'p-image-edit', images: 1, seconds: 0, cost_usd: 0.005 },
				{ date: '2030-03-10', model: 'textimage-v2', images: 1, seconds: 0, cost_usd: 0.005 },
			]);
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
			rmSync(afterCrash, { recursive: true, force: true });
		}
	});

	it('entries kept during an outage and written while closing leave no file behind', async () => {
		const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-pending-'));
		try {
			const a = await replicaKeepingIn(dataDir, { closeTimeoutMs: 10_000 });
			await postgres.admin(url, 'ALTER TABLE usage_days RENAME TO usage_days_away');
			const recorded = a.ledger.record(entry());
			await eventually(() => pendingFiles(dataDir).length === 1);
			const closing = a.ledger.close();
			await new Promise((resolve) => setTimeout(resolve, 200));
			await postgres.admin(url, 'ALTER TABLE usage_days_away RENAME TO usage_days');
			await closing;
			await recorded;
			expect(pendingFiles(dataDir)).toEqual([]);
			expect(await a.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 1, seconds: 0, cost_usd: 0.005 }]);
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it('a damaged line in a kept file (a write cut off by a crash) is skipped and reported, the others are written', async () => {
		const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-pending-'));
		try {
			const good = entry({ images: 4 });
			const line = JSON.stringify({ requestId: good.requestId, apiKeyId: good.apiKeyId, model: good.model, images: good.images, costUsd: good.costUsd, at: good.at!.toISOString(), recordedAt: new Date().toISOString() });
			writeFileSync(join(dataDir, 'usage-pending-crashed.jsonl'), `${line}\n{"requestId":"cut-o`);
			const b = await replicaKeepingIn(dataDir);
			await eventually(async () => (await b.ledger.rows('key-a')).length === 1);
			expect(await b.ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 4, seconds: 0, cost_usd: 0.005 }]);
			expect(b.log.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/damaged line/), details: expect.objectContaining({ line: 2 }) })]);
			await eventually(() => pendingFiles(dataDir).length === 0);
		} finally {
			rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it('refuses malformed entries at once instead of queueing what can never be written', async () => {
		const a = await replica();
		const bad: Array<Partial<UsageEntry>> = [
			{ requestId: '' },
			{ apiKeyId: 'a\u0000b' },
			{ model: 'x'.repeat(1001) },
			{ images: 1.5 },
			{ images: -1 },
			{ costUsd: Number.NaN },
			{ costUsd: Number.POSITIVE_INFINITY },
			{ costUsd: -0.01 },
			{ at: new Date('nonsense') },
		];
		for (const overrides of bad) {
			await expect(a.ledger.record(entry(overrides))).rejects.toThrow(TypeError);
		}
		expect(a.ledger.health()).toEqual({ status: 'ok', pending: 0 });
		expect(await a.ledger.rows('key-a')).toEqual([]);
	});
});

describeUsageLedgerContract('PostgreSQL', () => poolPerOpen(postgres, (database) => new SqlUsageLedger(database, { log: errorLog() })));
