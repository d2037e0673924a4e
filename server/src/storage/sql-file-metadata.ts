/**
 * File metadata in the service's database: the data dir's SQLite, shared by every process that
 * opens the data dir (a second service during a restart, the CLI), or PostgreSQL, shared by every
 * replica. A row is a reservation from before the first byte is written, and a served file once
 * published; bytes without a row are leftovers.
 *
 * Clock: every comparison uses the `now` passed in, else the store's `now` option (tests), else
 * the clock every process on the database shares (SQLite: this machine's, read here; PostgreSQL:
 * the server's, read by the statement, file-rows.ts), never a replica's own: a file expires, and a removed file
 * disappears, at the same instant for every process or replica however far their clocks drift.
 * With `lifetimeMs` a reservation's and a file's times are stamped by the same clock.
 */
import { randomBytes } from 'node:crypto';
import type { Changes, SqlAdapter } from '../db/sql-adapter';
import type { ExpiredEntry, FileMetadataStore, FileRecord, FileReservation, PublishOptions } from './file-metadata';
import { fileStatements, toFileRecord, type FileRow } from './file-rows';

/**
 * How long a sweeper holds the batch it took while it deletes the bytes. Past this, the batch is
 * taken to belong to a dead process and another sweeper takes it over.
 */
export const SWEEP_LEASE_MS = 10 * 60_000;

interface ReservationRow {
	id: string;
	storage_key: string;
	writer_pid: number;
}

interface ClaimedRow {
	id: string;
	storage_key: string;
	/** PostgreSQL answers a boolean, SQLite 0 or 1. */
	published: boolean | number;
}

interface SqlFileMetadataOptions {
	/** The instant of every statement that is given none, in unix milliseconds (tests); else the database's clock. */
	now?: () => number;
	sweepLeaseMs?: number;
}

export class SqlFileMetadata implements FileMetadataStore {
	private readonly sql: ReturnType<typeof fileStatements>;
	private readonly sweepLeaseMs: number;
	/**
	 * Names the process writing a reservation's bytes, so a start can tell a write killed mid-way
	 * from one another process is still doing. Only on the data dir, whose processes share this
	 * machine: a replica's pid means nothing on another.
	 */
	private readonly writerPid: number | null;
	/** Where this process can read the shared clock itself; else the statements read the database's. */
	private readonly clock: (() => number) | undefined;

	constructor(
		private readonly adapter: SqlAdapter,
		options: SqlFileMetadataOptions = {},
	) {
		this.clock = options.now ?? adapter.processClock;
		this.sql = fileStatements(adapter.dialect);
		this.sweepLeaseMs = options.sweepLeaseMs ?? SWEEP_LEASE_MS;
		this.writerPid = adapter.dialect === 'sqlite' ? process.pid : null;
	}

	async reserve(reservation: FileReservation): Promise<void> {
		const { expiresAt, lifetimeMs } = this.timed(reservation.expiresAt, reservation.lifetimeMs);
		// Committed, not yet synced: bytes whose reservation a power cut took are removed at start as
		// belonging to nobody, and the publish that follows syncs the log the reservation is in.
		await this.adapter.write(
			[{ sql: this.sql.reserve, values: [reservation.id, reservation.storageKey, reservation.ownerKeyId, expiresAt, lifetimeMs, this.writerPid] }],
			{ durable: false },
		);
	}

	async publish(file: FileRecord, options: PublishOptions = {}): Promise<FileRecord> {
		const clock = this.clock;
		const createdAt = options.lifetimeMs !== undefined && clock ? new Date(clock()) : file.createdAt;
		const { expiresAt, lifetimeMs } = this.timed(file.expiresAt, options.lifetimeMs, createdAt);
		const values = [
			file.id,
			file.name,
			file.kind,
			file.mimeType,
			file.extension,
			file.size,
			file.etag,
			createdAt,
			expiresAt,
			file.storageKey,
			file.ownerKeyId,
			lifetimeMs,
			file.provenance === undefined ? null : JSON.stringify(file.provenance),
		];
		const row = await this.adapter.write<{ created_at: Date | number; expires_at: Date | number } | undefined>([{ sql: this.sql.publish, values, returns: 'row' }], {
			durable: options.durable ?? true,
		});
		// None: the reservation expired and a sweeper already took it (and the bytes with it), or there never was one.
		if (!row) throw new Error(`file ${file.id} has no open reservation to publish`);
		return { ...file, createdAt: new Date(row.created_at), expiresAt: new Date(row.expires_at) };
	}

