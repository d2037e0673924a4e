/**
 * The usage ledger, on either engine. Each generation is one row of `usage_lines` keyed by its
 * request id (a record repeated by a retry, on any process or replica, counts once), and its day
 * total in `usage_days` is added to in the same transaction, only when the line was inserted then,
 * so a report reads one row per day and model however many generations there were, and the totals
 * never disagree with the lines. On PostgreSQL one table serves the fleet: any replica's `rows()`
 * covers every replica.
 *
 * A line goes straight to the adapter's `write`, which on the data dir groups it with the writes of
 * the same moment (the file rows of its generation among them) under one disk sync. A write that
 * fails leaves the line in the ledger's retry queue (retry-queue.ts) until it lands. With
 * `pendingDir`, lines a write failed for are also kept on disk (pending-usage-file.ts), so a
 * process shut down or killed before the database came back loses none: the next start writes them.
 */
import type { SqlAdapter, SqlStatement } from '../db/sql-adapter';
import { PendingUsageFile } from './pending-usage-file';
import { RetryQueue, type RetryQueueOptions } from './retry-queue';
import { USAGE_ROWS_SQL, toUsageRow, type LedgerHealth, type UsageDayRow, type UsageEntry, type UsageLedger, type UsageRow } from './usage-ledger';
import { invalidEntry, linesSql, type UsageLine } from './usage-lines';

export interface SqlUsageLedgerOptions extends RetryQueueOptions {
	/** Where lines that could not be written yet are kept (the data dir); none kept without it. */
	pendingDir?: string;
}

interface Queued extends UsageLine {
	/** Also in the pending file, so it survives this process. */
	kept: boolean;
}

export class SqlUsageLedger implements UsageLedger {
	private readonly retries: RetryQueue<Queued>;
	private readonly pending: PendingUsageFile | undefined;
	/** Queued lines that are also in the pending file: at 0 the file has nothing left to keep. */
	private keptInQueue = 0;
	/** Lines handed straight to the adapter, not yet committed or (having failed there) queued. */
	private readonly direct = new Set<Promise<void>>();

	constructor(
		private readonly adapter: SqlAdapter,
		private readonly options: SqlUsageLedgerOptions,
	) {
		this.pending = options.pendingDir === undefined ? undefined : new PendingUsageFile(options.pendingDir, options.log);
		this.retries = new RetryQueue<Queued>(
			{
				store: storeName(adapter),
				write: (lines) => this.write(lines),
				onFailure: (queued) => this.keep(queued),
				onWritten: (lines) => this.written(lines),
				keepAtClose: (left) => this.keepAtClose(left),
			},
			options,
		);
	}

	/** Takes up the lines earlier runs (of any process or replica on this data dir) kept but never wrote. */
	async start(): Promise<void> {
		if (!this.pending) return;
		for (const { entry, recordedAt } of await this.pending.claim()) {
			const problem = invalidEntry(entry);
			if (problem) {
				this.options.log.error({ requestId: entry.requestId, problem }, 'usage: a kept entry that can never be written was skipped');
				continue;
			}
			this.retries.adopt({ entry, recordedAt, kept: true });
			this.keptInQueue++;
		}
		if (this.keptInQueue === 0) await this.pending.forget();
	}

	/**
	 * Resolves once the line is durable. While no line waits for a retry it goes straight to the
	 * adapter; one that fails there joins the retry queue. While lines wait, a new one waits behind
	 * them.
	 */
	record(entry: UsageEntry): Promise<void> {
		const problem = invalidEntry(entry);
		if (problem) return Promise.reject(new TypeError(`usage entry not recorded: ${problem}`));
		const line: Queued = { entry: { ...entry }, recordedAt: new Date(), kept: false };
		if (!this.retries.idle) return this.retries.add(line);
		let queued: Promise<void> | undefined;
		const attempt = this.write([line]).then(
			() => undefined,
			() => {
				queued = this.retries.add(line);
			},
		);
		this.direct.add(attempt);
		void attempt.finally(() => this.direct.delete(attempt));
		return attempt.then(() => queued);
	}

	statementsFor(entry: UsageEntry): readonly SqlStatement[] {
		const problem = invalidEntry(entry);
		if (problem) throw new TypeError(`usage entry not recorded: ${problem}`);
		return linesSql(this.adapter.dialect, [{ entry: { ...entry }, recordedAt: new Date() }]);
	}

	async rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): Promise<UsageRow[]> {
		return (await this.adapter.all<UsageDayRow>(USAGE_ROWS_SQL, [apiKeyId, from, to])).map(toUsageRow);
	}

	health(): LedgerHealth {
		return this.retries.health();
	}

	/** Waits for every queued line (a retry is attempted at once), up to `timeoutMs`. */
	async close(timeoutMs?: number): Promise<void> {
		// A line sent straight on is committed or queued before the queue closes (and keeps what is left).
		await Promise.all(this.direct);
		// Everything kept was written while closing: nothing is left for the next start.
		if (await this.retries.close(timeoutMs)) await this.pending?.forget().catch((error: unknown) => this.options.log.error({ err: error }, 'usage: a written pending file could not be removed'));
	}

	private async write(lines: readonly UsageLine[]): Promise<void> {
		await this.adapter.write(linesSql(this.adapter.dialect, lines));
	}

	/**
	 * What is still queued goes to the pending file (a write still under way included: if it lands
	 * too, the request id counts it once), and its record() resolves: the line is safe.
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
		this.options.log.error({ kept: left.length }, `usage ledger closed with entries not yet written to ${storeName(this.adapter)}: kept on disk, written at the next start`);
		return true;
	}

	/** Once every kept line is in the table, the pending file goes. */
	private written(lines: readonly Queued[]): void {
		if (!this.pending || this.retries.closing) return;
		const kept = lines.filter((queued) => queued.kept).length;
		if (kept === 0) return;
		this.keptInQueue -= kept;
		if (this.keptInQueue === 0) void this.pending.forget().catch((error: unknown) => this.options.log.error({ err: error }, 'usage: a written pending file could not be removed'));
	}

	/** From the first failed write on, the queued lines are also on disk. */
	private keep(queued: readonly Queued[]): void {
		if (!this.pending || this.retries.closing) return;
		const lines = queued.filter((each) => !each.kept);
		if (lines.length === 0) return;
		for (const each of lines) each.kept = true;
		this.keptInQueue += lines.length;
		this.pending.keep(lines).catch((error: unknown) => {
			this.options.log.error({ err: error, entries: lines.length }, 'usage: entries could not be kept on disk; they stay queued in memory');
			const stillQueued = new Set(this.retries.queued());
			for (const each of lines) {
				if (!each.kept || !stillQueued.has(each)) continue;
				each.kept = false;
				this.keptInQueue--;
			}
		});
	}
}

/** Where the lines go, as the logs name it. */
function storeName(adapter: SqlAdapter): string {
	return adapter.dialect === 'postgres' ? 'PostgreSQL' : 'the database';
}
