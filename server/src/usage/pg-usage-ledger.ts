/**
 * The usage ledger in PostgreSQL: one row per generation in one table for the whole fleet, so
 * any replica's `rows()` covers every replica. Entries wait in the ledgers' write queue
 * (ledger-queue.ts) until a write succeeds. The request id is the primary key, so an insert
 * retried after a lost answer, or
 * the same entry recorded twice, counts once. With `pendingDir`, entries a write failed for are also
 * kept on disk (pending-usage-file.ts), so a replica shut down or killed before the database came
 * back loses none: the next start writes them.
 */
import type { Pool } from 'pg';
import { toMicros } from '../../../core/units';
import { LedgerQueue, type LedgerQueueOptions } from './ledger-queue';
import { PendingUsageFile, type PendingUsage } from './pending-usage-file';
import { USAGE_ROWS_SQL, toUsageRow, type LedgerHealth, type UsageDayRow, type UsageEntry, type UsageLedger, type UsageRow } from './usage-ledger';

export interface PgUsageLedgerOptions extends LedgerQueueOptions {
	/** Where entries that could not be written yet are kept (the data dir); none kept without it. */
	pendingDir?: string;
}

interface Queued extends PendingUsage {
	/** Also in the pending file, so it survives this process. */
	kept: boolean;
}

const MAX_TEXT = 1000;

/**
 * One clock decides, as for files: an entry without its own `at` is stamped with the database's
 * now less its age on this replica's clock (a duration, right however far the clock is off), and
 * its day follows from that stamp. The lines and the day totals they add to are one statement:
 * only lines inserted now (not ones another replica or an earlier attempt wrote) are added, in
 * key, day and model order, so replicas adding to the same totals never wait in a circle.
 */
const INSERT = `
	WITH stamped AS (
		SELECT entry.*, COALESCE(entry.given_at, now() - ($9::timestamptz - entry.recorded_at)) AS at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bigint[], $6::timestamptz[], $7::timestamptz[], $8::text[])
			AS entry(request_id, api_key_id, model, images, cost_micros, given_at, recorded_at, provider)
	), inserted AS (
		INSERT INTO usage_lines (request_id, at, api_key_id, model, images, cost_micros, provider)
		SELECT request_id, at, api_key_id, model, images, cost_micros, provider FROM stamped
		ON CONFLICT (request_id) DO NOTHING
		RETURNING api_key_id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model, images, cost_micros
	)
	INSERT INTO usage_days AS total (api_key_id, day, model, images, cost_micros)
	SELECT api_key_id, day, model, sum(images), sum(cost_micros) FROM inserted GROUP BY api_key_id, day, model ORDER BY api_key_id, day, model
	ON CONFLICT (api_key_id, day, model) DO UPDATE SET images = total.images + EXCLUDED.images, cost_micros = total.cost_micros + EXCLUDED.cost_micros`;

export class PgUsageLedger implements UsageLedger {
	private readonly writes: LedgerQueue<Queued>;
	private readonly pending: PendingUsageFile | undefined;
	/** Queued entries that are also in the pending file: at 0 the file has nothing left to keep. */
	private keptInQueue = 0;

	constructor(
		private readonly pool: Pool,
		private readonly options: PgUsageLedgerOptions,
	) {
		this.pending = options.pendingDir === undefined ? undefined : new PendingUsageFile(options.pendingDir, options.log);
		this.writes = new LedgerQueue<Queued>(
			{
				store: 'PostgreSQL',
				write: (batch) => this.insert(batch),
				onFailure: (queued) => this.keep(queued),
				onWritten: (batch) => this.written(batch),
				keepAtClose: (left) => this.keepAtClose(left),
			},
			options,
		);
	}

	/** Takes up the entries earlier runs (of any replica on this data dir) kept but never wrote. */
	async start(): Promise<void> {
		if (!this.pending) return;
		for (const { entry, recordedAt } of await this.pending.claim()) {
			const problem = invalidEntry(entry);
			if (problem) {
				this.options.log.error({ requestId: entry.requestId, problem }, 'usage: a kept entry that can never be written was skipped');
				continue;
			}
			this.writes.adopt({ entry, recordedAt, kept: true });
			this.keptInQueue++;
		}
		if (this.keptInQueue === 0) await this.pending.forget();
	}