	async release(id: string): Promise<void> {
		// A release lost in a power cut leaves a reservation the start-up clean-up or the sweeper removes.
		await this.adapter.write([{ sql: this.sql.release, values: [id] }], { durable: false });
	}

	async get(id: string, now?: Date): Promise<FileRecord | null> {
		const row = await this.adapter.one<FileRow>(this.sql.get, [id, this.instant(now)]);
		return row ? toFileRecord(row) : null;
	}

	async remove(id: string, ownerKeyId: string, now?: Date): Promise<FileRecord | null> {
		const row = await this.adapter.write<FileRow | undefined>([{ sql: this.sql.remove, values: [id, ownerKeyId, this.instant(now)], returns: 'row' }]);
		return row ? toFileRecord(row) : null;
	}

	/**
	 * Each batch is claimed by stamping its rows with this sweep's token, disposed of, then deleted
	 * (only the rows still carrying the token): no transaction is held while the bytes go. A batch
	 * whose dispose failed is given back for the next sweep; one whose process died is taken over
	 * after `sweepLeaseMs`. Once rows went, the engine is given their space back.
	 */
	async sweepExpired(dispose: (batch: ExpiredEntry[]) => Promise<void>, options: { now?: Date; batchSize: number }): Promise<number> {
		const { batchSize } = options;
		if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer; got ${batchSize}`);
		const now = this.instant(options.now) ?? (await this.adapter.now());
		const until = new Date(now.getTime() + this.sweepLeaseMs);
		let disposed = 0;
		try {
			for (;;) {
				const token = randomBytes(12).toString('base64url');
				const rows = await this.adapter.write<ClaimedRow[]>([{ sql: this.sql.claimExpired, values: [now, token, until, batchSize], returns: 'rows' }]);
				if (rows.length === 0) return disposed;
				const ids = rows.map((row) => row.id);
				try {
					await dispose(rows.map((row) => ({ id: row.id, storageKey: row.storage_key, published: Boolean(row.published) })));
				} catch (error) {
					await this.adapter.write([{ sql: this.sql.giveBack, values: [ids, token] }]);
					throw error;
				}
				await this.adapter.write([{ sql: this.sql.forgetClaimed, values: [ids, token] }]);
				disposed += rows.length;
				if (rows.length < batchSize) return disposed;
			}
		} finally {
			if (disposed > 0) await this.adapter.reclaimSpace();
		}
	}

	/**
	 * Reservations whose writing process is gone (killed mid-write): `removeBytes` deletes what the
	 * write left, then the reservation is forgotten, without waiting for its expiry. Answers how many.
	 * Only the data dir names writers; on PostgreSQL there is none to find.
	 */
	async releaseAbandonedWrites(writerAlive: (pid: number) => boolean, removeBytes: (storageKey: string) => Promise<void>): Promise<number> {
		let released = 0;
		for (const row of await this.adapter.all<ReservationRow>(this.sql.abandonedWrites)) {
			if (writerAlive(Number(row.writer_pid))) continue;
			await removeBytes(row.storage_key);
			released += (await this.adapter.write<Changes>([{ sql: this.sql.forgetReservation, values: [row.id] }])).changes;
		}
		return released;
	}

	/** Whether a reservation or a file holds `storageKey`; ours are `<id>.<ext>`. */
	async holdsStorageKey(storageKey: string): Promise<boolean> {
		const id = storageKey.split('.')[0]!;
		return (await this.adapter.one(this.sql.holdsKey, [id, storageKey])) !== undefined;
	}

	/** Answers once the database takes a statement (the health check). */
	async ping(): Promise<void> {
		await this.adapter.one('SELECT 1 AS ok');
	}

	condition(): 'ok' | 'full' | 'damaged' {
		return this.adapter.condition?.current().state ?? 'ok';
	}

	/** The instant a statement judges by: the one passed in, else the store's clock, else null (the database's). */
	private instant(now: Date | undefined): Date | null {
		if (now) return now;
		return this.clock ? new Date(this.clock()) : null;
	}

	/**
	 * An expiry and lifetime as the statements take them: with the store's own clock the expiry is
	 * reckoned here (from `from`, else that clock's now) and the lifetime passed as null, so the
	 * statement stores the times as given; otherwise the database's clock adds the lifetime.
	 */
	private timed(expiresAt: Date, lifetimeMs: number | undefined, from?: Date): { expiresAt: Date; lifetimeMs: number | null } {
		if (lifetimeMs === undefined) return { expiresAt, lifetimeMs: null };
		const clock = this.clock;
		if (!clock) return { expiresAt, lifetimeMs };
		return { expiresAt: new Date((from?.getTime() ?? clock()) + lifetimeMs), lifetimeMs: null };
	}
}
