/**
 * What a hosted file is, who stored it and when it expires. In the data dir's SQLite database on
 * one machine, PostgreSQL for a fleet. Expiry is judged on every read, so an expired file is gone
 * at once on every replica whether or not a sweeper has run.
 */
import type { Provenance } from '../../../core/api';
import type { MediaKind } from '../../../core/media';

export interface FileRecord {
	/** URL-safe, at least 128 random bits. */
	id: string;
	/** `<id>.<ext>`, the last path segment of the public URL. */
	name: string;
	/** Key of the bytes in the object storage. */
	storageKey: string;
	kind: MediaKind;
	mimeType: string;
	extension: string;
	size: number;
	etag: string;
	/** Non-secret id of the API key that stored it (see keys/authenticate.ts); only it may see or delete it. */
	ownerKeyId: string;
	createdAt: Date;
	expiresAt: Date;
	/** What the bytes carry (docs/provenance.md); absent on files stored before it was recorded. */
	provenance?: Provenance;
}

/**
 * Taken before the first byte is written, with the would-be expiry: if the writer dies, the
 * sweeper finds the reservation once it expires and removes whatever the write left behind.
 */
export interface FileReservation {
	id: string;
	storageKey: string;
	ownerKeyId: string;
	expiresAt: Date;
	/** When set, the reservation lasts this long from the store's own clock, and `expiresAt` is ignored. */
	lifetimeMs?: number;
}

export interface PublishOptions {
	/**
	 * When set, `createdAt` is the store's own now and `expiresAt` this much later; the record
	 * answered carries them. Otherwise the record's times are stored as given.
	 */
	lifetimeMs?: number;
	/**
	 * False: the answer may come once the row is committed (visible everywhere) but before it is
	 * synced, because the caller makes a durable write to the same database before it acknowledges
	 * anything (a generation's usage line), whose sync covers this row. Engines whose every commit
	 * is synced ignore it.
	 */
	durable?: boolean;
}

/** A batch handed to the sweeper: reservations never published and published files, both expired. */
export interface ExpiredEntry {
	id: string;
	storageKey: string;
	/** False for a reservation whose write never finished. */
	published: boolean;
}

export interface FileMetadataStore {
	reserve(reservation: FileReservation): Promise<void>;
	/** Turns the reservation of `file.id` into a served file; answers the record as stored. */
	publish(file: FileRecord, options?: PublishOptions): Promise<FileRecord>;
	/** Forgets a reservation whose write failed, or a removed file, once its bytes are gone. */
	release(id: string): Promise<void>;
	/** The published, unexpired file, or null. */
	get(id: string, now?: Date): Promise<FileRecord | null>;
	/**
	 * If `ownerKeyId` stored the file and it has not expired, expires it now (404 everywhere at
	 * once) and answers it; the caller then deletes the bytes and `release`s the record. Should the
	 * caller die in between, the sweeper finishes the job. Null for anyone else's or unknown ids.
	 */
	remove(id: string, ownerKeyId: string, now?: Date): Promise<FileRecord | null>;
	/**
	 * Hands expired entries to `dispose` in batches of at most `batchSize`; an entry is forgotten
	 * only after `dispose` resolved for it. Concurrent sweepers (other replicas) never receive the
	 * same entry at the same time. Answers how many entries were disposed of.
	 */
	sweepExpired(dispose: (batch: ExpiredEntry[]) => Promise<void>, options: { now?: Date; batchSize: number }): Promise<number>;
	/** Resolves when the store answers (the health check); rejects while it cannot be reached. */
	ping?(): Promise<void>;
	/** An embedded database's own state, beyond reachable: out of room, or a page found damaged. */
	condition?(): 'ok' | 'full' | 'damaged';
	close?(): Promise<void>;
}
