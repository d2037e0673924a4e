/** The embedded usage ledger in process: durable records, retries that lose and double nothing, health. */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonlUsageLedger } from '../../server/src/usage/jsonl-usage-ledger';
import { describeUsageLedgerContract } from './support/usage-ledger-contract';

let dataDir: string;
const errors: string[] = [];
const log = { error: (_details: object, message: string) => void errors.push(message), info: () => undefined };
beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-ledger-'));
	errors.length = 0;
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const entry = (requestId: string, images = 1) => ({ apiKeyId: 'key-a', model: 'p-image', images, costUsd: 0.0035 * images, at: new Date('2030-01-02T03:04:05Z'), requestId });
const lines = () => readFileSync(join(dataDir, 'usage.jsonl'), 'utf8').split('\n').filter((line) => line.trim() !== '');

test('record resolves once the line is on disk; rows add up per day and model', async () => {
	const ledger = await JsonlUsageLedger.open({ dataDir, log });
	await Promise.all([ledger.record(entry('r1')), ledger.record(entry('r2', 2)), ledger.record(entry('r3'))]);
	expect(lines()).toHaveLength(3);
	expect(await ledger.rows('key-a')).toEqual([{ date: '2030-01-02', model: 'p-image', images: 4, cost_usd: 0.014 }]);
	expect(await ledger.rows('key-b')).toEqual([]);
	expect(ledger.health()).toEqual({ status: 'ok', pending: 0 });
	await ledger.close();
});

test('on load, a line repeated by a retried append counts once and a torn line is skipped', async () => {
	const file = join(dataDir, 'usage.jsonl');
	const line = JSON.stringify({ t: '2030-01-02T03:04:05.000Z', key: 'key-a', model: 'p-image', images: 1, cost_usd: 0.0035, id: 'same' });
	appendFileSync(file, `${line}\n{"t":"2030-01-02T03:04:05.000Z","key":"ke\n${line}\n`);
	const ledger = await JsonlUsageLedger.open({ dataDir, log });
	expect(await ledger.rows('key-a')).toEqual([{ date: '2030-01-02', model: 'p-image', images: 1, cost_usd: 0.0035 }]);
	await ledger.close();
});

test('a failing append keeps the entry, retries with backoff, reports degraded, and recovers without loss', async () => {
	const ledger = await JsonlUsageLedger.open({ dataDir, log, initialRetryMs: 20, maxRetryMs: 80 });
	const file = join(dataDir, 'usage.jsonl');
	mkdirSync(file);
	let durable = false;
	const recorded = ledger.record(entry('r1')).then(() => (durable = true));
	await new Promise((resolve) => setTimeout(resolve, 200));
	expect(durable).toBe(false);
	expect(ledger.health()).toMatchObject({ status: 'degraded', pending: 1 });
	expect(errors.length).toBeGreaterThanOrEqual(3);
	expect((await ledger.rows('key-a'))[0]!.images).toBe(1);

	rmdirSync(file);
	await recorded;
	expect(ledger.health()).toEqual({ status: 'ok', pending: 0 });
	expect(lines().map((text) => JSON.parse(text).id)).toEqual(['r1']);
	await ledger.close();
});

test('close waits for queued lines, and gives up (logged) when the store stays broken', async () => {
	const ledger = await JsonlUsageLedger.open({ dataDir, log, initialRetryMs: 20, maxRetryMs: 40 });
	mkdirSync(join(dataDir, 'usage.jsonl'));
	void ledger.record(entry('r1'));
	const started = Date.now();
	await ledger.close(300);
	expect(Date.now() - started).toBeLessThan(2_000);
	expect(errors).toContain('usage lines could not be written before shutdown');
});

describeUsageLedgerContract('JSON lines', async () => {
	const directory = mkdtempSync(join(tmpdir(), 'imagegen-ledger-contract-'));
	return {
		open: () => JsonlUsageLedger.open({ dataDir: directory, log }),
		cleanup: async () => rmSync(directory, { recursive: true, force: true }),
	};
});
