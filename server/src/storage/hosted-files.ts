/**
 * Hosted files: object storage (bytes) + file metadata (what, whose, until when), whatever their
 * drivers. A file is stored as reserve → write → publish, so a URL never resolves to half a file
 * and a writer that dies leaves a reservation the sweeper can clean up after. The media type is
 * sniffed from the bytes before the storage key `<id>.<ext>` is chosen.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { invalidField } from '../../../core/errors';
import { MEDIA_DETAILS, type SniffedMedia } from '../../../core/media';
import type { UploadOutputFormat } from '../../../core/schemas';
import { fitImage, type FitImageOptions } from '../media/fit-image';
import { checkPixels, declaredSizeOfFile } from '../media/image-header';
import { conversionError, convertToBuffer, streamConversion } from '../media/convert-image';
import { ImageWork, type ImageTask } from '../media/image-work';
import type { Provenance } from '../../../core/api';
import { mayCarryC2pa } from '../provenance/provenance-scan';
import { fitAndMark, markConversion } from '../provenance/marked-conversions';
import { verifiedProvenanceOf } from '../provenance/verified-provenance';
import type { ProvenanceMarker } from '../provenance/provenance-marker';
import type { FileMetadataStore, FileRecord } from './file-metadata';
import { InspectingStream, storageError, unsupportedMedia } from './media-inspector';
import type { ByteRange, ObjectStorage } from './object-storage';
import { isEngineUnreachable, serviceUnavailable } from '../http/engine-unavailable';
import { hostedFileHeaders } from './cache-headers';

export type { FileRecord } from './file-metadata';

/** Bytes written under a reservation, sniffed, not yet visible under any URL. */
export interface StagedFile {
	id: string;
	storageKey: string;
	media: SniffedMedia;
	size: number;
	ownerKeyId: string;
	/** What the bytes carry, when known (a manifest we signed); else found when published. */
	provenance?: Provenance;
	/** A byte search found what looks like a C2PA manifest store; c2pa-rs decides when published. */
	mayCarryC2pa?: boolean;
}

export interface StageOptions {
	/** Non-secret id of the API key storing the file. */
	ownerKeyId: string;
	maxBytes?: number;
	/** Request field the bytes came from, named in every error. */
	field?: string;
	/** Status for exceeding maxBytes (uploads: 413). */
	oversizeStatus?: 400 | 413;
	/** Keep reading the source after a failure (a request body), instead of destroying it. */
	drainOnError?: boolean;
	/** Refuses a sniffed type before anything is written (e.g. a video sent as `image`). */
	accept?: (media: SniffedMedia) => void;
	/** Re-encodes an image to this format once stored (videos are never converted). */
	convertTo?: UploadOutputFormat;
	/** Aborted when the client leaves: image work for it stops. */
	signal?: AbortSignal;
}

export interface HostedFilesOptions {
	storage: ObjectStorage;
	metadata: FileMetadataStore;
	retentionSeconds: number;
	/** Base of public URLs; a function because the port is known only after listening. */
	publicBaseUrl: () => string;
	now?: () => number;
	/** The bounded queue every conversion and fit runs through (and its pixel limit). */
	imageWork?: ImageWork;
	/** Carries an image's provenance through a conversion or fit; none when absent. */
	marker?: ProvenanceMarker;
}

const NAME = /^([A-Za-z0-9_-]{16,64})\.([a-z0-9]{2,5})$/;
const ID_BYTES = 18; // 144 random bits → 24 base64url characters
const SWEEP_BATCH = 100;

export class HostedFiles {
	readonly storage: ObjectStorage;
	readonly metadata: FileMetadataStore;
	private readonly retentionMs: number;
	private readonly now: () => number;
	readonly imageWork: ImageWork;

