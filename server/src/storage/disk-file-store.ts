/**
 * Hosted files on disk: `<id>.<ext>` holds the bytes, `<id>.json` the metadata (type, size,
 * expiry). Bytes are written to a temp file in the same directory and renamed into place; the
 * metadata is written (atomically too) only after that, and a file is served only when its
 * metadata exists. So a crash or a full disk never leaves a URL that resolves to half a file.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, writeFile as writeFileCallback } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ImageGenError, invalidField } from '../../../core/errors';
import { IMAGE_TYPES, SNIFF_BYTES, VIDEO_TYPES, sniffMedia, type SniffedMedia } from '../../../core/media';
import type { FileStore, StoredFile } from './file-store';
import { formatBytes } from '../net/safe-fetch';

/** Bytes written to a temp file, sniffed, not yet visible under any URL. */
export interface StagedFile {
	path: string;
	media: SniffedMedia;
	size: number;
}

export interface StageOptions {
	maxBytes?: number;
	/** Request field the bytes came from, named in every error. */
	field?: string;
	/** Status for exceeding maxBytes (uploads: 413). */
	oversizeStatus?: 400 | 413;
	/** Keep reading the source after a failure (a request body), instead of destroying it. */
	drainOnError?: boolean;
}

export interface DiskFileStoreOptions {
	directory: string;
	retentionSeconds: number;
	/** Base of public URLs; a function because the port is known only after listening. */
	publicBaseUrl: () => string;
	/** Temp files and metadata-less bytes older than this are leftovers of a crash or abort. */
	staleAfterMs?: number;
	/** Where staged bytes are written; replaceable so a full disk can be simulated in tests. */
	openWriteStream?: (path: string) => Writable;
	now?: () => number;
}

const TEMP_PREFIX = '.tmp-';
// The callback form writes through a plain descriptor; the promise form wraps each write in a
// FileHandle object, which costs a measurable share of a busy service's main thread.
const writeFile = promisify(writeFileCallback);
const NAME = /^([A-Za-z0-9_-]{22,64})\.([a-z0-9]{2,5})$/;
const ID_BYTES = 18; // 144 random bits → 24 base64url characters

export class DiskFileStore implements FileStore {
	readonly directory: string;
	private readonly retentionMs: number;
	private readonly staleAfterMs: number;
	private readonly now: () => number;
	private readonly openWriteStream: (path: string) => Writable;

	constructor(private readonly options: DiskFileStoreOptions) {
		this.directory = options.directory;
		this.retentionMs = options.retentionSeconds * 1000;
		this.staleAfterMs = options.staleAfterMs ?? 15 * 60_000;
		this.now = options.now ?? Date.now;
		this.openWriteStream = options.openWriteStream ?? ((path) => createWriteStream(path, { flags: 'wx', mode: 0o644 }));
	}

	async init(): Promise<void> {
		await mkdir(this.directory, { recursive: true });
		// One process serves a data dir, so whatever is half-written when it starts was left by a
		// process that died mid-write (SIGKILL, power loss): it goes now, not after staleAfterMs.
		await this.sweep({ leftoversOlderThanMs: -1 });
	}

	tempPath(): string {
		return join(this.directory, `${TEMP_PREFIX}${randomBytes(12).toString('base64url')}`);
	}

	/** Streams `source` into a temp file, sniffing the type from its leading bytes on the way. */
	async stage(source: Readable, options: StageOptions = {}): Promise<StagedFile> {
		const field = options.field ?? 'file';
		const path = this.tempPath();
		const inspector = new InspectingStream(field, options.maxBytes ?? Number.POSITIVE_INFINITY, options.oversizeStatus ?? 413);
		const forwardError = (error: Error) => inspector.destroy(error);
		// A source destroyed without an error (a client that went away) never ends: treat it as one.
		const forwardClose = () => {
			if (!source.readableEnded) {
				inspector.destroy(invalidField(field, `'${field}' ended before all of it arrived (the connection was closed)`, 'incomplete_upload'));
			}
		};
		source.once('error', forwardError);
		source.once('close', forwardClose);
		source.pipe(inspector);
		try {
			await pipeline(inspector, this.openWriteStream(path));
		} catch (error) {
			source.unpipe(inspector);
			source.on('error', () => undefined);
			// A request body must be read to its end before the client sees our answer; a remote
			// download is simply cut off.
			if (options.drainOnError) source.resume();
			else source.destroy();
			await removeQuietly(path);
			throw storageError(error);
		} finally {
			source.off('error', forwardError);
			source.off('close', forwardClose);
		}
		if (!inspector.media) {
			await removeQuietly(path);
			throw inspector.size === 0
				? invalidField(field, `'${field}' is empty`, 'empty_file')
				: unsupportedMedia(field);
		}
		return { path, media: inspector.media, size: inspector.size };
	}

