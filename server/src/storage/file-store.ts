/**
 * Interface of the hosted-file store. The implementation keeps bytes and a metadata file side by
 * side in the data dir, writes both atomically (temp file + rename), and treats a file as gone the
 * moment it expires, whether or not the sweeper has deleted it yet.
 */
import type { Readable } from 'node:stream';
import type { SniffedMedia } from '../../../core/media';

export interface StoredFile {
	/** URL-safe, at least 128 random bits. */
	id: string;
	/** `<id>.<ext>`, the last path segment of the public URL. */
	name: string;
	kind: SniffedMedia['kind'];
	mimeType: string;
	extension: string;
	size: number;
	etag: string;
	createdAt: Date;
	expiresAt: Date;
}

export interface FileStore {
	putBuffer(bytes: Buffer, media: SniffedMedia): Promise<StoredFile>;
	/** Streams to a temp file; the media type is sniffed from the leading bytes. */
	putStream(source: Readable, options?: { maxBytes?: number }): Promise<StoredFile>;
	get(name: string): Promise<StoredFile | null>;
	publicUrl(file: StoredFile): string;
}
