/**
 * The usage ledger's lines that a write failed for. Usage is billing data: a line waits here until
 * a write of it succeeds. A failing write (the database down, the disk full, another process
 * holding the lock) leaves the lines queued and is retried with backoff, logged at error level, and
 * `health()` reports degraded until a write succeeds again; nothing is dropped. Lines added while
 * lines wait join them (they would fail alike, and land after them); each retry writes what waits
 * in one transaction. Grouping the writes of a healthy moment is the adapter's `write`, not this.
 */
import type { LedgerHealth } from './usage-ledger';

export interface LedgerLog {
	error(details: object, message: string): void;
	info?(details: object, message: string): void;
}

export interface RetryQueueOptions {
	log: LedgerLog;
	/**
	 * First wait after a failed write; doubled per failure up to `maxRetryDelayMs`, which is short
	 * (a second) so that lines are written, and health is ok again, within a second of the
	 * store's return however long the outage was.
	 */
	retryDelayMs?: number;
	maxRetryDelayMs?: number;
	/** How long `close()` waits for queued lines. */
	closeTimeoutMs?: number;
}

export interface RetryQueueHooks<T> {
	/** Where the lines go, as the logs name it. */
	store: string;
	write(lines: readonly T[]): Promise<void>;
	/** Told of what is queued after a write failed. */
	onFailure?(queued: readonly T[]): void;
	/** Told of lines once they are written. */
	onWritten?(lines: readonly T[]): void;
	/** At close, what is left unwritten; true when it is safe elsewhere (its `add` then resolves). */
	keepAtClose?(left: readonly T[]): Promise<boolean>;
}

interface Waiting<T> {
	item: T;
	durable: () => void;
	failed: (error: Error) => void;
}

/** Lines one retry writes: a long outage's backlog goes in transactions of bounded size. */
const LINES_PER_RETRY = 500;

const nobodyWaits = () => undefined;

export class RetryQueue<T> {
	private queue: Array<Waiting<T>> = [];
	private writing: Promise<void> | null = null;
	private scheduled = false;
	private retryTimer: NodeJS.Timeout | null = null;
	private failures = 0;
	private lastError: string | undefined;
	private closed = false;
	private readonly retryDelayMs: number;
	private readonly maxRetryDelayMs: number;
	private readonly closeTimeoutMs: number;

	constructor(
		private readonly hooks: RetryQueueHooks<T>,
		private readonly options: RetryQueueOptions,
	) {
		this.retryDelayMs = options.retryDelayMs ?? 200;
		this.maxRetryDelayMs = options.maxRetryDelayMs ?? 1_000;
		this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
	}

	get closing(): boolean {
		return this.closed;
	}

	/** Nothing queued, being written or waiting for a retry: a line written now passes none. */
	get idle(): boolean {
		return this.queue.length === 0 && !this.writing && !this.retryTimer && !this.scheduled && this.failures === 0 && !this.closed;
	}

	/** Resolves once the item is written (or kept safe at close). */
	add(item: T): Promise<void> {
		if (this.closed) return Promise.reject(new Error('the usage ledger is closed'));
		return new Promise<void>((durable, failed) => {
			this.queue.push({ item, durable, failed });
			this.flushSoon();
		});
	}

	/** Queues an item nobody waits for (one an earlier run kept). */
	adopt(item: T): void {
		this.queue.push({ item, durable: nobodyWaits, failed: nobodyWaits });
		this.flushSoon();
	}

	queued(): T[] {
		return this.queue.map((waiting) => waiting.item);
	}

	health(): LedgerHealth {
		const pending = this.queue.length;
		if (this.lastError === undefined) return { status: 'ok', pending };
		return { status: 'degraded', pending, lastError: this.lastError };
	}

	/**
	 * Writes what is queued, retrying at once, for up to `timeoutMs`; what is left then is kept by
	 * `keepAtClose` or reported lost (logged, and its `add` rejects). Answers whether all was written.
	 */
	async close(timeoutMs = this.closeTimeoutMs): Promise<boolean> {
		this.closed = true;
		if (this.retryTimer) clearTimeout(this.retryTimer);
		this.retryTimer = null;
		await this.drain(Date.now() + timeoutMs);
		if (this.queue.length === 0) return true;
		const left = this.queue.splice(0);
		if (await this.hooks.keepAtClose?.(left.map((waiting) => waiting.item)).catch(() => false)) {
			for (const waiting of left) waiting.durable();
			return false;
		}
		this.options.log.error({ pending: left.length, lastError: this.lastError }, `usage ledger closed with entries not yet written to ${this.hooks.store}`);
		const error = new Error(`the usage ledger closed before the entry was written to ${this.hooks.store}: ${this.lastError ?? 'timed out'}`);
		for (const waiting of left) waiting.failed(error);
		return false;
	}

	/**
	 * Writes until the queue is empty or the deadline passes, retrying without the backoff. A write
	 * already sent is waited for even past the deadline: the lines it carries may still land, and
	 * must not be reported lost (or kept for the next start) while they can. The store's own time-outs
	 * bound that wait (PostgreSQL's statement time-out, SQLite's busy wait).
	 */
	private async drain(deadline: number): Promise<void> {
		while (this.queue.length > 0 && Date.now() < deadline) {
			await (this.writing ?? this.write());
			if (this.queue.length > 0) await delay(Math.min(this.retryDelayMs, deadline - Date.now()));
		}
		await this.writing;
	}

	private flushSoon(): void {
		if (this.writing || this.retryTimer || this.scheduled || this.closed) return;
		this.scheduled = true;
		setImmediate(() => {
			this.scheduled = false;
			if (!this.writing && !this.retryTimer && !this.closed) void this.write();
		});
	}

	private write(): Promise<void> {
		this.writing = this.writeQueued().finally(() => {
			this.writing = null;
			// A line queued after the last write took its lines, while that write was under way.
			if (this.queue.length > 0) this.flushSoon();
		});
		return this.writing;
	}

	/** Writes until the queue is empty or a write fails (then a retry is scheduled). */
	private async writeQueued(): Promise<void> {
		while (this.queue.length > 0) {
			const taken = this.queue.slice(0, LINES_PER_RETRY);
			const items = taken.map((waiting) => waiting.item);
			try {
				await this.hooks.write(items);
			} catch (error) {
				this.failed(error);
				return;
			}
			this.queue.splice(0, taken.length);
			if (this.failures > 0) this.options.log.info?.({ failures: this.failures }, 'the usage ledger recovered; queued entries written');
			this.failures = 0;
			this.lastError = undefined;
			for (const waiting of taken) waiting.durable();
			this.hooks.onWritten?.(items);
		}
	}

	private failed(error: unknown): void {
		this.hooks.onFailure?.(this.queued());
		this.failures += 1;
		this.lastError = error instanceof Error ? error.message : String(error);
		const wait = Math.min(this.maxRetryDelayMs, this.retryDelayMs * 2 ** (this.failures - 1));
		// Retried every second through an outage: each failure is logged while backing off, then one per minute's worth.
		if (wait < this.maxRetryDelayMs || this.failures % 60 === 0) {
			this.options.log.error(
				{ err: error, pending: this.queue.length, attempt: this.failures, retryInMs: wait },
				`usage entries could not be written to ${this.hooks.store}; retrying`,
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
}

function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