	async stageBuffer(bytes: Buffer, media: SniffedMedia): Promise<StagedFile> {
		const path = this.tempPath();
		try {
			await writeFile(path, bytes, { flag: 'wx' });
		} catch (error) {
			await removeQuietly(path);
			throw storageError(error);
		}
		return { path, media, size: bytes.length };
	}

	/** Moves staged bytes under their final name and then writes the metadata that publishes them. */
	async commit(staged: StagedFile): Promise<StoredFile> {
		const file = this.newFile(staged.media, staged.size);
		const bytesPath = join(this.directory, file.name);
		try {
			await rename(staged.path, bytesPath);
			await this.publish(file);
		} catch (error) {
			await Promise.all([removeQuietly(staged.path), removeQuietly(bytesPath), removeQuietly(this.metadataPath(file.id))]);
			throw storageError(error);
		}
		return file;
	}

	/**
	 * Bytes already in memory go straight to their final name: a fresh random name that nobody
	 * knows before `publish` answers, and bytes without metadata are never served (and are swept).
	 */
	async putBuffer(bytes: Buffer, media: SniffedMedia): Promise<StoredFile> {
		const file = this.newFile(media, bytes.length);
		const bytesPath = join(this.directory, file.name);
		try {
			await writeFile(bytesPath, bytes, { flag: 'wx' });
			await this.publish(file);
		} catch (error) {
			await Promise.all([removeQuietly(bytesPath), removeQuietly(this.metadataPath(file.id))]);
			throw storageError(error);
		}
		return file;
	}

	private newFile(media: SniffedMedia, size: number): StoredFile {
		const id = randomBytes(ID_BYTES).toString('base64url');
		const createdAt = new Date(this.now());
		return {
			id,
			name: `${id}.${media.extension}`,
			kind: media.kind,
			mimeType: media.mimeType,
			extension: media.extension,
			size,
			etag: `"${id}"`,
			createdAt,
			expiresAt: new Date(createdAt.getTime() + this.retentionMs),
		};
	}

	/**
	 * Writing the metadata publishes the file. It needs no temp file and rename: the id is fresh, so
	 * no reader can ask for it before this returns, and a half-written file left by a crash does
	 * not parse, which makes it unpublished (and the restart sweep removes it with its bytes).
	 */
	private async publish(file: StoredFile): Promise<void> {
		await writeFile(this.metadataPath(file.id), JSON.stringify(file), { flag: 'wx' });
	}

	async discard(staged: StagedFile | { path: string }): Promise<void> {
		await removeQuietly(staged.path);
	}

	async putStream(source: Readable, options: StageOptions = {}): Promise<StoredFile> {
		return this.commit(await this.stage(source, options));
	}

	/** The file behind a public name, or null when unknown or expired (whether swept or not). */
	async get(name: string): Promise<StoredFile | null> {
		const match = NAME.exec(name);
		if (!match) return null;
		let file: StoredFile;
		try {
			file = parseMetadata(await readFile(this.metadataPath(match[1]!), 'utf8'));
		} catch {
			return null;
		}
		if (file.name !== name || file.expiresAt.getTime() <= this.now()) return null;
		return file;
	}

	/** An open handle on the bytes, so a sweep during a download cannot cut it short. Null if gone. */
	async openBytes(file: StoredFile): Promise<FileHandle | null> {
		try {
			return await open(join(this.directory, file.name), 'r');
		} catch {
			return null;
		}
	}

	publicUrl(file: StoredFile): string {
		return `${this.options.publicBaseUrl()}/files/${file.name}`;
	}

