/**
 * Where hosted bytes live: a directory (`disk`) or an S3-compatible bucket (`s3`). Only bytes:
 * what a file is, who owns it and when it expires is the metadata store's business, so the two
 * can be combined freely (disk + embedded metadata for one laptop, s3 + PostgreSQL for a fleet).
 */
import type { Readable } from 'node:stream';
import type { StorageEngineName } from '../config/service-config';

// The names are the option's values; the drivers answer to them.
export type { StorageEngineName };

export interface ObjectWriteOptions {
	contentType: string;
	/** Aborts the write; whatever was sent so far is removed (temp file, multipart upload). */
	signal?: AbortSignal;
	/**
	 * false: the bytes need not outlive a power cut, so no disk sync of their own (the disk driver;
	 * S3 is durable anyway): after one the object may be missing or short, and a reader that must
	 * not send a short object asks `read` for its size.
	 */
	synced?: boolean;
}

export interface ByteRange {
	start: number;
	/** Inclusive. */
	end: number;
}

export interface PresignOptions {
	/** The link must stop working no later than this. */
	expiresAt: Date;
	contentType: string;
	/** Suggested file name for Content-Disposition. */
	fileName: string;
	/**
	 * Cache-Control the bucket answers with (S3's `response-cache-control`). Presigning can carry
	 * only the response-* overrides S3 knows: noindex and CORS headers come from the bucket's own
	 * configuration (docs/operations.md, "Redirect delivery").
	 */
	cacheControl?: string;
}

export interface ObjectStorage {
	readonly engine: StorageEngineName;
	/**
	 * Stores `source` under `key` and answers the byte count. The object is complete before its
	 * row publishes it (nothing reads an unpublished key); on any failure nothing is left and
	 * incomplete parts are removed (a crash in between is cleaned by `removeIncomplete`). A stream is never held whole in memory;
	 * bytes the caller already holds (a generated image) may be written in one go.
	 */
	write(key: string, source: Readable | Buffer, options: ObjectWriteOptions): Promise<number>;
	/**
	 * Stores the local file at `path` under `key` without reading it through this process (the disk
	 * engine copies it, by a reflink where the file system has them); answers the byte count. Absent
	 * where the bytes go elsewhere: the caller streams the file through `write`.
	 */
	writeLocalFile?(key: string, path: string, options: ObjectWriteOptions): Promise<number>;
	/** The bytes (or a range of them), or null when there is no such object. */
	read(key: string, range?: ByteRange, expect?: { size: number }): Promise<Readable | null>;
	/** Deletes objects; keys that do not exist are not an error. */
	delete(keys: readonly string[]): Promise<void>;
	/**
	 * Removes everything a `write(key)` whose writer died may have left: a temp file, an incomplete
	 * multipart upload, and the object itself when the write completed just before the writer died.
	 * Used for reservations never published. Must tolerate stores that cannot list uploads.
	 */
	removeIncomplete(key: string): Promise<void>;
	/**
	 * Where a complete object lies on the local file system, for libvips to read it in place
	 * (image conversion and fitting); undefined when the driver keeps bytes elsewhere.
	 */
	localPath?(key: string): string;
	/** A direct, time-limited GET link (redirect delivery); undefined when the driver has none. */
	presignGet?(key: string, options: PresignOptions): Promise<string>;
	/** Resolves when the store answers (the health check); rejects while it cannot be reached. */
	ping?(signal: AbortSignal): Promise<void>;
	close?(): Promise<void>;
}
