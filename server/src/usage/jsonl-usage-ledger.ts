/**
 * Per-key usage for one process: every generation appends one JSON line to
 * `<data-dir>/usage.jsonl` (append-only, so a crash can cost at most the line being written, which
 * is skipped on load); totals are rebuilt from that file at start and kept in memory.
 *
 * Usage is billing data, so a failed append is never dropped: the lines stay queued and are
 * retried with backoff, each failure is logged at error level, and `health()` reports degraded
 * until an append succeeds again.
 */
import { appendFile as appendFileCallback } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LedgerHealth, UsageEntry, UsageLedger, UsageRow } from './usage-ledger';
import { roundUsd } from '../../../core/units';

// The callback form writes through a plain descriptor (see embedded-file-metadata.ts).
const appendFile = promisify(appendFileCallback);

/** One line of usage.jsonl. `id` (the request id) lets a line repeated by a retried append count once. */
interface Line {
	t: string;
	key: string;
	model: string;
	images: number;
	cost_usd: number;
	id?: string;
	/** The host that served (absent on lines written before fallback chains). */
	provider?: string;
}

interface Queued {
	text: string;
	done: () => void;
}

export interface LedgerLogger {
	error(details: object, message: string): void;
	info(details: object, message: string): void;
}

export interface JsonlUsageLedgerOptions {
	dataDir: string;
	log: LedgerLogger;
	/** First retry delay after a failed append; doubles up to `maxRetryMs`. */
	initialRetryMs?: number;
	maxRetryMs?: number;
}


export class JsonlUsageLedger implements UsageLedger {
	/** apiKeyId → "date model" → totals */
	private readonly totals = new Map<string, Map<string, UsageRow>>();
	private queue: Queued[] = [];
	private writing: Promise<void> | null = null;
	private failures = 0;
	private lastError: string | undefined;
	/** A failed append may have left a partial line; the next one starts on a fresh line. */
	private needsNewline = false;
	private closed = false;
	private wakeRetry: (() => void) | null = null;
	/** Request ids counted so far: a retried request (or a repeated line on disk) counts once. */
	private readonly counted = new Set<string>();
	/** Lines of ids not yet on disk, so a repeat resolves when the first one is durable. */
	private readonly unwritten = new Map<string, Promise<void>>();

	private constructor(
		readonly file: string,
		private readonly options: JsonlUsageLedgerOptions,
	) {}

	static async open(options: JsonlUsageLedgerOptions): Promise<JsonlUsageLedger> {
		const ledger = new JsonlUsageLedger(join(options.dataDir, 'usage.jsonl'), options);
		const text = await readFile(ledger.file, 'utf8').catch((error: NodeJS.ErrnoException) => {
			if (error.code === 'ENOENT') return '';
			throw error;
		});
		// A retried append may have repeated lines that had reached the disk: each request counts once.
		for (const line of text.split('\n')) {
			const entry = parseLine(line);
			if (!entry || (entry.id !== undefined && ledger.counted.has(entry.id))) continue;
			if (entry.id !== undefined) ledger.counted.add(entry.id);
			ledger.count(entry);
		}
		return ledger;
	}

	/**
	 * Counts at once; resolves when the line is on disk. Lines that arrive while an append is under
	 * way go out together in the next one, so a busy service makes one append per batch.
	 */
	record(entry: UsageEntry): Promise<void> {
		if (this.counted.has(entry.requestId)) return this.unwritten.get(entry.requestId) ?? Promise.resolve();
		const line: Line = { t: entry.at.toISOString(), key: entry.apiKeyId, model: entry.model, images: entry.images, cost_usd: entry.costUsd, id: entry.requestId, ...(entry.provider === undefined ? {} : { provider: entry.provider }) };
		this.counted.add(entry.requestId);
		this.count(line);
		const written = new Promise<void>((resolve) => {
			this.queue.push({
				text: `${JSON.stringify(line)}\n`,
				done: () => {
					this.unwritten.delete(entry.requestId);
					resolve();
				},
			});
			this.startWriting();
		});
		this.unwritten.set(entry.requestId, written);
		return written;
	}

