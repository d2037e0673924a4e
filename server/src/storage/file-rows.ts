/**
 * A hosted file as both databases store it: the same columns and the statements both run (numbered
 * `$n` parameters, which SQLite reads as named ones; sqlite/database.ts `bindNumbered`), read back
 * into a FileRecord. The drivers differ only in how values arrive (PostgreSQL: bigint as text,
 * timestamps as Dates; SQLite: numbers, times in unix milliseconds) and in their clock: `now` is
 * the engine's SQL for the instant of a statement (PostgreSQL's falls back on the database's own).
 * Reservations, publishes and sweeps stay each engine's own: the data dir names a reservation's
 * writing process and leases its sweeps across processes, PostgreSQL locks rows instead.
 */
import type { Provenance } from '../../../core/api';
import type { MediaKind } from '../../../core/media';
import type { FileRecord } from './file-metadata';

const FILE_RECORD_COLUMNS = 'id, name, storage_key, kind, mime_type, extension, size, etag, owner_key_id, created_at, expires_at, provenance';

export const FILE_SQL = {
	release: 'DELETE FROM files WHERE id = $1',
	/** A published file not yet expired at `now`. Args: id, now. */
	get: (now: string) => `SELECT ${FILE_RECORD_COLUMNS} FROM files WHERE id = $1 AND published AND expires_at > ${now}`,
	/** Expires the owner's file at `now`, so every reader stops serving it at once. Args: id, owner, now. */
	remove: (now: string) =>
		`UPDATE files SET expires_at = ${now}
		WHERE id = $1 AND owner_key_id = $2 AND published AND expires_at > ${now}
		RETURNING ${FILE_RECORD_COLUMNS}`,
};

export interface FileRow {
	id: string;
	name: string;
	storage_key: string;
	kind: MediaKind;
	mime_type: string;
	extension: string;
	size: number | string;
	etag: string;
	owner_key_id: string;
	created_at: Date | number;
	expires_at: Date | number;
	/** PostgreSQL's jsonb arrives parsed, SQLite's text as JSON; NULL for a file stored before it was recorded. */
	provenance: Provenance | string | null;
}

export function toFileRecord(row: FileRow): FileRecord {
	return {
		id: row.id,
		name: row.name,
		storageKey: row.storage_key,
		kind: row.kind,
		mimeType: row.mime_type,
		extension: row.extension,
		size: Number(row.size),
		etag: row.etag,
		ownerKeyId: row.owner_key_id,
		createdAt: new Date(row.created_at),
		expiresAt: new Date(row.expires_at),
		...(row.provenance ? { provenance: typeof row.provenance === 'string' ? (JSON.parse(row.provenance) as Provenance) : row.provenance } : {}),
	};
}
