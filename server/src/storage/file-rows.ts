/**
 * A hosted file as both databases store it: the columns, the statements (numbered `$n`
 * parameters), and the row read back into a FileRecord. The drivers differ in how values arrive
 * (PostgreSQL: bigint as text, timestamps as Dates, booleans; SQLite: numbers, times in unix
 * milliseconds, 0 and 1), which `toFileRecord` accepts alike, and in what `FileDialect` spells.
 */
import type { Provenance } from '../../../core/api';
import type { MediaKind } from '../../../core/media';
import type { Dialect } from '../db/sql-adapter';
import type { FileRecord } from './file-metadata';

/**
 * What the engines spell differently, and nothing else. Times: PostgreSQL keeps timestamptz and
 * its clock is the server's `now()`, the one every replica shares; SQLite keeps unix milliseconds
 * and its clock is this machine's, which every process on the data dir shares. Both clocks read
 * the same instant throughout a statement, so a file published with a lifetime expires exactly
 * that long after it was created. A list of ids as one parameter: an array (PostgreSQL), JSON text
 * (SQLite). Rows a concurrent sweeper is claiming: skipped (PostgreSQL); SQLite's write lock lets
 * one claim run at a time. An open reservation: as the data dir's partial index `files_reserved`
 * reads it, so a start's look for abandoned writes uses the index.
 */
interface FileDialect {
	now: string;
	/** `at` plus `ms` milliseconds (NULL when `ms` is). */
	plusMs(at: string, ms: string): string;
	idIn(ids: string): string;
	skipLocked: string;
	unpublished: string;
}

const DIALECTS: Record<Dialect, FileDialect> = {
	postgres: {
		now: 'now()',
		plusMs: (at, ms) => `${at} + CAST(${ms} AS double precision) * interval '1 millisecond'`,
		idIn: (ids) => `id = ANY(${ids})`,
		skipLocked: 'FOR UPDATE SKIP LOCKED',
		unpublished: 'NOT published',
	},
	sqlite: {
		now: "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)",
		plusMs: (at, ms) => `${at} + ${ms}`,
		idIn: (ids) => `id IN (SELECT value FROM json_each(${ids}))`,
		skipLocked: '',
		unpublished: 'published = 0',
	},
};

const FILE_RECORD_COLUMNS = 'id, name, storage_key, kind, mime_type, extension, size, etag, owner_key_id, created_at, expires_at, provenance';

/** The file statements on one engine; each text is built once, when the store is made. */
export function fileStatements(dialect: Dialect) {
	const { now, plusMs, idIn, skipLocked, unpublished } = DIALECTS[dialect];
	/** The instant of a statement: the parameter when the caller fixes it, else the database's clock. */
	const instant = (parameter: string) => `COALESCE(CAST(${parameter} AS timestamptz), ${now})`;
	/** Expired at `$1` and not held by another sweeper's claim. */
	const claimable = 'expires_at <= $1 AND (sweep_until IS NULL OR sweep_until <= $1)';
	return {
		/** Args: id, storage key, owner, expiry, lifetime in ms (or null: the expiry as given), writer's pid (or null). */
		reserve: `INSERT INTO files (id, storage_key, owner_key_id, expires_at, writer_pid)
			VALUES ($1, $2, $3, COALESCE(${plusMs(now, '$5')}, $4), $6)`,
		/**
		 * Args: id, name, kind, MIME type, extension, size, etag, created, expires, storage key, owner,
		 * lifetime in ms (or null: the times as given), provenance JSON. A reservation a sweeper has
		 * taken is being deleted with its bytes: too late to publish.
		 */
		publish: `UPDATE files
			SET published = true, name = $2, kind = $3, mime_type = $4, extension = $5, size = $6, etag = $7,
				created_at = CASE WHEN CAST($12 AS double precision) IS NULL THEN $8 ELSE ${now} END,
				expires_at = COALESCE(${plusMs(now, '$12')}, $9),
				provenance = $13
			WHERE id = $1 AND storage_key = $10 AND owner_key_id = $11 AND NOT published AND sweep_token IS NULL
			RETURNING created_at, expires_at`,
		release: 'DELETE FROM files WHERE id = $1',
		/** A published file not yet expired. Args: id, now (or null). */
		get: `SELECT ${FILE_RECORD_COLUMNS} FROM files WHERE id = $1 AND published AND expires_at > ${instant('$2')}`,
		/** Expires the owner's file, so every reader stops serving it at once. Args: id, owner, now (or null). */
		remove: `UPDATE files SET expires_at = ${instant('$3')}
			WHERE id = $1 AND owner_key_id = $2 AND published AND expires_at > ${instant('$3')}
			RETURNING ${FILE_RECORD_COLUMNS}`,
		/**
		 * One statement: two sweepers never both take a row, and a batch whose sweeper died is taken
		 * over once its claim has lapsed. The test is repeated outside the subquery: on PostgreSQL a
		 * row another claim stamped meanwhile is checked again, and only the outer test is.
		 * Args: now, token, claimed until, batch size.
		 */
		claimExpired: `UPDATE files SET sweep_token = $2, sweep_until = $3
			WHERE id IN (SELECT id FROM files WHERE ${claimable} ORDER BY expires_at LIMIT $4 ${skipLocked}) AND ${claimable}
			RETURNING id, storage_key, published`,
		/** Forgets a disposed batch: its rows still stamped with its token. Args: ids, token. */
		forgetClaimed: `DELETE FROM files WHERE ${idIn('$1')} AND sweep_token = $2`,
		/** Leaves a batch whose dispose failed to the next sweep. Args: ids, token. */
		giveBack: `UPDATE files SET sweep_token = NULL, sweep_until = NULL WHERE ${idIn('$1')} AND sweep_token = $2`,
		abandonedWrites: `SELECT id, storage_key, writer_pid FROM files WHERE ${unpublished} AND writer_pid IS NOT NULL AND sweep_token IS NULL`,
		forgetReservation: 'DELETE FROM files WHERE id = $1 AND NOT published',
		holdsKey: 'SELECT 1 AS found FROM files WHERE id = $1 AND storage_key = $2',
	};
}

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
