/**
 * Per-key usage for one process: every generation appends one JSON line to
 * `<data-dir>/usage.jsonl` (append-only, so a crash can cost at most the line being written, which
 * is skipped on load). Days before yesterday (UTC) are rolled into exact per-day, per-key,
 * per-model totals in `<data-dir>/usage-totals.jsonl` and leave the journal, at start and when the
 * day changes, so neither the file nor the memory grows with history: totals are kept in memory
 * (one row per day, key and model), and the journal is read as a stream.
 *
 * The roll-up writes the totals first (aside, synced, renamed; the header names the journal they
 * were taken from), then the journal without the rolled days (the same way, under a new journal
 * id). A crash between the two leaves the old journal, whose rolled lines are then skipped because
 * the totals say they consumed it: no line is lost or counted twice. A line of a rolled day that
 * arrives later (a retry after a long outage) stays in the new journal and counts there.
 *
 * Request ids are remembered for REQUEST_ID_WINDOW_MS of entry time only (and at most
 * MAX_REMEMBERED_IDS): they are per-call UUIDs recorded once, so the only repeats are a line written
 * again by a retried append, which lands right behind the first copy, and a record repeated while its
 * line is still queued; neither can be an hour apart.
 *
 * Usage is billing data, so a failed append is never dropped: the lines stay queued and are
 * retried with backoff, each failure is logged at error level, and `health()` reports degraded
 * until an append succeeds again.
 */
import { randomBytes } from 'node:crypto';
import { appendFile as appendFileCallback, createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { replaceWithLines, temporaryFileOf } from '../durable/replace-with-lines';
import type { LedgerHealth, UsageEntry, UsageLedger, UsageRow } from './usage-ledger';
import { readRolledTotals, toPico, UsageTotals, writeRolledTotals, type RolledHeader } from './usage-totals';

export const USAGE_JOURNAL = 'usage.jsonl';
export const USAGE_TOTALS = 'usage-totals.jsonl';
/** How long (entry time) a request id is remembered to count a repeated line once. */
export const REQUEST_ID_WINDOW_MS = 60 * 60_000;
/** A bound on remembered ids whatever the rate (≈ 100 bytes each). */
export const MAX_REMEMBERED_IDS = 500_000;
/** Days kept as lines: today and yesterday (UTC); older days are rolled into totals. */
const DAY_MS = 86_400_000;

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
	/** The clock that decides which days are rolled up (tests move it). */
	now?: () => Date;
}


export class JsonlUsageLedger implements UsageLedger {
	private readonly totals = new UsageTotals();
	/** Lines of days before this one are rolled into the totals file ('' before the first roll-up). */
	private rolledBefore = '';
	/** Id of the current journal file (its header line); '' for a journal without one. */
	private journalId = '';
	/** The UTC day of the last roll-up check: a new day makes one due. */
	private checkedDay = '';
	private queue: Queued[] = [];
	private writing: Promise<void> | null = null;
	private failures = 0;
	private lastError: string | undefined;
	/** A failed append may have left a partial line; the next one starts on a fresh line. */
	private needsNewline = false;
	private closed = false;
	private wakeRetry: (() => void) | null = null;
	/** Request ids counted lately (id → entry time), oldest first: a repeated line counts once. */
	private readonly counted = new Map<string, number>();
	private newestCounted = 0;
	/** Lines of ids not yet on disk, so a repeat resolves when the first one is durable. */
	private readonly unwritten = new Map<string, Promise<void>>();

	private constructor(
		readonly file: string,
		private readonly options: JsonlUsageLedgerOptions,
	) {}

	static async open(options: JsonlUsageLedgerOptions): Promise<JsonlUsageLedger> {
		const ledger = new JsonlUsageLedger(join(options.dataDir, USAGE_JOURNAL), options);
		const totalsFile = join(options.dataDir, USAGE_TOTALS);
		await rm(temporaryFileOf(totalsFile), { force: true });
		await rm(temporaryFileOf(ledger.file), { force: true });
		const header = await readRolledTotals(totalsFile, ledger.totals);
		if (header) ledger.rolledBefore = header.rolledBefore;
		if (await ledger.load(header)) {
			// A crash came between the totals and the journal rewrite: finish it, so later lines of
			// those days (late retries) are never mistaken for consumed ones.
			const newId = randomBytes(12).toString('hex');
			await ledger.rewriteJournal(newId, ledger.rolledBefore, '');
			ledger.journalId = newId;
		}
		await ledger.rollUpIfDue();
		return ledger;
	}

	/** Request ids remembered now (bounded by the window). */
	get rememberedRequestIds(): number {
		return this.counted.size;
	}