	constructor(private readonly options: HostedFilesOptions) {
		this.imageWork = options.imageWork ?? new ImageWork({ maxPixels: 100_000_000 });
		this.storage = options.storage;
		this.metadata = options.metadata;
		this.retentionMs = options.retentionSeconds * 1000;
		this.now = options.now ?? Date.now;
	}

	/** Streams `source` into storage under a reservation, sniffing and counting on the way. */
	async stage(source: Readable, options: StageOptions): Promise<StagedFile> {
		const field = options.field ?? 'file';
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
		// The source may have failed before it got here (a body cut off while the rate limiter's
		// database query ran): its 'error' and 'close' are gone, so nothing else would end the sniff.
		if (source.errored) forwardError(source.errored);
		else if (source.destroyed) forwardClose();
		const abandonSource = () => {
			source.unpipe(inspector);
			source.on('error', () => undefined);
			inspector.destroy();
			// A request body must be read to its end before the client sees our answer; a remote
			// download is simply cut off.
			if (options.drainOnError) source.resume();
			else source.destroy();
		};
		try {
			const media = await inspector.sniffed;
			if (!media) {
				throw inspector.size === 0 ? invalidField(field, `'${field}' is empty`, 'empty_file') : unsupportedMedia(field);
			}
			options.accept?.(media);
			const staged = { ...(await this.writeStaged(inspector, media, options.ownerKeyId)), mayCarryC2pa: inspector.provenance.mayCarryC2pa() };
			// Stored first, converted from the file: the header is checked before anything decodes,
			// and libvips reads the file itself instead of sharp buffering the whole stream. The
			// file's own format too is re-encoded: a conversion asked for drops GPS and serials.
			if (options.convertTo && media.kind === 'image') {
				return await this.convert(staged, options.convertTo, field, options.signal);
			}
			return staged;
		} catch (error) {
			abandonSource();
			throw storageError(error);
		} finally {
			source.off('error', forwardError);
			source.off('close', forwardClose);
		}
	}

	/**
	 * Stages a local file whose type the caller has checked (a video the service made or downloaded):
	 * copied by the storage engine without passing through this process where it can, else streamed.
	 */
	async stageLocalFile(path: string, media: SniffedMedia, ownerKeyId: string): Promise<StagedFile> {
		const { storage } = this;
		try {
			if (!storage.writeLocalFile) return await this.writeStaged(createReadStream(path), media, ownerKeyId);
			return await this.writeStaged({ localFile: path }, media, ownerKeyId);
		} catch (error) {
			throw storageError(error);
		}
	}

	async stageBuffer(bytes: Buffer, media: SniffedMedia, ownerKeyId: string, options: { synced?: boolean } = {}): Promise<StagedFile> {
		try {
			return { ...(await this.writeStaged(bytes, media, ownerKeyId, options)), mayCarryC2pa: mayCarryC2pa(bytes) };
		} catch (error) {
			throw storageError(error);
		}
	}

	/**
	 * Re-encodes a staged image to `format`, from its file through sharp into storage again (works
	 * the same on every driver), and discards the original. Animated GIF/WebP stay animated when
	 * the target is WebP.
	 */
	async convert(staged: StagedFile, format: UploadOutputFormat, field: string, signal?: AbortSignal): Promise<StagedFile> {
		let converted: StagedFile;
		const { marker } = this.options;
		try {
			converted = await this.decodeStaged(staged, field, signal, async (path, task) => {
				// Unmarked, the converted bytes stream straight into storage; marked, they are signed first.
				if (!marker) return this.writeConverted(path, format, field, staged.ownerKeyId, task);
				const media = MEDIA_DETAILS[format];
				const { data, info } = await convertToBuffer(path, format, field, task);
				const marked = await markConversion(marker, { path, media: staged.media, mayCarryC2pa: staged.mayCarryC2pa }, { bytes: data, media, width: info.width, height: info.height });
				return { ...(await this.stageBuffer(marked.bytes, media, staged.ownerKeyId)), provenance: marked.provenance };
			});
		} catch (error) {
			await this.discard(staged);
			throw error;
		}
		return this.replace(staged, converted);
	}

