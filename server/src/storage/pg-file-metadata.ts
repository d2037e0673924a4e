/**
 * File metadata in PostgreSQL, shared by every replica. A row is a reservation (`published`
 * false) from before the first byte is written, and a served file once published.
 *
 * Clock: every comparison uses the `now` passed in, else the database's own clock (`now()`),
 * never the replica's; with `lifetimeMs` a reservation's and a file's times are also stamped by
 * the database. The database clock is the one clock all replicas share, so a file expires,
 * and a removed file disappears, at the same instant on every replica however far their clocks
 * drift; `now` exists for callers (tests) that must fix the instant themselves.
 */
import type { Pool } from 'pg';
import { withConnection } from '../db/postgres/connection';
import type { ExpiredEntry, FileMetadataStore, FileRecord, FileReservation, PublishOptions } from './file-metadata';
import { FILE_SQL, toFileRecord, type FileRow } from './file-rows';

/** The instant of a statement: the `now` passed in, else the database's clock. */
const NOW = (parameter: string) => `COALESCE(${parameter}::timestamptz, now())`;

export class PgFileMetadataStore implements FileMetadataStore {
	constructor(private readonly pool: Pool) {}

	async reserve(reservation: FileReservation): Promise<void> {
		await this.pool.query(
			`INSERT INTO files (id, storage_key, owner_key_id, expires_at)
			VALUES ($1, $2, $3, COALESCE(now() + $5::float8 * interval '1 millisecond', $4::timestamptz))`,
			[reservation.id, reservation.storageKey, reservation.ownerKeyId, reservation.expiresAt, reservation.lifetimeMs ?? null],
		);
	}

	async publish(file: FileRecord, options: PublishOptions = {}): Promise<FileRecord> {
		const { rows } = await this.pool.query<{ created_at: Date; expires_at: Date }>(
			`UPDATE files
			SET published = true, name = $2, kind = $3, mime_type = $4, extension = $5, size = $6, etag = $7,
				created_at = CASE WHEN $12::float8 IS NULL THEN $8::timestamptz ELSE now() END,
				expires_at = COALESCE(now() + $12::float8 * interval '1 millisecond', $9::timestamptz),
				provenance = $13::jsonb
			WHERE id = $1 AND storage_key = $10 AND owner_key_id = $11 AND NOT published
			RETURNING created_at, expires_at`,
			[
				file.id,
				file.name,
				file.kind,
				file.mimeType,
				file.extension,
				file.size,
				file.etag,
				file.createdAt,
				file.expiresAt,
				file.storageKey,
				file.ownerKeyId,
				options.lifetimeMs ?? null,
				file.provenance === undefined ? null : JSON.stringify(file.provenance),
			],
		);
		if (rows.length !== 1) {
			// The reservation expired and a sweeper already removed it (and the bytes with it).
			throw new Error(`file ${file.id} has no open reservation to publish`);
		}
		return { ...file, createdAt: rows[0]!.created_at, expiresAt: rows[0]!.expires_at };
	}

	/** Answers once the database takes a statement (the health check). */
	async ping(): Promise<void> {
		await this.pool.query('SELECT 1');
	}

	async release(id: string): Promise<void> {
		await this.pool.query(FILE_SQL.release, [id]);
	}

	async get(id: string, now?: Date): Promise<FileRecord | null> {
		const { rows } = await this.pool.query<FileRow>(FILE_SQL.get(NOW('$2')), [id, now ?? null]);
		return rows[0] ? toFileRecord(rows[0]) : null;
	}

	async remove(id: string, ownerKeyId: string, now?: Date): Promise<FileRecord | null> {
		const { rows } = await this.pool.query<FileRow>(FILE_SQL.remove(NOW('$3')), [id, ownerKeyId, now ?? null]);
		return rows[0] ? toFileRecord(rows[0]) : null;
	}

	/**
	 * Each batch is taken in its own transaction with `FOR UPDATE SKIP LOCKED`: the rows stay
	 * locked while `dispose` deletes the bytes, so another replica's sweeper skips them, and they
	 * are deleted in the same transaction once `dispose` resolved. If `dispose` fails (or this
	 * process dies) the transaction rolls back and the rows wait for the next sweep.
	 */
	async sweepExpired(dispose: (batch: ExpiredEntry[]) => Promise<void>, options: { now?: Date; batchSize: number }): Promise<number> {
		if (!Number.isInteger(options.batchSize) || options.batchSize < 1) throw new RangeError(`batchSize must be a positive integer; got ${options.batchSize}`);
		let disposed = 0;
		for (;;) {
			const count = await this.sweepBatch(dispose, options.now, options.batchSize);
			disposed += count;
			if (count < options.batchSize) return disposed;
		}
	}

	private sweepBatch(dispose: (batch: ExpiredEntry[]) => Promise<void>, now: Date | undefined, batchSize: number): Promise<number> {
		return withConnection(
			this.pool,
			async (client) => {
				const { rows } = await client.query<{ id: string; storage_key: string; published: boolean }>(
					`SELECT id, storage_key, published FROM files
					WHERE expires_at <= COALESCE($1::timestamptz, now())
					ORDER BY expires_at
					LIMIT $2
					FOR UPDATE SKIP LOCKED`,
					[now ?? null, batchSize],
				);
				if (rows.length === 0) return 0;
				await dispose(rows.map((row) => ({ id: row.id, storageKey: row.storage_key, published: row.published })));
				await client.query('DELETE FROM files WHERE id = ANY($1)', [rows.map((row) => row.id)]);
				return rows.length;
			},
			{ transaction: true },
		);
	}
}
