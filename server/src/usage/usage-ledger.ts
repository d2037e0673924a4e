/**
 * Per-key usage (billing data): images, seconds of video and cost per model and UTC day. In the
 * data dir's SQLite database by default, PostgreSQL for a fleet, where every replica reports all.
 *
 * Both engines keep the same two tables: `usage_lines` (one per generation, keyed by its request id)
 * and `usage_days` (images, seconds and cost per key, UTC day and model, added to in the same
 * transaction or statement as the lines), money in whole micro-dollars. A report reads the day totals.
 */
import type { SqlStatement } from '../db/sql-adapter';
import { fromMicros } from '../../../core/units';

export const USAGE_ROWS_SQL =
	'SELECT day, model, images, seconds, cost_micros FROM usage_days WHERE api_key_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, model';

export interface UsageDayRow {
	day: string;
	model: string;
	/** Counts and sums as the driver gives them (PostgreSQL's bigint as text). */
	images: number | string;
	seconds: number | string;
	cost_micros: number | string;
}

export function toUsageRow(row: UsageDayRow): UsageRow {
	return { date: row.day, model: row.model, images: Number(row.images), seconds: Number(row.seconds), cost_usd: fromMicros(row.cost_micros) };
}

export interface UsageRow {
	date: string;
	model: string;
	images: number;
	/** Whole seconds of video made (0 for a day and model of images only). */
	seconds: number;
	cost_usd: number;
}

export interface UsageEntry {
	apiKeyId: string;
	model: string;
	images: number;
	/** Whole seconds of video made; left out (or 0) for images. */
	seconds?: number;
	costUsd: number;
	/**
	 * When the generation was made; it decides the UTC day. Left out, the ledger stamps the entry
	 * itself, by the clock every replica shares (PostgreSQL: the database's; SQLite: this machine's).
	 */
	at?: Date;
	/** Idempotency of the record itself: the same id is counted once (retried appends). */
	requestId: string;
	/** The host that made the images (the one that served in a fallback chain). */
	provider?: string;
}

export interface LedgerHealth {
	status: 'ok' | 'degraded';
	/** Lines accepted but not yet durable (retrying after a failure). */
	pending: number;
	lastError?: string;
}

export interface UsageLedger {
	/**
	 * Records one generation. Resolves once the entry is durable; while the backing store fails it
	 * keeps the entry and retries (logged at error level, visible in `health()`), never drops it.
	 */
	record(entry: UsageEntry): Promise<void>;
	/**
	 * The entry as statements another store writes in its own transaction (a job's end), instead of
	 * `record`: counted once by its request id, like a recorded one.
	 */
	statementsFor(entry: UsageEntry): readonly SqlStatement[];
	/** Rows of one key between two UTC dates (inclusive, `YYYY-MM-DD`), by date then model. */
	rows(apiKeyId: string, from?: string, to?: string): Promise<UsageRow[]>;
	health(): LedgerHealth;
	/** Waits until every accepted entry is durable (or the wait times out), then releases resources. */
	close(): Promise<void>;
}