	/**
	 * Scales and re-encodes a staged image until it fits (media/fit-image.ts), from its file, so it
	 * works the same on every driver and is never copied into memory; the original is discarded
	 * once replaced. An image that already fitted is re-encoded too, so its metadata goes.
	 */
	async fit(staged: StagedFile, options: FitImageOptions & { signal?: AbortSignal }): Promise<StagedFile> {
		const { signal, ...fitOptions } = options;
		const { marker } = this.options;
		if (marker) {
			const original = (path: string) => ({ path, media: staged.media, mayCarryC2pa: staged.mayCarryC2pa });
			const done = await this.decodeStaged(staged, options.field, signal, (path, task) => fitAndMark(marker, original(path), { ...fitOptions, task }));
			return this.replace(staged, { ...(await this.stageBuffer(done.marked.bytes, done.fitted.media, staged.ownerKeyId)), provenance: done.marked.provenance });
		}
		const fitted = await this.decodeStaged(staged, options.field, signal, (path, task) => fitImage(path, { ...fitOptions, alwaysReencode: true, task }));
		return this.replace(staged, await this.stageBuffer(fitted.data, fitted.media, staged.ownerKeyId));
	}

	/** Discards `original` for `replacement`; if that fails the replacement goes too, or nobody would know of it. */
	private async replace(original: StagedFile, replacement: StagedFile): Promise<StagedFile> {
		try {
			await this.discard(original);
		} catch (error) {
			await this.discard(replacement).catch(() => undefined);
			throw error;
		}
		return replacement;
	}

	/**
	 * The staged image as a local file (the disk driver's own; a temporary copy for a bucket),
	 * its header checked against the pixel limit, then `work` in a slot of the image queue.
	 */
	private async decodeStaged<T>(staged: StagedFile, field: string, signal: AbortSignal | undefined, work: (path: string, task: ImageTask) => Promise<T>): Promise<T> {
		const local = this.storage.localPath?.(staged.storageKey);
		const temp = local ? undefined : await mkdtemp(join(tmpdir(), 'imagegen-image-'));
		try {
			const path = local ?? join(temp!, staged.storageKey);
			if (temp) await pipeline(await this.readStaged(staged), createWriteStream(path));
			checkPixels(await declaredSizeOfFile(path), this.imageWork.maxPixels, { field, status: 400 });
			return await this.imageWork.run((task) => work(path, task), { signal });
		} finally {
			if (temp) await rm(temp, { recursive: true, force: true });
		}
	}

	/**
	 * Makes staged bytes a served file; its lifetime (the retention, or `lifetimeSeconds` when
	 * shorter) starts now.
	 */
	async publish(staged: StagedFile, options: { lifetimeSeconds?: number; durable?: boolean } = {}): Promise<FileRecord> {
		let provenance: Provenance | undefined;
		try {
			provenance = await this.provenanceOf(staged);
		} catch (error) {
			await this.discard(staged).catch(() => undefined);
			throw storageError(error);
		}
		const createdAt = new Date(this.now());
		const lifetimeMs = Math.min(this.retentionMs, (options.lifetimeSeconds ?? Number.POSITIVE_INFINITY) * 1000);
		let file: FileRecord = {
			id: staged.id,
			name: staged.storageKey,
			storageKey: staged.storageKey,
			kind: staged.media.kind,
			mimeType: staged.media.mimeType,
			extension: staged.media.extension,
			size: staged.size,
			etag: `"${staged.id}"`,
			ownerKeyId: staged.ownerKeyId,
			createdAt,
			expiresAt: new Date(createdAt.getTime() + lifetimeMs),
			...(provenance ? { provenance } : {}),
		};
		try {
			// The store's clock starts the lifetime (with PostgreSQL the one clock all replicas share),
			// unless this instance was given a clock of its own to follow.
			file = await this.metadata.publish(file, { ...(this.options.now ? {} : { lifetimeMs }), durable: options.durable ?? true });
		} catch (error) {
			await this.discard(staged);
			throw storageError(error);
		}
		return file;
	}

