/**
 * File metadata in the data dir's SQLite database, shared by every process that opens the data dir
 * (a second service during a restart, the CLI). A row is a reservation from before the first byte
 * is written, and a served file once published; bytes without a row are leftovers.
 *
 * Expiry is judged on every read against the `now` passed in, else this machine's clock: every
 * process on one data dir shares it.
 */
import { randomBytes } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import { conditionOf } from '../db/sqlite/condition';
import { whenUnlocked } from '../db/sqlite/busy';
import { bindNumbered, type SqliteDatabase } from '../db/sqlite/database';
import { releaseFreePages } from '../db/sqlite/free-pages';
import { groupCommitOf, type SqliteGroupCommit } from '../db/sqlite/group-commit';
import type { ExpiredEntry, FileMetadataStore, FileRecord, FileReservation, PublishOptions } from './file-metadata';
import { FILE_SQL, toFileRecord, type FileRow } from './file-rows';

/**
 * How long a sweeper holds the batch it took while it deletes the bytes. Past this, the batch is
 * taken to belong to a dead process and another sweeper takes it over.
 */
export const SWEEP_LEASE_MS = 10 * 60_000;

interface ReservationRow {
	id: string;
	storage_key: string;
	writer_pid: number | null;
}

interface ExpiredRow {
	id: string;
	storage_key: string;
	published: number;
}

interface SqliteFileMetadataOptions {
	now?: () => number;
	sweepLeaseMs?: number;
}

const RESERVE = 'INSERT INTO files (id, storage_key, owner_key_id, expires_at, writer_pid) VALUES (?, ?, ?, ?, ?)';
// A reservation a sweeper has taken is being deleted with its bytes: too late to publish.
const PUBLISH = `UPDATE files SET published = 1, name = @name, kind = @kind, mime_type = @mimeType, extension = @extension, size = @size, etag = @etag,
		created_at = @createdAt, expires_at = @expiresAt, provenance = @provenance
	WHERE id = @id AND storage_key = @storageKey AND owner_key_id = @ownerKeyId AND published = 0 AND sweep_token IS NULL`;

export class SqliteFileMetadata implements FileMetadataStore {
	private readonly now: () => number;
	private readonly sweepLeaseMs: number;
	private readonly statements;
	/** Reservations, publishes and releases: the writes every hosted file makes, grouped across requests. */
	private readonly commits: SqliteGroupCommit;
	/** Forgets a disposed batch: the rows still stamped with its token. */
	private readonly forgetTaken: (rows: readonly ExpiredRow[], token: string) => void;
	/** Leaves a batch whose dispose failed to the next sweep. */
	private readonly giveBack: (rows: readonly ExpiredRow[], token: string) => void;

	constructor(
		private readonly database: SqliteDatabase,
		options: SqliteFileMetadataOptions = {},
	) {
		this.now = options.now ?? Date.now;
		this.sweepLeaseMs = options.sweepLeaseMs ?? SWEEP_LEASE_MS;
		this.commits = groupCommitOf(database);
		this.statements = {
			get: database.prepare<[Record<string, unknown>], FileRow>(FILE_SQL.get('$2')),
			remove: database.prepare<[Record<string, unknown>], FileRow>(FILE_SQL.remove('$3')),
			// One statement: two processes' sweepers cannot both take a row, and a batch whose
			// sweeper died is taken over once its lease has passed.
			takeExpired: database.prepare<{ token: string; now: number; until: number; limit: number }, ExpiredRow>(
				`UPDATE files SET sweep_token = @token, sweep_until = @until
				WHERE id IN (
					SELECT id FROM files
					WHERE expires_at <= @now AND (sweep_until IS NULL OR sweep_until <= @now)
					ORDER BY expires_at
					LIMIT @limit
				)
				RETURNING id, storage_key, published`,
			),
			forgetTaken: database.prepare<[string, string]>('DELETE FROM files WHERE id = ? AND sweep_token = ?'),
			giveBack: database.prepare<[string, string]>('UPDATE files SET sweep_token = NULL, sweep_until = NULL WHERE id = ? AND sweep_token = ?'),
			reservations: database.prepare<[], ReservationRow>('SELECT id, storage_key, writer_pid FROM files WHERE published = 0 AND sweep_token IS NULL'),
			forgetReservation: database.prepare('DELETE FROM files WHERE id = ? AND published = 0'),
			hasKey: database.prepare<[string, string], { found: number }>('SELECT 1 AS found FROM files WHERE id = ? AND storage_key = ?'),
			ping: database.prepare('SELECT 1'),
		};
		const eachTaken = (statement: Statement<[string, string]>) =>
			database.transaction((rows: readonly ExpiredRow[], token: string) => {
				for (const row of rows) statement.run(row.id, token);
			}).immediate;
		this.forgetTaken = eachTaken(this.statements.forgetTaken);
		this.giveBack = eachTaken(this.statements.giveBack);
	}