	private startWriting(): void {
		if (this.writing || this.closed) return;
		this.writing = this.drain().finally(() => {
			this.writing = null;
			// A line queued between the last append and this callback still needs its writer.
			if (this.queue.length > 0) this.startWriting();
		});
	}

	async rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): Promise<UsageRow[]> {
		return [...(this.totals.get(apiKeyId)?.values() ?? [])]
			.filter((row) => row.date >= from && row.date <= to)
			.sort((a, b) => a.date.localeCompare(b.date) || a.model.localeCompare(b.model))
			.map((row) => ({ ...row, cost_usd: roundUsd(row.cost_usd) }));
	}

	health(): LedgerHealth {
		return {
			status: this.failures > 0 ? 'degraded' : 'ok',
			pending: this.queue.length,
			...(this.lastError !== undefined && this.failures > 0 ? { lastError: this.lastError } : {}),
		};
	}

	/** Waits for every queued line (retrying meanwhile; a retry is attempted at once), up to `timeoutMs`. */
	async close(timeoutMs = 10_000): Promise<void> {
		this.wakeRetry?.();
		let timer: NodeJS.Timeout | undefined;
		const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
		let outcome: 'written' | 'timeout' = 'written';
		while (this.writing && outcome === 'written') {
			outcome = await Promise.race([this.writing.then(() => 'written' as const), gaveUp]);
		}
		clearTimeout(timer);
		if (this.queue.length > 0) {
			this.options.log.error({ pending: this.queue.length, file: this.file, lastError: this.lastError }, 'usage lines could not be written before shutdown');
		}
		this.closed = true;
		this.wakeRetry?.();
	}

	private async drain(): Promise<void> {
		let delay = this.options.initialRetryMs ?? 100;
		const maxDelay = this.options.maxRetryMs ?? 5_000;
		while (this.queue.length > 0 && !this.closed) {
			const batch = this.queue.slice();
			const text = (this.needsNewline ? '\n' : '') + batch.map((queued) => queued.text).join('');
			try {
				await appendFile(this.file, text, { mode: 0o600 });
			} catch (error) {
				this.failures++;
				this.needsNewline = true;
				this.lastError = error instanceof Error ? error.message : String(error);
				this.options.log.error({ err: error, pending: this.queue.length, retryInMs: delay, file: this.file }, 'appending to the usage ledger failed; retrying');
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
			// Only what was written leaves the queue; lines queued during the append go next.
			this.queue = this.queue.slice(batch.length);
			this.needsNewline = false;
			if (this.failures > 0) {
				this.options.log.info({ file: this.file, failures: this.failures }, 'the usage ledger recovered; queued lines written');
				this.failures = 0;
				delay = this.options.initialRetryMs ?? 100;
			}
			for (const queued of batch) queued.done();
		}
	}

	private count(line: Line): void {
		const date = line.t.slice(0, 10);
		const perKey = this.totals.get(line.key) ?? new Map<string, UsageRow>();
		this.totals.set(line.key, perKey);
		const row = perKey.get(`${date} ${line.model}`) ?? { date, model: line.model, images: 0, cost_usd: 0 };
		row.images += line.images;
		row.cost_usd += line.cost_usd;
		perKey.set(`${date} ${line.model}`, row);
	}
}

function parseLine(text: string): Line | undefined {
	if (!text.trim()) return undefined;
	try {
		const line = JSON.parse(text) as Line;
		const valid =
			typeof line.t === 'string' &&
			/^\d{4}-\d{2}-\d{2}T/.test(line.t) &&
			typeof line.key === 'string' &&
			typeof line.model === 'string' &&
			Number.isFinite(line.images) &&
			Number.isFinite(line.cost_usd) &&
			(line.id === undefined || typeof line.id === 'string') &&
			(line.provider === undefined || typeof line.provider === 'string');
		return valid ? line : undefined;
	} catch {
		return undefined;
	}
}
