/**
 * A usage entry as the ledger writes it, the checks it passes before it is accepted, and the
 * statements that write lines with their day totals: the one place where the engines' SQL differs.
 */
import { toMicros } from '../../../core/units';
import type { Dialect, SqlStatement } from '../db/sql-adapter';
import type { UsageEntry } from './usage-ledger';

export interface UsageLine {
	entry: UsageEntry;
	/** This process's time when the entry was recorded: its age when it is written (see `linesSql`). */
	recordedAt: Date;
}

const MAX_TEXT = 1000;
/** The largest a line's images or seconds may be: PostgreSQL's `integer`. */
const MAX_INTEGER = 2_147_483_647;

/** Why an entry can never be written (it would fail every retry and hold up the lines behind it). */
export function invalidEntry(entry: UsageEntry): string | undefined {
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
	if (!Number.isSafeInteger(entry.images) || entry.images < 0 || entry.images > MAX_INTEGER) return 'images must be a non-negative integer';
	if (entry.seconds !== undefined && (!Number.isSafeInteger(entry.seconds) || entry.seconds < 0 || entry.seconds > MAX_INTEGER)) return 'seconds must be a non-negative integer';
	if (!Number.isFinite(entry.costUsd) || entry.costUsd < 0) return 'costUsd must be a non-negative finite number';
	if (entry.at !== undefined && (!(entry.at instanceof Date) || Number.isNaN(entry.at.getTime()))) return 'at must be a valid Date';
	return undefined;
}

/**
 * The statements that write `lines`, in one transaction: a line already there (a retried record,
 * on any process or replica) inserts nothing and adds nothing to its day.
 */
export function linesSql(dialect: Dialect, lines: readonly UsageLine[]): SqlStatement[] {
	return dialect === 'postgres' ? [postgresLines(lines)] : lines.flatMap(sqliteLine);
}

const INSERT_LINE = `INSERT INTO usage_lines (request_id, at, api_key_id, model, images, seconds, cost_micros, provider)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (request_id) DO NOTHING`;
const ADD_TO_DAY = `INSERT INTO usage_days (api_key_id, day, model, images, seconds, cost_micros) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (api_key_id, day, model) DO UPDATE SET images = images + excluded.images, seconds = seconds + excluded.seconds,
		cost_micros = cost_micros + excluded.cost_micros`;

/**
 * On the data dir every process shares this machine's clock: an entry without its own `at` is
 * stamped when it was recorded. Each line and its day total are two statements, the total only
 * when the line was inserted.
 */
function sqliteLine({ entry, recordedAt }: UsageLine): SqlStatement[] {
	const at = entry.at ?? recordedAt;
	const costMicros = toMicros(entry.costUsd);
	const seconds = entry.seconds ?? 0;
	return [
		{ sql: INSERT_LINE, values: [entry.requestId, at, entry.apiKeyId, entry.model, entry.images, seconds, costMicros, entry.provider ?? null] },
		{ sql: ADD_TO_DAY, values: [entry.apiKeyId, at.toISOString().slice(0, 10), entry.model, entry.images, seconds, costMicros], ifChanged: true },
	];
}

/**
 * One clock decides, as for files: an entry without its own `at` is stamped with the database's
 * now less its age on this replica's clock (a duration, right however far the clock is off), and
 * its day follows from that stamp. The lines and the day totals they add to are one statement (one
 * round trip however many lines a retry writes): only lines inserted now (not ones another replica
 * or an earlier attempt wrote) are added, in key, day and model order, so replicas adding to the
 * same totals never wait in a circle.
 */
const POSTGRES_INSERT = `
	WITH stamped AS (
		SELECT entry.*, COALESCE(entry.given_at, now() - ($10::timestamptz - entry.recorded_at)) AS at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::integer[], $6::bigint[], $7::timestamptz[], $8::timestamptz[], $9::text[])
			AS entry(request_id, api_key_id, model, images, seconds, cost_micros, given_at, recorded_at, provider)
	), inserted AS (
		INSERT INTO usage_lines (request_id, at, api_key_id, model, images, seconds, cost_micros, provider)
		SELECT request_id, at, api_key_id, model, images, seconds, cost_micros, provider FROM stamped
		ON CONFLICT (request_id) DO NOTHING
		RETURNING api_key_id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model, images, seconds, cost_micros
	)
	INSERT INTO usage_days AS total (api_key_id, day, model, images, seconds, cost_micros)
	SELECT api_key_id, day, model, sum(images), sum(seconds), sum(cost_micros) FROM inserted GROUP BY api_key_id, day, model ORDER BY api_key_id, day, model
	ON CONFLICT (api_key_id, day, model) DO UPDATE
		SET images = total.images + EXCLUDED.images, seconds = total.seconds + EXCLUDED.seconds, cost_micros = total.cost_micros + EXCLUDED.cost_micros`;

function postgresLines(lines: readonly UsageLine[]): SqlStatement {
	return {
		sql: POSTGRES_INSERT,
		values: [
			lines.map(({ entry }) => entry.requestId),
			lines.map(({ entry }) => entry.apiKeyId),
			lines.map(({ entry }) => entry.model),
			lines.map(({ entry }) => entry.images),
			lines.map(({ entry }) => entry.seconds ?? 0),
			lines.map(({ entry }) => toMicros(entry.costUsd)),
			lines.map(({ entry }) => entry.at ?? null),
			lines.map(({ recordedAt }) => recordedAt),
			lines.map(({ entry }) => entry.provider ?? null),
			new Date(),
		],
	};
}
