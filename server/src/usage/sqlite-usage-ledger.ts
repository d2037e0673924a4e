/**
 * Per-key usage in the data dir's SQLite database. Each generation is one row keyed by its request
 * id (a record repeated by a retry is ignored, across restarts and processes too), and the row's
 * day total is added to in the same transaction, so a report reads one row per day and model
 * however many generations there were, and the totals can never disagree with the lines.
 *
 * Records that arrive together are written in one transaction, grouped with the file metadata's
 * writes (sqlite/group-commit.ts: one disk sync, off the event loop, for the group). Usage
 * is billing data: when a write fails (the disk is full, another process holds the lock past the
 * busy timeout) the entries stay queued and are retried with backoff, each failure is logged at
 * error level, and `health()` reports degraded until a write succeeds again.
 */
import { toMicros } from '../../../core/units';
import { bindNumbered, type SqliteDatabase } from '../sqlite/database';
import { groupCommitOf, type SqliteGroupCommit } from '../sqlite/group-commit';
import { USAGE_ROWS_SQL, toUsageRow, type LedgerHealth, type UsageDayRow, type UsageEntry, type UsageLedger, type UsageRow } from './usage-ledger';

export interface LedgerLogger {
	error(details: object, message: string): void;
	info(details: object, message: string): void;
}

export interface SqliteUsageLedgerOptions {
	log: LedgerLogger;
	/** First retry delay after a failed write; doubles up to `maxRetryMs`. */
	initialRetryMs?: number;
	maxRetryMs?: number;
	/** The clock that stamps entries recorded without their time. */
	now?: () => Date;
}

interface Line {
	request_id: string;
	at: number;
	api_key_id: string;
	model: string;
	images: number;
	cost_micros: number;
	provider: string | null;
	day: string;
}

interface Queued {
	line: Line;
	done: () => void;
}

export class SqliteUsageLedger implements UsageLedger {
	private readonly writeBatch: (lines: readonly Line[]) => void;
	/** Shared with the file metadata, so a generation's publish and usage line can share a commit. */
	private readonly commits: SqliteGroupCommit;
	private readonly selectRows;
	private queue: Queued[] = [];
	private flushing: Promise<void> | null = null;
	private failures = 0;
	private lastError: string | undefined;
	private wakeRetry: (() => void) | null = null;
	private closed = false;

	constructor(
		database: SqliteDatabase,
		private readonly options: SqliteUsageLedgerOptions,
	) {
		const insertLine = database.prepare<[Line]>(
			`INSERT INTO usage_lines (request_id, at, api_key_id, model, images, cost_micros, provider)
			VALUES (@request_id, @at, @api_key_id, @model, @images, @cost_micros, @provider) ON CONFLICT (request_id) DO NOTHING`,
		);
		const addToDay = database.prepare<[Line]>(
			`INSERT INTO usage_days (api_key_id, day, model, images, cost_micros) VALUES (@api_key_id, @day, @model, @images, @cost_micros)
			ON CONFLICT (api_key_id, day, model) DO UPDATE SET images = images + excluded.images, cost_micros = cost_micros + excluded.cost_micros`,
		);
		this.commits = groupCommitOf(database);
		this.writeBatch = database.transaction((lines: readonly Line[]) => {
			for (const line of lines) if (insertLine.run(line).changes === 1) addToDay.run(line);
		}).immediate;
		this.selectRows = database.prepare<[Record<string, unknown>], UsageDayRow>(USAGE_ROWS_SQL);
	}

	/** Resolves once the entry's transaction has committed (synced to disk). */
	record(entry: UsageEntry): Promise<void> {
		const at = (entry.at ?? this.options.now?.() ?? new Date()).getTime();
		const line: Line = {
			request_id: entry.requestId,
			at,
			api_key_id: entry.apiKeyId,
			model: entry.model,
			images: entry.images,
			cost_micros: toMicros(entry.costUsd),
			provider: entry.provider ?? null,
			day: new Date(at).toISOString().slice(0, 10),
		};
		return new Promise<void>((resolve) => {
			this.queue.push({ line, done: resolve });
			this.startFlushing();
		});
	}

	async rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): Promise<UsageRow[]> {
		return this.selectRows.all(bindNumbered([apiKeyId, from, to])).map(toUsageRow);
	}

	health(): LedgerHealth {
		return {
			status: this.failures > 0 ? 'degraded' : 'ok',
			pending: this.queue.length,
			...(this.lastError !== undefined && this.failures > 0 ? { lastError: this.lastError } : {}),
		};
	}

	/** Waits for every queued entry (a retry is attempted at once), up to `timeoutMs`. */
	async close(timeoutMs = 10_000): Promise<void> {
		this.wakeRetry?.();
		let timer: NodeJS.Timeout | undefined;
		const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
		let outcome: 'written' | 'timeout' = 'written';
		while (this.flushing && outcome === 'written') outcome = await Promise.race([this.flushing.then(() => 'written' as const), gaveUp]);
		clearTimeout(timer);
		if (this.queue.length > 0) this.options.log.error({ pending: this.queue.length, lastError: this.lastError }, 'usage entries could not be written before shutdown');
		this.closed = true;
		this.wakeRetry?.();
	}

	private startFlushing(): void {
		if (this.flushing || this.closed) return;
		this.flushing = this.flush().finally(() => {
			this.flushing = null;
			if (this.queue.length > 0) this.startFlushing();
		});
	}

	private async flush(): Promise<void> {
		// Entries recorded in the same turn of the event loop share the transaction.
		await new Promise<void>((resolve) => setImmediate(resolve));
		let delay = this.options.initialRetryMs ?? 100;
		const maxDelay = this.options.maxRetryMs ?? 1_000;
		while (this.queue.length > 0 && !this.closed) {
			const batch = this.queue.slice();
			try {
				const lines = batch.map((queued) => queued.line);
				await this.commits.write(() => this.writeBatch(lines));
			} catch (error) {
				this.failures++;
				this.lastError = error instanceof Error ? error.message : String(error);
				this.options.log.error({ err: error, pending: this.queue.length, retryInMs: delay }, 'writing to the usage ledger failed; retrying');
				await new Promise<void>((resolve) => {
					const timer = setTimeout(resolve, delay);
					this.wakeRetry = () => {
						clearTimeout(timer);
						resolve();
					};
				});
				this.wakeRetry = null;
				delay = Math.min(maxDelay, delay * 2);
				continue;
			}
			this.queue = this.queue.slice(batch.length);
			if (this.failures > 0) {
				this.options.log.info({ failures: this.failures }, 'the usage ledger recovered; queued entries written');
				this.failures = 0;
				delay = this.options.initialRetryMs ?? 100;
			}
			for (const queued of batch) queued.done();
		}
	}
}