	/** Streams the journal line by line into the totals; true when it skipped lines the totals already hold. */
	private async load(header: RolledHeader | undefined): Promise<boolean> {
		const input = createReadStream(this.file);
		const missing = await new Promise<boolean>((resolve, reject) => {
			input.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? resolve(true) : reject(error)));
			input.once('open', () => resolve(false));
		});
		if (missing) return false;
		let first = true;
		let skipRolled = false;
		let skipped = false;
		for await (const text of createInterface({ input, crlfDelay: Infinity })) {
			if (first) {
				first = false;
				const id = journalIdOf(text);
				if (id !== undefined) this.journalId = id;
				// The totals were taken from this very journal (a crash before its rewrite): its lines of rolled days are in them.
				skipRolled = header !== undefined && header.consumed === this.journalId;
				if (id !== undefined) continue;
			}
			const entry = parseLine(text);
			if (!entry) continue;
			if (skipRolled && entry.t.slice(0, 10) < this.rolledBefore) {
				skipped = true;
				continue;
			}
			// A retried append may have repeated lines that had reached the disk: each request counts once.
			if (entry.id !== undefined && !this.remember(entry.id, Date.parse(entry.t))) continue;
			this.count(entry);
		}
		return skipped;
	}

	/**
	 * Counts at once; resolves when the line is on disk. Lines that arrive while an append is under
	 * way go out together in the next one, so a busy service makes one append per batch.
	 */
	record(entry: UsageEntry): Promise<void> {
		const at = entry.at ?? this.options.now?.() ?? new Date();
		const line: Line = { t: at.toISOString(), key: entry.apiKeyId, model: entry.model, images: entry.images, cost_usd: entry.costUsd, id: entry.requestId, ...(entry.provider === undefined ? {} : { provider: entry.provider }) };
		if (!this.remember(entry.requestId, at.getTime())) return this.unwritten.get(entry.requestId) ?? Promise.resolve();
		this.count(line);
		if (this.today() !== this.checkedDay) this.rollUpDue = true;
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
		return this.totals.rows(apiKeyId, from, to);
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
		// Short, so lines are written within a second of the disk's recovery.
		const maxDelay = this.options.maxRetryMs ?? 1_000;
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
			// Only with nothing queued: every counted line is then on disk, so the totals taken now hold no line that is still to be appended.
			if (this.rollUpDue && this.queue.length === 0) await this.rollUpIfDue().catch((error: unknown) => this.options.log.error({ err: error, file: this.file }, 'rolling old usage days into totals failed; retried on the next write'));
		}
	}

	private rollUpDue = false;

	/**
	 * Rolls every day before yesterday into the totals file, then rewrites the journal without
	 * them. Runs at open and from the writer with the queue empty, never beside an append.
	 */
	private async rollUpIfDue(): Promise<void> {
		this.rollUpDue = false;
		const today = this.today();
		this.checkedDay = today;
		const cutoff = new Date(Date.parse(`${today}T00:00:00Z`) - DAY_MS).toISOString().slice(0, 10);
		if (cutoff <= this.rolledBefore || !this.totals.hasDayBefore(cutoff)) return;
		const rows = this.totals.rowsBefore(cutoff);
		await writeRolledTotals(join(this.options.dataDir, USAGE_TOTALS), { rolledBefore: cutoff, consumed: this.journalId }, rows);
		const skipRolled = this.rolledBefore;
		this.rolledBefore = cutoff;
		const newId = randomBytes(12).toString('hex');
		await this.rewriteJournal(newId, cutoff, skipRolled);
		this.journalId = newId;
	}

	/** Copies the journal's lines of days from `cutoff` on into a new journal (aside, synced, renamed). */
	private async rewriteJournal(newId: string, cutoff: string, previouslyRolled: string): Promise<void> {
		await replaceWithLines(this.file, this.linesKeptFrom(newId, cutoff, previouslyRolled));
		this.needsNewline = false;
	}

	private async *linesKeptFrom(newId: string, cutoff: string, previouslyRolled: string): AsyncGenerator<string> {
		yield JSON.stringify({ journal: newId });
		const input = createReadStream(this.file);
		const missing = await new Promise<boolean>((resolve, reject) => {
			input.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? resolve(true) : reject(error)));
			input.once('open', () => resolve(false));
		});
		if (missing) return;
		for await (const text of createInterface({ input, crlfDelay: Infinity })) {
			const entry = parseLine(text);
			if (!entry) continue;
			// Lines of days already in the totals before (only in a journal they consumed) stay out too.
			if (entry.t.slice(0, 10) < cutoff || entry.t.slice(0, 10) < previouslyRolled) continue;
			yield text;
		}
	}

	private today(): string {
		return (this.options.now?.() ?? new Date()).toISOString().slice(0, 10);
	}

	/** False when the id was counted within the window; remembers it otherwise, forgetting ids that fell out. */
	private remember(id: string, at: number): boolean {
		if (this.counted.has(id)) return false;
		this.counted.set(id, at);
		if (at > this.newestCounted) this.newestCounted = at;
		for (const [oldId, oldAt] of this.counted) {
			if (this.counted.size <= MAX_REMEMBERED_IDS && oldAt >= this.newestCounted - REQUEST_ID_WINDOW_MS) break;
			if (this.unwritten.has(oldId)) break;
			this.counted.delete(oldId);
		}
		return true;
	}

	private count(line: Line): void {
		this.totals.add({ date: line.t.slice(0, 10), key: line.key, model: line.model, images: line.images, pico: toPico(line.cost_usd) });
	}
}

/** The id in a journal's header line, or undefined for a usage line. */
function journalIdOf(text: string): string | undefined {
	if (!text.startsWith('{"journal":')) return undefined;
	try {
		const header = JSON.parse(text) as { journal?: unknown };
		return typeof header.journal === 'string' ? header.journal : undefined;
	} catch {
		return undefined;
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
