/**
 * A stream written to S3 in parts cut into buffers that are reused: a part's buffer goes back to a
 * small pool once S3 has acknowledged it, so a write holds (queue size + 1) part buffers whatever
 * the size of the file, and a long upload allocates nothing per part. (lib-storage's `Upload`
 * concatenates every part into a fresh buffer and leaves the old ones to the garbage collector,
 * which let resident memory run well above what is in use.)
 *
 * A stream that ends within the first part is one PutObject; a longer one is a multipart upload,
 * aborted on any failure so that its parts are not kept (and billed) by the store.
 */
import {
	AbortMultipartUploadCommand,
	ChecksumAlgorithm,
	CompleteMultipartUploadCommand,
	CreateMultipartUploadCommand,
	PutObjectCommand,
	UploadPartCommand,
	type CompletedPart,
	type S3Client,
} from '@aws-sdk/client-s3';

/** Part-sized buffers to reuse; keeps at most `keepIdle` between writes, the rest go to the collector. */
export class PartBuffers {
	private readonly idle: Buffer[] = [];

	constructor(
		readonly partSize: number,
		private readonly keepIdle: number,
	) {}

	take(): Buffer {
		// Outside Node's shared slab: a part buffer is freed or reused as a whole.
		return this.idle.pop() ?? Buffer.allocUnsafeSlow(this.partSize);
	}

	give(buffer: Buffer): void {
		if (this.idle.length < this.keepIdle) this.idle.push(buffer);
	}
}

interface PartWriteOptions {
	client: S3Client;
	bucket: string;
	key: string;
	contentType: string;
	buffers: PartBuffers;
	/** Parts on the wire at once. */
	queueSize: number;
	/** Cancels the parts in flight (the write has failed on the caller's side). */
	signal: AbortSignal;
	/** A part failed: the caller stops `body`, so that reading it does not wait for more bytes. */
	onPartFailure(error: unknown): void;
}

/** Writes `body` to `options.key`; on failure nothing is left in the bucket but what a lost abort leaves. */
export function writeInParts(body: AsyncIterable<Buffer>, options: PartWriteOptions): Promise<void> {
	return new PartWrite(options).write(body);
}

/** One stream's write: its parts in flight, those S3 acknowledged, and the multipart upload once created. */
class PartWrite {
	private readonly inFlight = new Set<Promise<void>>();
	private readonly completed: CompletedPart[] = [];
	private creating: Promise<string> | undefined;
	private partFailure: { error: unknown } | undefined;
	private partNumber = 0;

	constructor(private readonly options: PartWriteOptions) {}

	async write(body: AsyncIterable<Buffer>): Promise<void> {
		const { client, bucket, key, contentType, buffers } = this.options;
		try {
			const last = await this.cutIntoParts(body);
			if (this.partNumber === 0) {
				// Not cancelled by `signal`: the caller deletes an object that was stored after all.
				await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: contentType, Body: last.buffer.subarray(0, last.filled) }));
				buffers.give(last.buffer);
				return;
			}
			await this.dispatch(last.buffer, last.filled);
			await Promise.all(this.inFlight);
			if (this.partFailure) throw this.partFailure.error;
			this.completed.sort((a, b) => a.PartNumber! - b.PartNumber!);
			await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: await this.creating!, MultipartUpload: { Parts: this.completed } }));
		} catch (error) {
			await this.abort();
			throw error;
		}
	}

	/** Copies the stream into part buffers, sending each full one; answers the last, not yet sent. */
	private async cutIntoParts(body: AsyncIterable<Buffer>): Promise<{ buffer: Buffer; filled: number }> {
		const { buffers } = this.options;
		let current = buffers.take();
		let filled = 0;
		for await (const chunk of body) {
			for (let offset = 0; offset < chunk.length; ) {
				// A full part is sent only once a byte beyond it arrives: the last part may be short,
				// and a file of exactly one part is one PutObject.
				if (filled === buffers.partSize) {
					await this.dispatch(current, filled);
					current = buffers.take();
					filled = 0;
				}
				const copied = chunk.copy(current, filled, offset);
				filled += copied;
				offset += copied;
			}
		}
		return { buffer: current, filled };
	}

	/** Sends a part once fewer than `queueSize` are on the wire. */
	private async dispatch(buffer: Buffer, length: number): Promise<void> {
		while (this.inFlight.size >= this.options.queueSize) await Promise.race(this.inFlight);
		if (this.partFailure) throw this.partFailure.error;
		const sending = this.uploadPart(buffer, length, ++this.partNumber).catch((error: unknown) => {
			this.partFailure ??= { error };
			this.options.onPartFailure(error);
		});
		this.inFlight.add(sending);
		void sending.finally(() => this.inFlight.delete(sending));
	}

	private async uploadPart(buffer: Buffer, length: number, number: number): Promise<void> {
		const { client, bucket, key, buffers, signal } = this.options;
		const uploadId = await (this.creating ??= this.create());
		const answer = await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: number, Body: buffer.subarray(0, length) }), {
			abortSignal: signal,
		});
		if (!answer.ETag) throw new Error(`S3 answered UploadPart ${number} for '${key}' without an ETag`);
		const { ETag, ChecksumCRC32, ChecksumCRC32C, ChecksumSHA1, ChecksumSHA256 } = answer;
		this.completed.push({ PartNumber: number, ETag, ChecksumCRC32, ChecksumCRC32C, ChecksumSHA1, ChecksumSHA256 });
		// Only an acknowledged part's buffer is reused: a cancelled request may still reference its bytes.
		buffers.give(buffer);
	}

	private async create(): Promise<string> {
		const { client, bucket, key, contentType } = this.options;
		const checksums = await client.config.requestChecksumCalculation();
		// Not cancelled by `signal`: an upload the store created must be known, to be aborted.
		const answer = await client.send(
			new CreateMultipartUploadCommand({
				Bucket: bucket,
				Key: key,
				ContentType: contentType,
				// As lib-storage does: the parts' checksums are then checked again on completion.
				ChecksumAlgorithm: checksums === 'WHEN_SUPPORTED' ? ChecksumAlgorithm.CRC32 : undefined,
			}),
		);
		if (!answer.UploadId) throw new Error(`S3 answered CreateMultipartUpload for '${key}' without an upload id`);
		return answer.UploadId;
	}

	/** After a failure: waits for the parts on the wire, then aborts the multipart upload if one was created. */
	private async abort(): Promise<void> {
		await Promise.all(this.inFlight);
		const uploadId = await this.creating?.catch(() => undefined);
		if (uploadId === undefined) return;
		// A store that refuses the abort (or does not implement it) keeps the parts until a bucket
		// lifecycle rule or `removeIncomplete` removes them; the write's own failure is what matters.
		const { client, bucket, key } = this.options;
		await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
	}
}
