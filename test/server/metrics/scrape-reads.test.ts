/**
 * What the metrics read at each scrape, on the exporter itself with the reads handed in: the
 * database's condition as one state at 1, and what a scrape says when a read fails or does not
 * answer (the database down, a data dir gone): that family reads NaN, imagegen_database_up 0, and
 * the rest of the scrape is there, since an operator needs it most then.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrometheusMetrics } from '../../../server/src/metrics/prometheus-metrics';
import { readScrape } from './support/scrape';

const JOBS = { queued: 1, running: 2, succeeded: 3, failed: 0, canceled: 0 };

it('imagegen_database_condition: the current state at 1, the others at 0, read at each scrape', async () => {
	let state: 'ok' | 'full' | 'damaged' = 'ok';
	const metrics = new PrometheusMetrics({ ledgerPending: () => 0, databaseCondition: () => state });
	const states = async () => Object.fromEntries(readScrape(await metrics.text()).samples('imagegen_database_condition').map(({ labels, value }) => [labels.state, value]));
	expect(await states()).toEqual({ ok: 1, full: 0, damaged: 0 });
	state = 'full';
	expect(await states()).toEqual({ ok: 0, full: 1, damaged: 0 });
	state = 'damaged';
	expect(await states()).toEqual({ ok: 0, full: 0, damaged: 1 });
	state = 'ok';
	expect(await states()).toEqual({ ok: 1, full: 0, damaged: 0 });
});

it('without a condition (a server database) there is no imagegen_database_condition, and without reads none of their families', async () => {
	const scraped = readScrape(await new PrometheusMetrics({ ledgerPending: () => 0 }).text());
	for (const family of ['imagegen_database_condition', 'imagegen_database_up', 'imagegen_webhook_outbox_pending', 'imagegen_jobs', 'imagegen_data_dir_free_bytes']) expect([family, scraped.has(family)]).toEqual([family, false]);
	expect(scraped.has('imagegen_usage_ledger_pending')).toBe(true);
});

it('a database read that fails: its family reads NaN, imagegen_database_up 0, the rest is there; all back once it answers', async () => {
	let down = false;
	const fail = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
	const log = { warn: jest.fn() };
	const metrics = new PrometheusMetrics({
		ledgerPending: () => 7,
		jobCounts: () => (down ? fail() : Promise.resolve(JOBS)),
		outboxPending: () => (down ? fail() : Promise.resolve(4)),
		databasePing: () => (down ? fail() : Promise.resolve()),
		log,
	});
	const up = readScrape(await metrics.text());
	expect([up.value('imagegen_database_up'), up.value('imagegen_webhook_outbox_pending'), up.value('imagegen_jobs', { status: 'running' })]).toEqual([1, 4, 2]);

	down = true;
	const scraped = readScrape(await metrics.text());
	expect(scraped.value('imagegen_database_up')).toBe(0);
	expect(scraped.value('imagegen_webhook_outbox_pending')).toBeNaN();
	// Every status it had reads NaN: no count is left standing from before.
	expect(scraped.samples('imagegen_jobs').map(({ labels }) => labels.status).sort()).toEqual(Object.keys(JOBS).sort());
	expect(scraped.samples('imagegen_jobs').every(({ value }) => Number.isNaN(value))).toBe(true);
	expect(scraped.value('imagegen_usage_ledger_pending')).toBe(7);
	expect(scraped.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
	expect(log.warn).toHaveBeenCalledWith(expect.objectContaining({ metric: 'imagegen_webhook_outbox_pending', err: expect.any(Error) }), expect.stringContaining('could not be read'));

	down = false;
	const again = readScrape(await metrics.text());
	expect([again.value('imagegen_database_up'), again.value('imagegen_webhook_outbox_pending'), again.value('imagegen_jobs', { status: 'succeeded' })]).toEqual([1, 4, 3]);
});

it('a read that does not answer in time is left out the same way, and the scrape answers within the time limit', async () => {
	const never = () => new Promise<never>(() => undefined);
	const metrics = new PrometheusMetrics({ ledgerPending: () => 0, outboxPending: never, jobCounts: never, databasePing: never, readTimeoutMs: 300, log: { warn: () => undefined } });
	const started = Date.now();
	const scraped = readScrape(await metrics.text());
	expect(Date.now() - started).toBeLessThan(2_000);
	expect(scraped.value('imagegen_database_up')).toBe(0);
	expect(scraped.value('imagegen_webhook_outbox_pending')).toBeNaN();
});

it('imagegen_data_dir_*: NaN for a data dir that cannot be read (removed under the service)', async () => {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-metrics-'));
	const metrics = new PrometheusMetrics({ ledgerPending: () => 0, dataDir, log: { warn: () => undefined } });
	const present = readScrape(await metrics.text());
	expect(present.value('imagegen_data_dir_size_bytes')).toBeGreaterThan(0);
	expect(present.value('imagegen_data_dir_free_bytes')).toBeGreaterThan(0);
	rmSync(dataDir, { recursive: true });
	const gone = readScrape(await metrics.text());
	expect(gone.value('imagegen_data_dir_size_bytes')).toBeNaN();
	expect(gone.value('imagegen_data_dir_free_bytes')).toBeNaN();
});
