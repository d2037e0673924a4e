/**
 * Per-key usage in the data dir's SQLite database. Each generation is one row keyed by its request
 * id (a record repeated by a retry is ignored, across restarts and processes too), and the row's
 * day total is added to in the same transaction, so a report reads one row per day and model
 * however many generations there were, and the totals can never disagree with the lines.
 *
 * Records that arrive together are written in one transaction, grouped with the file metadata's
 * writes (sqlite/group-commit.ts: one disk sync, off the event loop, for the group). A write that
 * fails (the disk is full, another process holds the lock past the busy timeout) is retried by the
 * ledgers' write queue (ledger-queue.ts), as on PostgreSQL.
 */
import { toMicros } from '../../../core/units';
import { bindNumbered, type SqliteDatabase } from '../db/sqlite/database';
import { groupCommitOf, type WriteStatement } from '../db/sqlite/group-commit';
import { LedgerQueue, type LedgerQueueOptions } from './ledger-queue';
import { USAGE_ROWS_SQL, toUsageRow, type LedgerHealth, type UsageDayRow, type UsageEntry, type UsageLedger, type UsageRow } from './usage-ledger';

export interface SqliteUsageLedgerOptions extends LedgerQueueOptions {
	/** The clock that stamps entries recorded without their time. */
	now?: () => Date;
}

type Line = {
	request_id: string;
	at: number;
	api_key_id: string;
	model: string;
	images: number;
	cost_micros: number;
	provider: string | null;
	day: string;
};

const INSERT_LINE = `INSERT INTO usage_lines (request_id, at, api_key_id, model, images, cost_micros, provider)
	VALUES (@request_id, @at, @api_key_id, @model, @images, @cost_micros, @provider) ON CONFLICT (request_id) DO NOTHING`;
const ADD_TO_DAY = `INSERT INTO usage_days (api_key_id, day, model, images, cost_micros) VALUES (@api_key_id, @day, @model, @images, @cost_micros)
	ON CONFLICT (api_key_id, day, model) DO UPDATE SET images = images + excluded.images, cost_micros = cost_micros + excluded.cost_micros`;

export class SqliteUsageLedger implements UsageLedger {
	private readonly writes: LedgerQueue<Line>;
	private readonly writeNow: (line: Line) => Promise<unknown>;
	/** Lines handed straight to the group commit, not yet committed or (having failed there) queued. */
	private readonly direct = new Set<Promise<void>>();
	private readonly selectRows;

	constructor(
		database: SqliteDatabase,
		private readonly options: SqliteUsageLedgerOptions,
	) {
		// A line repeated by a retry inserts nothing and adds nothing to its day.
		const writeBatch = (lines: readonly Line[]) =>
			lines.flatMap((line): WriteStatement[] => [
				{ sql: INSERT_LINE, values: line },
				{ sql: ADD_TO_DAY, values: line, ifChanged: true },
			]);
		// Shared with the file metadata, so a generation's publish and usage line can share a commit.
		const commits = groupCommitOf(database);
		this.writes = new LedgerQueue<Line>({ store: 'the database', write: (lines) => commits.write(writeBatch(lines)) }, { retryDelayMs: 100, batchSize: Infinity, ...options });
		this.writeNow = (line) => commits.write(writeBatch([line]));
		this.selectRows = database.prepare<[Record<string, unknown>], UsageDayRow>(USAGE_ROWS_SQL);
	}

	/**
	 * Resolves once the entry's transaction has committed (synced to disk). While the queue is idle
	 * the line goes straight to the group commit, which groups it with whatever else is being
	 * written, instead of waiting a turn for the queue's own batch and then for the group; one that
	 * fails there is queued and retried like any other.
	 */
	record(entry: UsageEntry): Promise<void> {
		const line = this.line(entry);
		if (!this.writes.idle) return this.writes.add(line);
		let queued: Promise<void> | undefined;
		const attempt = this.writeNow(line).then(
			() => undefined,
			() => {
				queued = this.writes.add(line);
			},
		);
		this.direct.add(attempt);
		void attempt.finally(() => this.direct.delete(attempt));
		return attempt.then(() => queued);
	}

	private line(entry: UsageEntry): Line {
		const at = (entry.at ?? this.options.now?.() ?? new Date()).getTime();
		return {
			request_id: entry.requestId,
			at,
			api_key_id: entry.apiKeyId,
			model: entry.model,
			images: entry.images,
			cost_micros: toMicros(entry.costUsd),
			provider: entry.provider ?? null,
			day: new Date(at).toISOString().slice(0, 10),
		};
	}

	async rows(apiKeyId: string, from = '0000-00-00', to = '9999-99-99'): Promise<UsageRow[]> {
		return this.selectRows.all(bindNumbered([apiKeyId, from, to])).map(toUsageRow);
	}

	health(): LedgerHealth {
		return this.writes.health();
	}

	/** Waits for every queued entry (a retry is attempted at once), up to `timeoutMs`. */
	async close(timeoutMs?: number): Promise<void> {
		// A line sent straight on is committed or queued before the queue closes (and keeps what is left).
		await Promise.all(this.direct);
		await this.writes.close(timeoutMs);
	}
}