	/**
	 * What the staged bytes carry: as the stager said, else their own manifest once c2pa-rs has
	 * parsed and validated it, read back only when a byte search saw what looks like one.
	 */
	private async provenanceOf(staged: StagedFile): Promise<Provenance | undefined> {
		if (staged.provenance || !staged.mayCarryC2pa) return staged.provenance;
		return verifiedProvenanceOf({ size: staged.size, mimeType: staged.media.mimeType, read: async () => buffer(await this.readStaged(staged)) });
	}

	async discard(staged: StagedFile): Promise<void> {
		await this.storage.delete([staged.storageKey]);
		await this.metadata.release(staged.id);
	}

	/**
	 * `provenance`: what the bytes carry when the caller knows better than a scan (a manifest it
	 * signed). `durable: false`: see PublishOptions; `synced: false`: see ObjectWriteOptions.
	 */
	async putBuffer(bytes: Buffer, media: SniffedMedia, ownerKeyId: string, provenance?: Provenance, options: { durable?: boolean; synced?: boolean } = {}): Promise<FileRecord> {
		const staged = await this.stageBuffer(bytes, media, ownerKeyId, options.synced === false ? { synced: false } : {});
		return this.publish(provenance ? { ...staged, provenance } : staged, options);
	}

	async putStream(source: Readable, options: StageOptions): Promise<FileRecord> {
		return this.publish(await this.stage(source, options));
	}

	/** The published, unexpired file `id` if `ownerKeyId` stored it; null for anyone else, as if it did not exist. */
	async info(id: string, ownerKeyId: string): Promise<FileRecord | null> {
		const file = await this.metadata.get(id, this.fixedNow());
		return file && file.ownerKeyId === ownerKeyId ? file : null;
	}

	/** The file behind a public name, or null when unknown or expired (whether swept or not). */
	async get(name: string): Promise<FileRecord | null> {
		const match = NAME.exec(name);
		if (!match) return null;
		const file = await this.metadata.get(match[1]!, this.fixedNow());
		return file && file.name === name ? file : null;
	}

	/** The bytes (or a range); null when they are gone (swept or deleted meanwhile). */
	async open(file: FileRecord, range?: ByteRange): Promise<Readable | null> {
		return this.storage.read(file.storageKey, range);
	}

	/** All of the file's bytes, or null when they are gone or not the size recorded (stored `synced: false`, then a power cut). */
	async openWhole(file: FileRecord): Promise<Readable | null> {
		return this.storage.read(file.storageKey, undefined, { size: file.size });
	}

	/** A direct link for redirect delivery that stops working no later than the file expires. */
	async presign(file: FileRecord): Promise<string | null> {
		if (!this.storage.presignGet) return null;
		return this.storage.presignGet(file.storageKey, {
			expiresAt: file.expiresAt,
			contentType: file.mimeType,
			fileName: file.name,
			cacheControl: hostedFileHeaders(file)['cache-control'],
		});
	}

	publicUrl(file: FileRecord): string {
		return `${this.options.publicBaseUrl()}/files/${file.name}`;
	}

	/**
	 * The file a public URL of this service names (its origin, `/files/<name>`): undefined for any
	 * other URL, null when it names no live file (expired, deleted, never there).
	 */
	async fileAt(url: URL): Promise<FileRecord | null | undefined> {
		let base: URL;
		try {
			base = new URL(this.options.publicBaseUrl());
		} catch {
			return undefined;
		}
		const prefix = `${base.pathname.replace(/\/$/, '')}/files/`;
		if (url.origin !== base.origin || !url.pathname.startsWith(prefix) || url.search !== '') return undefined;
		return this.get(decodeURIComponent(url.pathname.slice(prefix.length)));
	}

