/**
 * A provenance record as both databases store it: the same columns and statements (numbered `$n`
 * parameters on both engines), read back whatever way the driver gives times (PostgreSQL: Dates;
 * SQLite: unix milliseconds). The record's key is its payload as hex, in the column `id` that
 * every swept table is keyed by (db/sweep.ts).
 */
import type { NewProvenanceRecord, ProvenanceRecord } from './provenance-records';
import { payloadHex } from './provenance-records';

const COLUMNS = ['id', 'generation_id', 'model', 'api_key_id', 'content_hash', 'prompt', 'created_at', 'expires_at'] as const;
const RECORD_COLUMNS = COLUMNS.join(', ');

export const PROVENANCE_SQL = {
	/** A payload already taken is left as it is: the insert changes nothing. */
	insert: `INSERT INTO provenance_records (${RECORD_COLUMNS}) VALUES (${COLUMNS.map((_, index) => `$${index + 1}`).join(', ')}) ON CONFLICT (id) DO NOTHING`,
	/** Args: the payload's hex, now. */
	find: `SELECT ${RECORD_COLUMNS} FROM provenance_records WHERE id = $1 AND expires_at > $2`,
	/** Records whose keeping ended at or before `$1`: what a sweep deletes. */
	sweepable: 'expires_at <= $1',
};

export interface ProvenanceRow {
	id: string;
	generation_id: string;
	model: string;
	api_key_id: string;
	content_hash: string;
	prompt: string | null;
	created_at: Date | number | string;
	expires_at: Date | number | string;
}

/** The values of `PROVENANCE_SQL.insert`, in its order. */
export function insertValues(record: NewProvenanceRecord, options: { keepForMs: number; includePrompt: boolean }): unknown[] {
	const row: Record<(typeof COLUMNS)[number], unknown> = {
		id: payloadHex(record.payload),
		generation_id: record.generationId,
		model: record.model,
		api_key_id: record.apiKeyId,
		content_hash: record.contentHash,
		prompt: options.includePrompt ? (record.prompt ?? null) : null,
		created_at: record.createdAt,
		expires_at: new Date(record.createdAt.getTime() + options.keepForMs),
	};
	return COLUMNS.map((column) => row[column]);
}

/** SQLite answers unix milliseconds (a number, or text for a large one); PostgreSQL a Date. */
const dateOf = (value: Date | number | string): Date => new Date(typeof value === 'string' ? Number(value) : value);

export function toRecord(row: ProvenanceRow): ProvenanceRecord {
	return {
		payload: row.id,
		generationId: row.generation_id,
		model: row.model,
		apiKeyId: row.api_key_id,
		contentHash: row.content_hash,
		prompt: row.prompt,
		createdAt: dateOf(row.created_at),
		keptUntil: dateOf(row.expires_at),
	};
}
