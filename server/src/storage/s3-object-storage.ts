/**
 * Hosted bytes in an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO, Ceph RGW, …), so that any
 * number of replicas share them. Credentials come only from the AWS SDK's default chain
 * (environment, profiles, instance roles): nothing secret passes through our flags or our logs.
 *
 * Writes are streamed multipart uploads: a few parts of PART_SIZE bytes are in memory, whatever the
 * size of the file. S3 makes an object visible only when its upload completes, so a half-written
 * file is never readable; an upload that fails is aborted so its parts are not kept (and billed)
 * by the store, and `removeIncomplete` cleans up after a process that died mid-upload.
 */
import {
	AbortMultipartUploadCommand,
	DeleteObjectCommand,
	DeleteObjectsCommand,
	GetObjectCommand,
	HeadBucketCommand,
	ListMultipartUploadsCommand,
	S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { Readable, finished } from 'node:stream';
import { ByteCounter } from './byte-streams';
import { inlineContentDisposition } from './cache-headers';
import type { ByteRange, ObjectStorage, ObjectWriteOptions, PresignOptions } from './object-storage';
import { describeS3Error, isNoSuchUpload, isNotFound, isNotImplemented } from './s3-errors';
import { PartBuffers, writeInParts } from './s3-part-writer';

export interface S3ObjectStorageOptions {
	bucket: string;
	/** An S3-compatible server's URL; omitted for AWS S3. */
	endpoint?: string;
	region: string;
	/** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (MinIO, Ceph, s3rver). */
	forcePathStyle: boolean;
	/** Prepended to every key; a trailing `/` is added when missing, so `imagegen` means `imagegen/…`. */
	prefix: string;
	/** A ready client (tests, or callers sharing one); otherwise one is made from the options above. */
	client?: S3Client;
	/** The part buffers to reuse (a test counting them); otherwise the storage's own. */
	partBuffers?: PartBuffers;
}

/**
 * S3's minimum part size (objects up to 48.8 GiB within the 10 000-part limit). A write holds
 * (QUEUE_SIZE + 1) part buffers, reused from part to part (s3-part-writer.ts): what a write costs
 * in memory follows this size, not the file's.
 */
export const PART_SIZE = 5 * 1024 * 1024;
/** Parts uploaded at once: one can be on the wire while the next fills. Each more costs a part buffer. */
export const QUEUE_SIZE = 2;
/** DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;
/** S3 refuses presigned URLs valid for longer than 7 days. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
const CHECK_TIMEOUT_MS = 15_000;

/** Thrown by `S3ObjectStorage.open` when the bucket cannot be used; the message names the flags to fix. */
export class S3BucketUnreachableError extends Error {
	constructor(message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = 'S3BucketUnreachableError';
	}
}

export class S3ObjectStorage implements ObjectStorage {
	readonly engine = 's3' as const;
	readonly bucket: string;
	private readonly client: S3Client;
	private readonly ownsClient: boolean;
	private readonly prefix: string;
	/** One write's part buffers stay between writes, so a steady stream of uploads allocates none. */
	private readonly partBuffers: PartBuffers;

	constructor(private readonly options: S3ObjectStorageOptions) {
		this.bucket = options.bucket;
		this.partBuffers = options.partBuffers ?? new PartBuffers(PART_SIZE, QUEUE_SIZE + 1);
		this.prefix = normalizePrefix(options.prefix);
		this.ownsClient = options.client === undefined;
		this.client = options.client ?? createClient(options);
	}

	/** A storage whose bucket answered: a wrong bucket, endpoint, region or credential fails at start. */
	static async open(options: S3ObjectStorageOptions): Promise<S3ObjectStorage> {
		const storage = new S3ObjectStorage(options);
		try {
			await storage.check();
		} catch (error) {
			await storage.close();
			throw error;
		}
		return storage;
	}

	async check(): Promise<void> {
		try {
			await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
		} catch (error) {
			throw new S3BucketUnreachableError(`S3 bucket '${this.bucket}' (--s3-bucket) is not usable at ${this.describeEndpoint()}: ${explainCheckFailure(error)}`, { cause: error });
		}
	}

	async ping(signal: AbortSignal): Promise<void> {
		await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: signal });
	}

	/** On failure the source is unpiped, not destroyed: whether to drain or destroy it is the caller's call. */
	async write(key: string, bytesOrStream: Readable | Buffer, options: ObjectWriteOptions): Promise<number> {
		options.signal?.throwIfAborted();
		const source = Buffer.isBuffer(bytesOrStream) ? Readable.from([bytesOrStream]) : bytesOrStream;
		// Socket-sized chunks pass without a backpressure round trip each.
		const counter = new ByteCounter(256 * 1024);
		// The first thing that went wrong on our side (the source failed, the caller aborted). It is
		// what the caller is told, rather than what the store answered to the resulting abort.
		let failure: unknown;
		const cancelParts = new AbortController();
		// Ending the body stops the reading; cancelling stops the parts in flight. The multipart upload
		// is then aborted before the write settles, so nothing is left when `write` rejects.
		const stop = (error: unknown) => {
			cancelParts.abort(error);
			if (!counter.destroyed && !counter.readableEnded) counter.destroy(error instanceof Error ? error : new Error(String(error)));
		};
		const fail = (error: unknown) => {
			failure ??= error;
			stop(error);
		};
		const onAbort = () => fail(options.signal?.reason ?? abortError());
		options.signal?.addEventListener('abort', onAbort, { once: true });
		// `finished` also reports a source that closes before its end without an error.
		const stopWatchingSource = finished(source, { writable: false }, (error) => error && fail(error));
		source.pipe(counter);

		try {
			await writeInParts(counter, {
				client: this.client,
				bucket: this.bucket,
				key: this.objectKey(key),
				contentType: options.contentType,
				buffers: this.partBuffers,
				queueSize: QUEUE_SIZE,
				signal: cancelParts.signal,
				onPartFailure: stop,
			});
			if (failure !== undefined) {
				// Aborted after the last byte was read, while a single-request upload was in flight:
				// the object exists now, and the caller has been promised it does not.
				await this.delete([key]);
				throw failure;
			}
			return counter.bytes;
		} catch (error) {
			// The source is left to the caller (to drain a request body, or destroy it), but an error
			// it emits later, such as a client disconnecting, must not go unhandled and end the process.
			source.on('error', ignore);
			throw failure ?? error;
		} finally {
			options.signal?.removeEventListener('abort', onAbort);
			stopWatchingSource();
			source.unpipe(counter);
		}
	}

	async read(key: string, range?: ByteRange): Promise<Readable | null> {
		try {
			const answer = await this.client.send(
				new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Range: range && `bytes=${range.start}-${range.end}` }),
			);
			if (!(answer.Body instanceof Readable)) throw new Error(`S3 answered GetObject for '${key}' without a readable body`);
			return range ? exactRange(answer.Body, range, answer.ContentRange) : answer.Body;
		} catch (error) {
			if (isNotFound(error)) return null;
			throw error;
		}
	}

	async delete(keys: readonly string[]): Promise<void> {
		for (let start = 0; start < keys.length; start += DELETE_BATCH) {
			const batch = keys.slice(start, start + DELETE_BATCH);
			const answer = await this.client.send(
				new DeleteObjectsCommand({
					Bucket: this.bucket,
					// Quiet: the answer lists only the keys that could not be deleted.
					Delete: { Objects: batch.map((key) => ({ Key: this.objectKey(key) })), Quiet: true },
				}),
			);
			const errors = (answer.Errors ?? []).filter((entry) => entry.Code !== 'NoSuchKey');
			if (errors.length > 0) {
				const first = errors[0]!;
				throw new Error(`S3 did not delete ${errors.length} of ${batch.length} objects; the first, '${first.Key}': ${first.Code ?? 'error'} ${first.Message ?? ''}`.trim());
			}
		}
	}

	async removeIncomplete(key: string): Promise<void> {
		await this.abortMultipartUploads(this.objectKey(key));
		// The upload may have completed just before its writer died, leaving an object that no
		// metadata points to.
		try {
			await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
		} catch (error) {
			if (!isNotFound(error)) throw error;
		}
	}

	async presignGet(key: string, options: PresignOptions): Promise<string> {
		// Floored: the signing time is whole seconds too, so the link ends at or before expiresAt.
		const secondsLeft = Math.floor((options.expiresAt.getTime() - Date.now()) / 1000);
		const expiresIn = Math.min(MAX_PRESIGN_SECONDS, Math.max(1, secondsLeft));
		const command = new GetObjectCommand({
			Bucket: this.bucket,
			Key: this.objectKey(key),
			ResponseContentType: options.contentType,
			ResponseContentDisposition: inlineContentDisposition(options.fileName),
			ResponseCacheControl: options.cacheControl,
		});
		return getSignedUrl(this.client, command, { expiresIn });
	}

	async close(): Promise<void> {
		if (this.ownsClient) this.client.destroy();
	}

	private objectKey(key: string): string {
		return `${this.prefix}${key}`;
	}

	/**
	 * AWS, R2 and MinIO keep the parts of an upload nobody completed or aborted, and bill them, so
	 * each one under this key is aborted. Stores that do not implement the calls (s3rver) are
	 * tolerated; a bucket lifecycle rule (AbortIncompleteMultipartUpload) is the backstop there.
	 */
	private async abortMultipartUploads(objectKey: string): Promise<void> {
		let keyMarker: string | undefined;
		let uploadIdMarker: string | undefined;
		for (;;) {
			let page;
			try {
				page = await this.client.send(
					new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: objectKey, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
				);
			} catch (error) {
				if (isNotImplemented(error)) return;
				throw error;
			}
			for (const upload of page.Uploads ?? []) {
				// The prefix also matches longer keys (`a.png` matches `a.png2`): only this key's uploads go.
				if (upload.Key !== objectKey || !upload.UploadId) continue;
				try {
					await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: objectKey, UploadId: upload.UploadId }));
				} catch (error) {
					if (!isNoSuchUpload(error) && !isNotImplemented(error)) throw error;
				}
			}
			if (!page.IsTruncated || (page.NextKeyMarker === keyMarker && page.NextUploadIdMarker === uploadIdMarker)) return;
			keyMarker = page.NextKeyMarker;
			uploadIdMarker = page.NextUploadIdMarker;
		}
	}

	private describeEndpoint(): string {
		if (!this.options.endpoint) return `AWS S3 in region ${this.options.region} (--s3-region)`;
		return `${redactUrl(this.options.endpoint)} (--s3-endpoint, region ${this.options.region})`;
	}
}