	/**
	 * Deletes expired files and crash leftovers (temp files, bytes without metadata) older than
	 * `leftoversOlderThanMs`. Metadata goes first so nothing half-deleted is served.
	 */
	async sweep({ leftoversOlderThanMs = this.staleAfterMs }: { leftoversOlderThanMs?: number } = {}): Promise<number> {
		const now = this.now();
		const isStale = async (path: string) => {
			const info = await stat(path).catch(() => null);
			return info !== null && now - info.mtimeMs > leftoversOlderThanMs;
		};
		let removed = 0;
		const entries = await readdir(this.directory).catch(() => [] as string[]);
		const published = new Set(entries.filter((entry) => entry.endsWith('.json')).map((entry) => entry.slice(0, -5)));
		for (const entry of entries) {
			const path = join(this.directory, entry);
			if (entry.startsWith(TEMP_PREFIX)) {
				if (await isStale(path)) removed += await removeCounted(path);
				continue;
			}
			if (entry.endsWith('.json')) {
				const id = entry.slice(0, -5);
				const file = await readFile(path, 'utf8').then(parseMetadata).catch(() => null);
				if (file && file.expiresAt.getTime() > now) continue;
				if (!file && !(await isStale(path))) continue;
				await removeQuietly(path);
				const bytesName = file?.name ?? entries.find((candidate) => candidate.startsWith(`${id}.`) && !candidate.endsWith('.json'));
				if (bytesName) await removeQuietly(join(this.directory, bytesName));
				removed++;
				continue;
			}
			const match = NAME.exec(entry);
			// Bytes renamed into place whose metadata never arrived (crash in between).
			if (match && !published.has(match[1]!) && (await isStale(path))) removed += await removeCounted(path);
		}
		return removed;
	}

	private metadataPath(id: string): string {
		return join(this.directory, `${id}.json`);
	}
}

function parseMetadata(text: string): StoredFile {
	const raw = JSON.parse(text) as Record<string, unknown>;
	const file = {
		...(raw as unknown as StoredFile),
		createdAt: new Date(String(raw.createdAt)),
		expiresAt: new Date(String(raw.expiresAt)),
	};
	if (typeof file.name !== 'string' || typeof file.size !== 'number' || Number.isNaN(file.expiresAt.getTime())) {
		throw new Error('malformed metadata');
	}
	return file;
}

/** Counts bytes (enforcing the limit) and sniffs the media type from the first SNIFF_BYTES. */
class InspectingStream extends Transform {
	size = 0;
	media: SniffedMedia | null = null;
	private head: Buffer[] = [];
	private headLength = 0;
	private decided = false;

	constructor(
		private readonly field: string,
		private readonly maxBytes: number,
		private readonly oversizeStatus: 400 | 413,
	) {
		super();
	}

	override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
		this.size += chunk.length;
		if (this.size > this.maxBytes) {
			callback(
				new ImageGenError(this.oversizeStatus, `'${this.field}' is larger than the upload limit of ${formatBytes(this.maxBytes)}`, {
					param: this.field,
					code: 'file_too_large',
				}),
			);
			return;
		}
		if (!this.decided) {
			this.head.push(chunk);
			this.headLength += chunk.length;
			if (this.headLength >= SNIFF_BYTES && !this.decide()) {
				callback(unsupportedMedia(this.field));
				return;
			}
		}
		callback(null, chunk);
	}

	override _flush(callback: TransformCallback): void {
		if (!this.decided && this.headLength > 0) this.decide();
		callback();
	}

	private decide(): boolean {
		this.decided = true;
		this.media = sniffMedia(Buffer.concat(this.head));
		this.head = [];
		return this.media !== null;
	}
}

export function unsupportedMedia(field: string): ImageGenError {
	return new ImageGenError(
		415,
		`'${field}' is not a supported image or video. Supported, judged by the bytes: images ${IMAGE_TYPES.join(', ')}; videos ${VIDEO_TYPES.join(', ')}`,
		{ param: field, code: 'unsupported_media_type' },
	);
}

/** Disk-full errors become a 507; ImageGenErrors pass through; anything else stays as it is. */
export function storageError(error: unknown): unknown {
	const code = (error as NodeJS.ErrnoException)?.code;
	if (code === 'ENOSPC' || code === 'EDQUOT') {
		return new ImageGenError(507, 'The server has no storage space left for this file; try again later', {
			code: 'insufficient_storage',
		});
	}
	return error;
}

async function removeQuietly(path: string): Promise<void> {
	await unlink(path).catch(() => undefined);
}

async function removeCounted(path: string): Promise<number> {
	return unlink(path).then(
		() => 1,
		() => 0,
	);
}
