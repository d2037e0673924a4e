/**
 * The usage ledger in PostgreSQL: one row per generation in one table for the whole fleet, so
 * any replica's `rows()` covers every replica. Entries wait in a queue until a write succeeds;
 * a failing database delays them (retried with backoff, logged, `health()` degraded) but never
 * loses them. The request id is the primary key, so an insert retried after a lost answer, or
 * the same entry recorded twice, counts once. With `pendingDir`, entries a write failed for are also
 * kept on disk (pending-usage-file.ts), so a replica shut down or killed before the database came
 * back loses none: the next start writes them.
 */
import type { Pool } from 'pg';
import { toMicros } from '../../../core/units';
import { USAGE_ROWS_SQL, toUsageRow, type LedgerHealth, type UsageDayRow, type UsageEntry, type UsageLedger, type UsageRow } from './usage-ledger';
import { PendingUsageFile } from './pending-usage-file';

export interface LedgerErrorLog {
	error(details: object, message: string): void;
}

export interface PgUsageLedgerOptions {
	log: LedgerErrorLog;
	/**
	 * First wait after a failed write; doubled per failure up to `maxRetryDelayMs`, which is short
	 * (a second) so that entries are written, and health is ok again, within a second of the
	 * database's return however long the outage was.
	 */
	retryDelayMs?: number;
	maxRetryDelayMs?: number;
	/** How long `close()` waits for queued entries. */
	closeTimeoutMs?: number;
	/** Entries written in one INSERT. */
	batchSize?: number;
	/** Where entries that could not be written yet are kept (the data dir); none kept without it. */
	pendingDir?: string;
}

interface Queued {
	entry: UsageEntry;
	/** This replica's time when the entry was recorded: its age at the insert, whatever the clock's error. */
	recordedAt: Date;
	durable: () => void;
	failed: (error: Error) => void;
	/** Also in the pending file, so it survives this process. */
	kept: boolean;
}

const settledElsewhere = () => undefined;

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

const MAX_TEXT = 1000;

export class PgUsageLedger implements UsageLedger {
	private queue: Queued[] = [];
	private writing: Promise<void> | null = null;
	private retryTimer: NodeJS.Timeout | null = null;
	private failures = 0;
	private lastError: string | undefined;
	private closed = false;
	private readonly retryDelayMs: number;
	private readonly maxRetryDelayMs: number;
	private readonly closeTimeoutMs: number;
	private readonly batchSize: number;
	private readonly pending: PendingUsageFile | undefined;
	/** Queued entries that are also in the pending file: at 0 the file has nothing left to keep. */
	private keptInQueue = 0;

	constructor(
		private readonly pool: Pool,
		private readonly options: PgUsageLedgerOptions,
	) {
		this.retryDelayMs = options.retryDelayMs ?? 200;
		this.maxRetryDelayMs = options.maxRetryDelayMs ?? 1_000;
		this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
		this.batchSize = options.batchSize ?? 500;
		this.pending = options.pendingDir === undefined ? undefined : new PendingUsageFile(options.pendingDir, options.log);
	}

	/** Takes up the entries earlier runs (of any replica on this data dir) kept but never wrote. */
	async start(): Promise<void> {
		if (!this.pending) return;
		const lines = await this.pending.claim();
		for (const { entry, recordedAt } of lines) {
			const problem = invalidEntry(entry);
			if (problem) {
				this.options.log.error({ requestId: entry.requestId, problem }, 'usage: a kept entry that can never be written was skipped');
				continue;
			}
			this.queue.push({ entry, recordedAt, durable: settledElsewhere, failed: settledElsewhere, kept: true });
			this.keptInQueue++;
		}
		if (this.keptInQueue === 0) await this.pending.forget();
		else this.flushSoon();
	}

	record(entry: UsageEntry): Promise<void> {
		if (this.closed) return Promise.reject(new Error('the usage ledger is closed'));
		// A malformed entry would fail every retry and hold up the ones queued behind it.
		const problem = invalidEntry(entry);
		if (problem) return Promise.reject(new TypeError(`usage entry not recorded: ${problem}`));
		return new Promise<void>((durable, failed) => {
			this.queue.push({ entry: { ...entry }, recordedAt: new Date(), durable, failed, kept: false });
			this.flushSoon();
		});
	}