	/**
	 * Deletes the file now if `ownerKeyId` stored it; false for unknown, expired or others' files.
	 * Bytes first: should the storage fail, the metadata still points at them, so the caller's retry
	 * (503 `storage_unavailable`) or the sweeper finds them; the other way round they would be lost
	 * to every metadata store that forgets on remove. A file whose bytes went but whose metadata did
	 * not is simply a 404 on read until the repeat removes it.
	 */
	async remove(id: string, ownerKeyId: string): Promise<boolean> {
		const file = await this.metadata.get(id, this.fixedNow());
		if (!file || file.ownerKeyId !== ownerKeyId) return false;
		try {
			await this.storage.delete([file.storageKey]);
		} catch (error) {
			throw isEngineUnreachable(error) ? serviceUnavailable(error, 'storage_unavailable') : error;
		}
		if (!(await this.metadata.remove(id, ownerKeyId, this.fixedNow()))) return false;
		await this.metadata.release(file.id);
		return true;
	}

	/** Deletes expired files and what dead writers left; answers how many entries went. */
	async sweep(): Promise<number> {
		return this.metadata.sweepExpired(
			async (batch) => {
				const published = batch.filter((entry) => entry.published).map((entry) => entry.storageKey);
				if (published.length > 0) await this.storage.delete(published);
				for (const entry of batch.filter((candidate) => !candidate.published)) {
					await this.storage.removeIncomplete(entry.storageKey);
				}
			},
			{ now: this.fixedNow(), batchSize: SWEEP_BATCH },
		);
	}

	/** file → sharp → storage, streamed (media/convert-image.ts); the storage's errors pass as they are. */
	private async writeConverted(input: string, format: UploadOutputFormat, field: string, ownerKeyId: string, task: ImageTask): Promise<StagedFile> {
		const conversion = streamConversion(input, format, task);
		try {
			return await this.writeStaged(conversion.output, MEDIA_DETAILS[format], ownerKeyId);
		} catch (error) {
			if (conversion.decodeFailed(error)) throw conversionError(error, field, format, task);
			throw storageError(error);
		} finally {
			conversion.stop();
		}
	}

	/**
	 * The instant to judge expiry by when this instance was given a clock (tests); otherwise
	 * undefined, so the metadata store judges by its own (PostgreSQL: the database's, shared by
	 * every replica, so replicas whose clocks drift still agree on what is alive).
	 */
	private fixedNow(): Date | undefined {
		return this.options.now ? new Date(this.options.now()) : undefined;
	}

	private async readStaged(staged: StagedFile): Promise<Readable> {
		const input = await this.storage.read(staged.storageKey);
		if (!input) throw new Error(`staged bytes of ${staged.id} are missing`);
		return input;
	}

	private async writeStaged(source: Readable | Buffer | { localFile: string }, media: SniffedMedia, ownerKeyId: string, options: { synced?: boolean } = {}): Promise<StagedFile> {
		const id = randomBytes(ID_BYTES).toString('base64url');
		const storageKey = `${id}.${media.extension}`;
		// The full retention whatever the file's own lifetime: a slow write must never be swept
		// from under its writer, and a dead writer's leftovers go at the latest then.
		await this.metadata.reserve({
			id,
			storageKey,
			ownerKeyId,
			expiresAt: new Date(this.now() + this.retentionMs),
			lifetimeMs: this.options.now ? undefined : this.retentionMs,
		});
		try {
			const writeOptions = { contentType: media.mimeType, ...options };
			const size =
				'localFile' in source ? await this.storage.writeLocalFile!(storageKey, source.localFile, writeOptions) : await this.storage.write(storageKey, source, writeOptions);
			return { id, storageKey, media, size, ownerKeyId };
		} catch (error) {
			await this.storage.removeIncomplete(storageKey).catch(() => undefined);
			await this.metadata.release(id);
			throw error;
		}
	}
}
