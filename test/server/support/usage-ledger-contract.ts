/**
 * What every UsageLedger must do, run against each engine (SQLite in the data dir, PostgreSQL):
 * rows per key, UTC day and model (images, seconds of video, cost), inclusive date bounds, one count
 * per request id, and records that outlive the ledger that wrote them.
 */
import { randomUUID } from 'node:crypto';
import type { UsageEntry, UsageLedger } from '../../../server/src/usage/usage-ledger';

export interface UsageLedgerFixture {
	/** A ledger over this fixture's (empty at first) data; a second call stands for a restart. */
	open(): Promise<UsageLedger>;
	/** Removes what the fixture made (ledgers opened through it are closed by the suite). */
	cleanup(): Promise<void>;
}

const entry = (overrides: Partial<UsageEntry> = {}): UsageEntry => ({
	apiKeyId: 'key-a',
	model: 'p-image',
	images: 1,
	costUsd: 0.0035,
	at: new Date('2030-03-10T12:00:00Z'),
	requestId: randomUUID(),
	...overrides,
});

export function describeUsageLedgerContract(name: string, factory: () => Promise<UsageLedgerFixture>): void {
	describe(`usage ledger contract: ${name}`, () => {
		let fixture: UsageLedgerFixture;
		const opened: UsageLedger[] = [];
		const open = async () => {
			const ledger = await fixture.open();
			opened.push(ledger);
			return ledger;
		};
		beforeEach(async () => {
			fixture = await factory();
		});
		afterEach(async () => {
			for (const ledger of opened.splice(0)) await ledger.close();
			await fixture.cleanup();
		});

		it('adds up images and cost per UTC day and model, ordered by date then model', async () => {
			const ledger = await open();
			await Promise.all([
				ledger.record(entry({ model: 'textimage-v2', costUsd: 0.05 })),
				ledger.record(entry({ images: 2, costUsd: 0.007 })),
				ledger.record(entry()),
				// 23:59:59.999 UTC is still the 10th; midnight UTC is the 11th, whatever the local zone.
				ledger.record(entry({ at: new Date('2030-03-10T23:59:59.999Z') })),
				ledger.record(entry({ at: new Date('2030-03-11T00:00:00.000Z') })),
			]);
			expect(await ledger.rows('key-a')).toEqual([
				{ date: '2030-03-10', model: 'p-image', images: 4, seconds: 0, cost_usd: 0.014 },
				{ date: '2030-03-10', model: 'textimage-v2', images: 1, seconds: 0, cost_usd: 0.05 },
				{ date: '2030-03-11', model: 'p-image', images: 1, seconds: 0, cost_usd: 0.0035 },
			]);
		});

		it('adds up seconds of video per UTC day and model beside images; lines of images alone read 0 seconds', async () => {
			const ledger = await open();
			const video = (seconds: number, overrides: Partial<UsageEntry> = {}) => entry({ model: 'p-video', images: 0, seconds, costUsd: seconds * 0.02, ...overrides });
			await Promise.all([
				ledger.record(video(5)),
				ledger.record(video(10)),
				ledger.record(video(3, { model: 'p-video-next', costUsd: 0.015 })),
				ledger.record(video(7, { at: new Date('2030-03-11T00:00:00.000Z') })),
				// Left out and 0 both mean no video.
				ledger.record(entry()),
				ledger.record(entry({ seconds: 0 })),
				ledger.record(video(4, { apiKeyId: 'key-b' })),
			]);
			expect(await ledger.rows('key-a')).toEqual([
				{ date: '2030-03-10', model: 'p-image', images: 2, seconds: 0, cost_usd: 0.007 },
				{ date: '2030-03-10', model: 'p-video', images: 0, seconds: 15, cost_usd: 0.3 },
				{ date: '2030-03-10', model: 'p-video-next', images: 0, seconds: 3, cost_usd: 0.015 },
				{ date: '2030-03-11', model: 'p-video', images: 0, seconds: 7, cost_usd: 0.14 },
			]);
			expect(await ledger.rows('key-b')).toEqual([{ date: '2030-03-10', model: 'p-video', images: 0, seconds: 4, cost_usd: 0.08 }]);
		});

		it('counts the seconds of a video recorded again under the same request id once', async () => {
			const ledger = await open();
			const once = entry({ model: 'p-video', images: 0, seconds: 8, costUsd: 0.16 });
			await Promise.all([ledger.record(once), ledger.record({ ...once })]);
			await ledger.record(once);
			expect(await ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-video', images: 0, seconds: 8, cost_usd: 0.16 }]);
		});

		it('refuses seconds that are not a whole non-negative number, naming the field', async () => {
			const ledger = await open();
			for (const seconds of [1.5, -1, Number.NaN, Number.POSITIVE_INFINITY, 2_147_483_648]) {
				await expect(ledger.record(entry({ model: 'p-video', images: 0, seconds }))).rejects.toThrow(/seconds must be a non-negative integer/);
			}
			expect(await ledger.rows('key-a')).toEqual([]);
		});

		it('stamps an entry recorded without its time with the ledger clock: it counts today', async () => {
			const ledger = await open();
			const before = new Date().toISOString().slice(0, 10);
			await ledger.record({ apiKeyId: 'key-now', model: 'p-image', images: 1, costUsd: 0.0035, requestId: randomUUID() });
			const after = new Date().toISOString().slice(0, 10);
			const rows = await ledger.rows('key-now');
			expect(rows).toHaveLength(1);
			expect([before, after]).toContain(rows[0]!.date);
		});

		it('keeps keys apart and answers no rows for a key that never generated', async () => {
			const ledger = await open();
			await ledger.record(entry({ apiKeyId: 'key-b' }));
			expect(await ledger.rows('key-a')).toEqual([]);
			expect(await ledger.rows('key-b')).toHaveLength(1);
		});

		it('bounds rows by from and to, both inclusive', async () => {
			const ledger = await open();
			for (const day of ['2030-03-09', '2030-03-10', '2030-03-11', '2030-03-12']) await ledger.record(entry({ at: new Date(`${day}T08:00:00Z`) }));
			const dates = async (from?: string, to?: string) => (await ledger.rows('key-a', from, to)).map((row) => row.date);
			expect(await dates('2030-03-10', '2030-03-11')).toEqual(['2030-03-10', '2030-03-11']);
			expect(await dates('2030-03-11')).toEqual(['2030-03-11', '2030-03-12']);
			expect(await dates(undefined, '2030-03-09')).toEqual(['2030-03-09']);
			expect(await dates('2031-01-01')).toEqual([]);
		});

		it('counts an entry recorded again under the same request id once', async () => {
			const ledger = await open();
			const once = entry({ images: 3, costUsd: 0.0105 });
			await Promise.all([ledger.record(once), ledger.record(once)]);
			await ledger.record(once);
			expect(await ledger.rows('key-a')).toEqual([{ date: '2030-03-10', model: 'p-image', images: 3, seconds: 0, cost_usd: 0.0105 }]);
		});

		it('reports ok health with nothing pending once records resolved', async () => {
			const ledger = await open();
			await ledger.record(entry());
			expect(ledger.health()).toMatchObject({ status: 'ok', pending: 0 });
		});

		it('keeps every record for the next ledger on the same data (a restart)', async () => {
			const first = await open();
			const once = entry();
			await Promise.all([first.record(once), first.record(entry({ model: 'textimage-v2', costUsd: 0.05 }))]);
			const before = await first.rows('key-a');
			await first.close();
			opened.splice(opened.indexOf(first), 1);
			const second = await open();
			expect(await second.rows('key-a')).toEqual(before);
			// The request id is remembered across the restart too.
			await second.record(once);
			expect(await second.rows('key-a')).toEqual(before);
		});
	});
}
