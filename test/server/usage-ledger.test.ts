/** The embedded usage ledger in process: durable records, retries that lose and double nothing, health. */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
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

describe('history: old days rolled into exact totals, request ids remembered for a window', () => {
	const at = (day: string, time = '12:00:00') => new Date(`${day}T${time}Z`);
	const line = (day: string, id: string, costUsd = 0.0035, images = 1, key = 'key-a', model = 'p-image') => ({ apiKeyId: key, model, images, costUsd, at: at(day), requestId: id });
	const totalsFile = () => join(dataDir, 'usage-totals.jsonl');
	const openAt = (day: string) => JsonlUsageLedger.open({ dataDir, log, now: () => at(day, '09:00:00') });

	async function recordHistory(): Promise<void> {
		const ledger = await openAt('2030-01-01');
		for (const day of ['2030-01-01', '2030-01-02', '2030-01-03']) {
			for (let index = 0; index < 5; index++) await ledger.record(line(day, `${day}-${index}`, 0.1, 1, index % 2 ? 'key-a' : 'key-b', index % 3 ? 'p-image' : 'textimage-v2'));
		}
		await ledger.close();
	}

	test('days before yesterday leave the journal for a totals file at start; rows stay the same', async () => {
		await recordHistory();
		const before = await (await openAt('2030-01-01')).rows('key-a');
		const ledger = await openAt('2030-01-04');
		expect(await ledger.rows('key-a')).toEqual(before);
		await ledger.close();
		const kept = lines().filter((text) => !text.startsWith('{"journal"'));
		expect(kept.map((text) => JSON.parse(text).t.slice(0, 10))).toEqual(Array(5).fill('2030-01-03'));
		expect(readFileSync(totalsFile(), 'utf8')).toContain('"rolled_before":"2030-01-03"');
		expect(await (await openAt('2030-01-04')).rows('key-a')).toEqual(before);
		expect(await (await openAt('2030-01-04')).rows('key-b')).toEqual(await (await openAt('2030-01-04')).rows('key-b', '2030-01-01'));
	});

	test('a crash between the totals and the journal rewrite counts nothing twice; a late line of a rolled day counts once', async () => {
		await recordHistory();
		const journalBefore = readFileSync(join(dataDir, 'usage.jsonl'));
		const before = await (await openAt('2030-01-01')).rows('key-a');
		await (await openAt('2030-01-04')).close();
		// As if the process died right after the totals were renamed in: the old journal is back.
		writeFileSync(join(dataDir, 'usage.jsonl'), journalBefore);
		const ledger = await openAt('2030-01-04');
		expect(await ledger.rows('key-a')).toEqual(before);
		await ledger.record(line('2030-01-01', 'late', 0.25, 2));
		await ledger.close();
		const after = await (await openAt('2030-01-04')).rows('key-a', '2030-01-01', '2030-01-01');
		const was = before.filter((row) => row.date === '2030-01-01');
		expect(after.reduce((sum, row) => sum + row.images, 0)).toBe(was.reduce((sum, row) => sum + row.images, 0) + 2);
		expect(await (await openAt('2030-01-09')).rows('key-a', '2030-01-01', '2030-01-01')).toEqual(after);
	});

	test('rolls up when the day changes while running, between appends', async () => {
		let now = at('2030-02-01', '10:00:00');
		const ledger = await JsonlUsageLedger.open({ dataDir, log, now: () => now });
		await ledger.record(line('2030-02-01', 'a'));
		now = at('2030-02-03', '00:00:01');
		await ledger.record(line('2030-02-03', 'b'));
		await ledger.record(line('2030-02-03', 'c'));
		await ledger.close();
		expect(readFileSync(totalsFile(), 'utf8')).toContain('"rolled_before":"2030-02-02"');
		expect(lines().filter((text) => text.includes('"t"')).map((text) => JSON.parse(text).id)).toEqual(['b', 'c']);
		expect((await (await JsonlUsageLedger.open({ dataDir, log, now: () => now })).rows('key-a')).map((row) => [row.date, row.images])).toEqual([
			['2030-02-01', 1],
			['2030-02-03', 2],
		]);
	});

	test('sums are exact over many lines, before and after the roll-up', async () => {
		const file = join(dataDir, 'usage.jsonl');
		const text: string[] = [];
		for (let index = 0; index < 100_000; index++) text.push(JSON.stringify({ t: `2030-01-0${1 + (index % 3)}T10:00:00.000Z`, key: 'key-a', model: 'p-image', images: 3, cost_usd: 0.0035 * 3, id: `r${index}` }));
		writeFileSync(file, `${text.join('\n')}\n`);
		const expected = [33_334, 33_333, 33_333].map((count, day) => ({ date: `2030-01-0${day + 1}`, model: 'p-image', images: count * 3, cost_usd: (count * 105) / 10_000 }));
		expect(await (await openAt('2030-01-03')).rows('key-a')).toEqual(expected);
		expect(await (await openAt('2030-01-05')).rows('key-a')).toEqual(expected);
	});

	test('remembers request ids for a window of entry time only, and still counts a repeat within it once', async () => {
		const ledger = await openAt('2030-01-01');
		const start = at('2030-01-01', '00:00:00').getTime();
		for (let index = 0; index < 2_000; index++) await ledger.record({ ...line('2030-01-01', `w${index}`), at: new Date(start + index * 10_000) });
		// 2,000 entries 10 s apart span 5.5 hours: only the last hour's ids are kept.
		expect(ledger.rememberedRequestIds).toBeLessThanOrEqual(361);
		expect(ledger.rememberedRequestIds).toBeGreaterThanOrEqual(360);
		await ledger.record({ ...line('2030-01-01', 'w1999'), at: new Date(start + 1999 * 10_000) });
		expect((await ledger.rows('key-a'))[0]!.images).toBe(2_000);
		await ledger.close();
		const reopened = await openAt('2030-01-01');
		expect(reopened.rememberedRequestIds).toBeLessThanOrEqual(361);
		expect((await reopened.rows('key-a'))[0]!.images).toBe(2_000);
	});

	test('an entry held through an outage longer than the window stays remembered until written, and counts once', async () => {
		const ledger = await JsonlUsageLedger.open({ dataDir, log, now: () => at('2030-01-01', '09:00:00'), initialRetryMs: 20, maxRetryMs: 40 });
		const file = join(dataDir, 'usage.jsonl');
		mkdirSync(file);
		const start = at('2030-01-01', '00:00:00').getTime();
		const first = ledger.record({ ...line('2030-01-01', 'held'), at: new Date(start) });
		// Two hours of entries pile up behind it while the journal cannot be written.
		const later = Array.from({ length: 720 }, (_, index) => ledger.record({ ...line('2030-01-01', `later-${index}`), at: new Date(start + (index + 1) * 10_000) }));
		await new Promise((resolve) => setTimeout(resolve, 100));
		expect(ledger.health()).toMatchObject({ status: 'degraded', pending: 721 });
		// Recorded again (a retried request) after the window has passed on the entries' clock: still once.
		const again = ledger.record({ ...line('2030-01-01', 'held'), at: new Date(start) });
		rmdirSync(file);
		await Promise.all([first, again, ...later]);
		expect(lines().filter((text) => JSON.parse(text).id === 'held')).toHaveLength(1);
		expect((await ledger.rows('key-a'))[0]!.images).toBe(721);
		await ledger.close();
		expect((await (await openAt('2030-01-01')).rows('key-a'))[0]!.images).toBe(721);
	});
});