	async reserve(reservation: FileReservation): Promise<void> {
		const expiresAt = reservation.lifetimeMs === undefined ? reservation.expiresAt.getTime() : this.now() + reservation.lifetimeMs;
		// Committed, not yet synced: bytes whose reservation a power cut took are removed at start as
		// belonging to nobody, and the publish that follows syncs the log the reservation is in.
		await this.commits.write([{ sql: RESERVE, values: [reservation.id, reservation.storageKey, reservation.ownerKeyId, expiresAt, process.pid] }], { durable: false });
	}

	async publish(file: FileRecord, options: PublishOptions = {}): Promise<FileRecord> {
		const createdAt = options.lifetimeMs === undefined ? file.createdAt : new Date(this.now());
		const expiresAt = options.lifetimeMs === undefined ? file.expiresAt : new Date(createdAt.getTime() + options.lifetimeMs);
		const row = {
			id: file.id,
			storageKey: file.storageKey,
			ownerKeyId: file.ownerKeyId,
			name: file.name,
			kind: file.kind,
			mimeType: file.mimeType,
			extension: file.extension,
			size: file.size,
			etag: file.etag,
			createdAt: createdAt.getTime(),
			expiresAt: expiresAt.getTime(),
			provenance: file.provenance === undefined ? null : JSON.stringify(file.provenance),
		};
		const { changes } = await this.commits.write<{ changes: number }>([{ sql: PUBLISH, values: row }], { durable: options.durable ?? true });
		if (changes !== 1) throw new Error(`file id ${file.id} has no open reservation to publish`);
		return { ...file, createdAt, expiresAt };
	}

	async release(id: string): Promise<void> {
		// A release lost in a power cut leaves a reservation the start-up clean-up or the sweeper removes.
		await this.commits.write([{ sql: FILE_SQL.release, values: bindNumbered([id]) }], { durable: false });
	}

	async get(id: string, now?: Date): Promise<FileRecord | null> {
		const row = await whenUnlocked(this.database, () => this.statements.get.get(bindNumbered([id, this.instant(now)])));
		return row ? toFileRecord(row) : null;
	}

	async remove(id: string, ownerKeyId: string, now?: Date): Promise<FileRecord | null> {
		const row = await whenUnlocked(this.database, () => this.statements.remove.get(bindNumbered([id, ownerKeyId, this.instant(now)])));
		return row ? toFileRecord(row) : null;
	}

	/**
	 * Each batch is taken by stamping its rows with this sweep's token, disposed of, then deleted
	 * (only the rows still carrying the token). A batch whose dispose failed is given back for the
	 * next sweep; one whose process died is taken over after `sweepLeaseMs`.
	 */
	async sweepExpired(dispose: (batch: ExpiredEntry[]) => Promise<void>, options: { now?: Date; batchSize: number }): Promise<number> {
		if (!Number.isInteger(options.batchSize) || options.batchSize < 1) throw new RangeError(`batchSize must be a positive integer; got ${options.batchSize}`);
		const now = this.instant(options.now);
		let disposed = 0;
		try {
			for (;;) {
				const token = randomBytes(12).toString('base64url');
				const rows = await whenUnlocked(this.database, () => this.statements.takeExpired.all({ token, now, until: now + this.sweepLeaseMs, limit: options.batchSize }));
				if (rows.length === 0) return disposed;
				try {
					await dispose(rows.map((row) => ({ id: row.id, storageKey: row.storage_key, published: row.published === 1 })));
				} catch (error) {
					await whenUnlocked(this.database, () => this.giveBack(rows, token));
					throw error;
				}
				await whenUnlocked(this.database, () => this.forgetTaken(rows, token));
				disposed += rows.length;
				if (rows.length < options.batchSize) return disposed;
			}
		} finally {
			if (disposed > 0) await releaseFreePages(this.database);
		}
	}

	/**
	 * Reservations whose writing process is gone (killed mid-write): `removeBytes` deletes what the
	 * write left, then the reservation is forgotten, without waiting for its expiry. Answers how many.
	 */
	async releaseAbandonedWrites(writerAlive: (pid: number) => boolean, removeBytes: (storageKey: string) => Promise<void>): Promise<number> {
		let released = 0;
		for (const row of this.statements.reservations.all()) {
			if (row.writer_pid === null || writerAlive(row.writer_pid)) continue;
			await removeBytes(row.storage_key);
			released += (await whenUnlocked(this.database, () => this.statements.forgetReservation.run(row.id))).changes;
		}
		return released;
	}

	/** Whether a reservation or a file holds `storageKey`; ours are `<id>.<ext>`. */
	holdsStorageKey(storageKey: string): boolean {
		const id = storageKey.split('.')[0]!;
		return this.statements.hasKey.get(id, storageKey) !== undefined;
	}

	async ping(): Promise<void> {
		this.statements.ping.get();
	}

	condition(): 'ok' | 'full' | 'damaged' {
		return conditionOf(this.database).current().state;
	}

	private instant(now: Date | undefined): number {
		return now ? now.getTime() : this.now();
	}
}