function createClient(options: S3ObjectStorageOptions): S3Client {
	return new S3Client({
		region: options.region,
		endpoint: options.endpoint,
		forcePathStyle: options.forcePathStyle,
		requestHandler: {
			// A store that does not answer fails the request instead of holding it forever.
			connectionTimeout: 10_000,
			// Proxied downloads hold a socket each for as long as the client reads; the default of 50
			// would queue the 51st concurrent download behind the others.
			httpAgent: { keepAlive: true, maxSockets: 512 },
			httpsAgent: { keepAlive: true, maxSockets: 512 },
		},
	});
}

function normalizePrefix(prefix: string): string {
	const trimmed = prefix.replace(/^\/+/, '');
	return trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
}

function explainCheckFailure(error: unknown): string {
	const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
	if (status === 404) return 'no such bucket (HTTP 404)';
	if (status === 403) {
		return 'access denied (HTTP 403): check the credentials the AWS SDK finds (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role) and that they may use this bucket';
	}
	if (status === 301) return 'the bucket is in another region (HTTP 301): set --s3-region';
	return describeS3Error(error);
}

/** An endpoint as it may be printed: without user information, query or fragment. */
function redactUrl(endpoint: string): string {
	try {
		const url = new URL(endpoint);
		return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
	} catch {
		return `'${endpoint}' (not a URL)`;
	}
}

