/**
 * The usage ledgers' write queue, one for both engines. Usage is billing data: an entry waits here
 * until a write of its batch succeeds. A failing write (the database down, the disk full, another
 * process holding the lock) leaves the entries queued and is retried with backoff, logged at error
 * level, and `health()` reports degraded until a write succeeds again; nothing is dropped. Entries
 * recorded in the same turn of the event loop go out in one write, and those recorded while a
 * write is under way in the next.
 */
import type { LedgerHealth } from './usage-ledger';

export interface LedgerLog {
	error(details: object, message: string): void;
	info?(details: object, message: string): void;
}

export interface LedgerQueueOptions {
	log: LedgerLog;
	/**
	 * First wait after a failed write; doubled per failure up to `maxRetryDelayMs`, which is short
	 * (a second) so that entries are written, and health is ok again, within a second of the
	 * store's return however long the outage was.
	 */
	retryDelayMs?: number;
	maxRetryDelayMs?: number;
	/** How long `close()` waits for queued entries. */
	closeTimeoutMs?: number;
	/** Entries written in one write. */
	batchSize?: number;
}

export interface LedgerQueueHooks<T> {
	/** Where the entries go, as the logs name it. */
	store: string;
	write(batch: readonly T[]): Promise<void>;
	/** Told of what is queued after a write failed. */
	onFailure?(queued: readonly T[]): void;
	/** Told of a batch once it is written. */
	onWritten?(batch: readonly T[]): void;
	/** At close, what is left unwritten; true when it is safe elsewhere (its `add` then resolves). */
	keepAtClose?(left: readonly T[]): Promise<boolean>;
}

interface Waiting<T> {
	item: T;
	durable: () => void;
	failed: (error: Error) => void;
}

const nobodyWaits = () => undefined;

export class LedgerQueue<T> {
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
	private readonly batchSize: number;

	constructor(
		private readonly hooks: LedgerQueueHooks<T>,
		private readonly options: LedgerQueueOptions,
	) {
		this.retryDelayMs = options.retryDelayMs ?? 200;
		this.maxRetryDelayMs = options.maxRetryDelayMs ?? 1_000;
		this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
		this.batchSize = options.batchSize ?? 500;
	}

	get closing(): boolean {
		return this.closed;
	}

	/** Nothing queued, being written or waiting for a retry: an entry written now passes none. */
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
	 * already sent is waited for even past the deadline: the entries it carries may still land, and
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
		this.writing = this.writeBatches().finally(() => {
			this.writing = null;
			// An entry queued after the last batch was taken, while the write was still under way.
			if (this.queue.length > 0) this.flushSoon();
		});
		return this.writing;
	}

	/** Writes until the queue is empty or a write fails (then a retry is scheduled). */
	private async writeBatches(): Promise<void> {
		while (this.queue.length > 0) {
			const batch = this.queue.slice(0, this.batchSize);
			const items = batch.map((waiting) => waiting.item);
			try {
				await this.hooks.write(items);
			} catch (error) {
				this.failed(error);
				return;
			}
			this.queue.splice(0, batch.length);
			if (this.failures > 0) this.options.log.info?.({ failures: this.failures }, 'the usage ledger recovered; queued entries written');
			this.failures = 0;
			this.lastError = undefined;
			for (const waiting of batch) waiting.durable();
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