	record(entry: UsageEntry): Promise<void> {
		// A malformed entry would fail every retry and hold up the ones queued behind it.
		const problem = invalidEntry(entry);
		if (problem) return Promise.reject(new TypeError(`usage entry not recorded: ${problem}`));
		return this.writes.add({ entry: { ...entry }, recordedAt: new Date(), kept: false });
	}

	async rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): Promise<UsageRow[]> {
		return (await this.pool.query<UsageDayRow>(USAGE_ROWS_SQL, [apiKeyId, from, to])).rows.map(toUsageRow);
	}

	health(): LedgerHealth {
		return this.writes.health();
	}

	async close(): Promise<void> {
		// Everything kept was written while closing: nothing is left for the next start.
		if (await this.writes.close()) await this.pending?.forget().catch((error: unknown) => this.options.log.error({ err: error }, 'usage: a written pending file could not be removed'));
	}

	/**
	 * What is still queued goes to the pending file (an insert still under way included: if it
	 * lands too, the request id counts it once), and its record() resolves: the line is safe.
	 */
	private async keepAtClose(left: readonly Queued[]): Promise<boolean> {
		if (!this.pending) return false;
		try {
			await this.pending.keep(left.filter((queued) => !queued.kept));
		} catch (error) {
			this.options.log.error({ err: error }, 'usage: entries could not be kept on disk');
			return false;
		}
		this.keptInQueue = 0;
		this.options.log.error({ kept: left.length }, 'usage ledger closed with entries not yet written to PostgreSQL: kept on disk, written at the next start');
		return true;
	}

	/** Once every kept entry is in the table, the pending file goes. */
	private written(batch: readonly Queued[]): void {
		if (!this.pending || this.writes.closing) return;
		const kept = batch.filter((queued) => queued.kept).length;
		if (kept === 0) return;
		this.keptInQueue -= kept;
		if (this.keptInQueue === 0) void this.pending.forget().catch((error: unknown) => this.options.log.error({ err: error }, 'usage: a written pending file could not be removed'));
	}

	/** From the first failed write on, the queued entries are also on disk. */
	private keep(queued: readonly Queued[]): void {
		if (!this.pending || this.writes.closing) return;
		const lines = queued.filter((each) => !each.kept);
		if (lines.length === 0) return;
		for (const each of lines) each.kept = true;
		this.keptInQueue += lines.length;
		this.pending.keep(lines).catch((error: unknown) => {
			this.options.log.error({ err: error, entries: lines.length }, 'usage: entries could not be kept on disk; they stay queued in memory');
			const stillQueued = new Set(this.writes.queued());
			for (const each of lines) {
				if (!each.kept || !stillQueued.has(each)) continue;
				each.kept = false;
				this.keptInQueue--;
			}
		});
	}

	private async insert(batch: readonly Queued[]): Promise<void> {
		await this.pool.query(INSERT, [
			batch.map(({ entry }) => entry.requestId),
			batch.map(({ entry }) => entry.apiKeyId),
			batch.map(({ entry }) => entry.model),
			batch.map(({ entry }) => entry.images),
			batch.map(({ entry }) => toMicros(entry.costUsd)),
			batch.map(({ entry }) => entry.at ?? null),
			batch.map(({ recordedAt }) => recordedAt),
			batch.map(({ entry }) => entry.provider ?? null),
			new Date(),
		]);
	}
}

function invalidEntry(entry: UsageEntry): string | undefined {
	if (entry.provider !== undefined && (typeof entry.provider !== 'string' || entry.provider.length > MAX_TEXT || entry.provider.includes('\u0000'))) {
		return `provider must be a string of at most ${MAX_TEXT} characters without NUL`;
	}
	for (const field of ['requestId', 'apiKeyId', 'model'] as const) {
		const value = entry[field];
		// PostgreSQL text cannot hold NUL.
		if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TEXT || value.includes('\u0000')) {
			return `${field} must be a non-empty string of at most ${MAX_TEXT} characters without NUL`;
		}
	}
	if (!Number.isSafeInteger(entry.images) || entry.images < 0 || entry.images > 2_147_483_647) return 'images must be a non-negative integer';
	if (!Number.isFinite(entry.costUsd) || entry.costUsd < 0) return 'costUsd must be a non-negative finite number';
	if (entry.at !== undefined && (!(entry.at instanceof Date) || Number.isNaN(entry.at.getTime()))) return 'at must be a valid Date';
	return undefined;
}