/**
 * The requested bytes even from a store that ignores a Range or misreads it (s3rver serves the
 * whole object for `bytes=0-0`): what it sent is located by its Content-Range and cut to size.
 */
function exactRange(body: Readable, range: ByteRange, contentRange: string | undefined): Readable {
	const served = /^bytes (\d+)-(\d+)\//.exec(contentRange ?? '');
	// Without a Content-Range the answer is the whole object.
	const servedStart = served ? Number(served[1]) : 0;
	const servedEnd = served ? Number(served[2]) : Infinity;
	if (servedStart === range.start && servedEnd <= range.end) return body;
	if (servedStart > range.start) {
		body.destroy();
		throw new Error(`S3 answered the range ${range.start}-${range.end} with ${contentRange}`);
	}
	return Readable.from(slice(body, range.start - servedStart, range.end - range.start + 1));
}

async function* slice(source: Readable, skip: number, length: number): AsyncGenerator<Buffer> {
	let toSkip = skip;
	let left = length;
	// Leaving the loop early destroys the source: the rest of the answer is not wanted.
	for await (const chunk of source as AsyncIterable<Buffer>) {
		const start = Math.min(toSkip, chunk.length);
		toSkip -= start;
		const piece = chunk.subarray(start, start + left);
		left -= piece.length;
		if (piece.length > 0) yield piece;
		if (left === 0) return;
	}
}

function ignore(): void {}

function abortError(): Error {
	return Object.assign(new Error('The write was aborted'), { name: 'AbortError' });
}