	async rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): Promise<UsageRow[]> {
		return (await this.pool.query<UsageDayRow>(USAGE_ROWS_SQL, [apiKeyId, from, to])).rows.map(toUsageRow);
	}

	health(): LedgerHealth {
		const pending = this.queue.length;
		if (this.lastError === undefined) return { status: 'ok', pending };
		return { status: 'degraded', pending, lastError: this.lastError };
	}

	async close(): Promise<void> {
		this.closed = true;
		if (this.retryTimer) clearTimeout(this.retryTimer);
		this.retryTimer = null;
		await this.drain(Date.now() + this.closeTimeoutMs);
		// Everything kept was written while closing: nothing is left for the next start.
		if (this.queue.length === 0) return this.pending?.forget().catch((error: unknown) => this.options.log.error({ err: error }, 'usage: a written pending file could not be removed'));
		if (await this.keepAtClose()) return;
		this.options.log.error({ pending: this.queue.length, lastError: this.lastError }, 'usage ledger closed with entries not yet written to PostgreSQL');
		const error = new Error(`the usage ledger closed before the entry was written to PostgreSQL: ${this.lastError ?? 'timed out'}`);
		for (const queued of this.queue.splice(0)) queued.failed(error);
	}

	/**
	 * What is still queued goes to the pending file (an insert still under way included: if it
	 * lands too, the request id counts it once), and its record() resolves: the line is safe.
	 */
	private async keepAtClose(): Promise<boolean> {
		if (!this.pending) return false;
		const left = this.queue.splice(0);
		this.keptInQueue = 0;
		try {
			await this.pending.keep(left.filter((queued) => !queued.kept));
		} catch (error) {
			this.queue.unshift(...left);
			this.options.log.error({ err: error }, 'usage: entries could not be kept on disk');
			return false;
		}
		this.options.log.error({ kept: left.length, lastError: this.lastError }, 'usage ledger closed with entries not yet written to PostgreSQL: kept on disk, written at the next start');
		for (const queued of left) queued.durable();
		return true;
	}

	/**
	 * Writes until the queue is empty or the deadline passes, retrying without the backoff. A write
	 * already sent is waited for even past the deadline: the entries it carries may still land, and
	 * must not be reported lost (or kept for the next start) while they can. The pool's statement and
	 * query time-outs bound that wait, a dead connection included.
	 */
	private async drain(deadline: number): Promise<void> {
		while (this.queue.length > 0 && Date.now() < deadline) {
			await (this.writing ?? this.write());
			if (this.queue.length > 0) await delay(Math.min(this.retryDelayMs, deadline - Date.now()));
		}
		await this.writing;
	}

	private flushSoon(): void {
		if (this.writing || this.retryTimer) return;
		void this.write();
	}

	private write(): Promise<void> {
		this.writing = this.writeBatches().finally(() => {
			this.writing = null;
			// An entry queued after the last batch was taken but before this callback saw a writer
			// still running and did not start one: without this it would wait for the next entry.
			if (this.queue.length > 0 && !this.retryTimer && !this.closed) this.flushSoon();
		});
		return this.writing;
	}

	/** Writes until the queue is empty or a write fails (then a retry is scheduled). */
	private async writeBatches(): Promise<void> {
		while (this.queue.length > 0) {
			const batch = this.queue.slice(0, this.batchSize);
			try {
				await this.insert(batch);
			} catch (error) {
				this.failed(error);
				return;
			}
			this.queue.splice(0, batch.length);
			this.failures = 0;
			this.lastError = undefined;
			for (const queued of batch) queued.durable();
			this.written(batch);
		}
	}

	/** Once every kept entry is in the table, the pending file goes. */
	private written(batch: readonly Queued[]): void {
		if (!this.pending || this.closed) return;
		const kept = batch.filter((queued) => queued.kept).length;
		if (kept === 0) return;
		this.keptInQueue -= kept;
		if (this.keptInQueue === 0) void this.pending.forget().catch((error: unknown) => this.options.log.error({ err: error }, 'usage: a written pending file could not be removed'));
	}

	/** From the first failed write on, the queued entries are also on disk. */
	private keepQueued(): void {
		if (!this.pending || this.closed) return;
		const lines = this.queue.filter((queued) => !queued.kept);
		if (lines.length === 0) return;
		for (const queued of lines) queued.kept = true;
		this.keptInQueue += lines.length;
		this.pending.keep(lines).catch((error: unknown) => {
			this.options.log.error({ err: error, entries: lines.length }, 'usage: entries could not be kept on disk; they stay queued in memory');
			for (const queued of lines) {
				if (!queued.kept || !this.queue.includes(queued)) continue;
				queued.kept = false;
				this.keptInQueue--;
			}
		});
	}

	private failed(error: unknown): void {
		this.keepQueued();
		this.failures += 1;
		this.lastError = error instanceof Error ? error.message : String(error);
		const wait = Math.min(this.maxRetryDelayMs, this.retryDelayMs * 2 ** (this.failures - 1));
		// Retried every second through an outage: each failure is logged while backing off, then one per minute's worth.
		if (wait < this.maxRetryDelayMs || this.failures % 60 === 0) {
			this.options.log.error(
				{ err: error, pending: this.queue.length, attempt: this.failures, retryInMs: wait },
				'usage entries could not be written to PostgreSQL; retrying',
			);
		}
		if (this.closed) return;
		this.retryTimer = setTimeout(() => {
			this.retryTimer = null;
			this.flushSoon();
		}, wait);
		// Retrying must not keep a process alive that is otherwise done; close() drains explicitly.
		this.retryTimer.unref();
	}

	/**
	 * One clock decides, as for files: an entry without its own `at` is stamped with the database's
	 * now less its age on this replica's clock (a duration, right however far the clock is off), and
	 * its day follows from that stamp.
	 */
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

function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
