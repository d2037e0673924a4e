/**
 * Gauges read at each scrape rather than kept up to date: counts from the database (jobs by
 * status, the outbox's pending deliveries: shared by every process and replica, so each reports
 * the same count), whether the database answers, the embedded database's own condition, and the
 * data dir's file system.
 *
 * A read that fails or does not answer within `readTimeoutMs` leaves its family NaN for that scrape
 * (`imagegen_database_up` 0) and the rest of the scrape is answered: while the database is down is
 * when an operator needs the other families, and a scrape that failed as a whole would read as the
 * service being down. NaN rather than no sample, so a count from before is never left standing.
 */
import type { StatsFs } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { Gauge, type Registry } from 'prom-client';

export type DatabaseCondition = 'ok' | 'full' | 'damaged';

const CONDITIONS: readonly DatabaseCondition[] = ['ok', 'full', 'damaged'];

/** Well under Prometheus' default scrape timeout of 10 s, as long as /healthz waits for a probe. */
const READ_TIMEOUT_MS = 2_000;

export interface ScrapeReads {
	/** Generation jobs by status. */
	jobCounts?: () => Promise<Record<string, number>>;
	/** Webhook deliveries pending in the outbox. */
	outboxPending?: () => Promise<number>;
	/** Answers once the database takes a statement. */
	databasePing?: () => Promise<void>;
	/** An embedded database's own state; absent for a server database, which has none of its own. */
	databaseCondition?: () => DatabaseCondition;
	/** Whose file system's room is reported. */
	dataDir?: string;
	readTimeoutMs?: number;
	/** Told of each read that failed, naming its family. */
	log?: { warn(details: object, message: string): void };
}

type Read = <T>(metric: string, read: () => Promise<T>) => Promise<T | undefined>;

export function registerScrapeGauges(registry: Registry, reads: ScrapeReads): void {
	const registers = [registry];
	const timeoutMs = reads.readTimeoutMs ?? READ_TIMEOUT_MS;
	const read: Read = async (metric, from) => {
		try {
			return await withinTime(from(), timeoutMs);
		} catch (error) {
			reads.log?.warn({ err: error, metric }, 'a metric could not be read for this scrape');
			return undefined;
		}
	};
	const { jobCounts, outboxPending, databasePing, databaseCondition, dataDir } = reads;
	if (jobCounts) registerJobs(registers, () => read('imagegen_jobs', jobCounts));
	if (outboxPending) {
		new Gauge({
			name: 'imagegen_webhook_outbox_pending',
			help: 'Webhook deliveries pending in the outbox (waiting, under an attempt or for a retry), of every process and replica: each reports the same count',
			registers,
			async collect() {
				this.set((await read('imagegen_webhook_outbox_pending', outboxPending)) ?? Number.NaN);
			},
		});
	}
	if (databasePing) {
		new Gauge({
			name: 'imagegen_database_up',
			help: 'Whether the database answered a statement at this scrape (1) or not in time (0)',
			registers,
			async collect() {
				const answered = await read('imagegen_database_up', async () => {
					await databasePing();
					return true;
				});
				this.set(answered ? 1 : 0);
			},
		});
	}
	if (databaseCondition) registerCondition(registers, databaseCondition);
	if (dataDir !== undefined) registerDataDir(registers, (metric) => read(metric, () => statfs(dataDir)));
}

function registerJobs(registers: Registry[], counts: () => Promise<Record<string, number> | undefined>): void {
	const seen = new Set<string>();
	new Gauge({
		name: 'imagegen_jobs',
		help: 'Generation jobs kept, by status (queued, running, succeeded, failed, canceled); ended ones are kept as long as the retention',
		labelNames: ['status'],
		registers,
		async collect() {
			const read = await counts();
			if (read) for (const status of Object.keys(read)) seen.add(status);
			for (const status of seen) this.set({ status }, read?.[status] ?? Number.NaN);
		},
	});
}

function registerCondition(registers: Registry[], condition: () => DatabaseCondition): void {
	new Gauge({
		name: 'imagegen_database_condition',
		help: 'The embedded database’s own state, 1 for the current one: ok, full (a write found no room; writes answer 507 until one succeeds) or damaged (a page cannot be read; restore a backup)',
		labelNames: ['state'],
		registers,
		collect() {
			const current = condition();
			for (const state of CONDITIONS) this.set({ state }, state === current ? 1 : 0);
		},
	});
}

/** Free is what an unprivileged process may still use (bavail); one statfs each, a cheap call. */
function registerDataDir(registers: Registry[], readFileSystem: (metric: string) => Promise<StatsFs | undefined>): void {
	new Gauge({
		name: 'imagegen_data_dir_free_bytes',
		help: 'Bytes still free for the service on the data dir’s file system',
		registers,
		async collect() {
			const stats = await readFileSystem('imagegen_data_dir_free_bytes');
			this.set(stats ? stats.bavail * stats.bsize : Number.NaN);
		},
	});
	new Gauge({
		name: 'imagegen_data_dir_size_bytes',
		help: 'Size of the data dir’s file system in bytes',
		registers,
		async collect() {
			const stats = await readFileSystem('imagegen_data_dir_size_bytes');
			this.set(stats ? stats.blocks * stats.bsize : Number.NaN);
		},
	});
}

function withinTime<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<never>((_resolve, reject) => {
		timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
	});
	return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
