/**
 * Counting and sniffing a byte stream on its way to storage: the size limit is enforced (naming the
 * request field) and the media type is judged from the first SNIFF_BYTES. The leading bytes are
 * held back until the type is known, so the caller can pick the storage key (`<id>.<ext>`) and
 * refuse the wrong kind before a single byte is written anywhere.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { ImageGenError } from '../../../core/errors';
import { IMAGE_TYPES, SNIFF_BYTES, VIDEO_TYPES, sniffMedia, type SniffedMedia } from '../../../core/media';
import { fileTooLarge } from '../http/error-handler';
import { insufficientStorage, isStorageFull } from '../http/storage-full';
import { ProvenanceScan, VIDEO_SCAN_BYTES } from '../provenance/provenance-scan';
import { STREAM_HIGH_WATER_MARK } from './byte-streams';

export class InspectingStream extends Transform {
	size = 0;
	media: SniffedMedia | null = null;
	/** The marks the bytes carry, found as they pass (docs/provenance.md). */
	readonly provenance = new ProvenanceScan();
	/** Resolves once the type is decided (null: the stream ended without a recognisable type). */
	readonly sniffed: Promise<SniffedMedia | null>;
	private head: Buffer[] = [];
	private headLength = 0;
	private decided = false;
	private settle!: (media: SniffedMedia | null) => void;

	constructor(
		private readonly field: string,
		private readonly maxBytes: number,
		private readonly oversizeStatus: 400 | 413,
	) {
		super({ highWaterMark: STREAM_HIGH_WATER_MARK });
		this.sniffed = new Promise<SniffedMedia | null>((resolve, reject) => {
			this.settle = resolve;
			this.once('error', reject);
		});
		// Errors after the decision reach the writer through its pipeline; this promise is done by then.
		this.sniffed.catch(() => undefined);
	}

	override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
		this.size += chunk.length;
		this.provenance.feed(chunk);
		if (this.size > this.maxBytes) {
			callback(fileTooLarge(this.field, this.maxBytes, this.oversizeStatus));
			return;
		}
		if (this.decided) {
			callback(null, chunk);
			return;
		}
		this.head.push(chunk);
		this.headLength += chunk.length;
		if (this.headLength >= SNIFF_BYTES && !this.decide()) {
			callback(unsupportedMedia(this.field));
			return;
		}
		callback();
	}

	override _flush(callback: TransformCallback): void {
		if (!this.decided) {
			if (this.headLength > 0) this.decide();
			else this.settle(null);
		}
		callback();
	}

	private decide(): boolean {
		this.decided = true;
		this.media = sniffMedia(Buffer.concat(this.head));
		if (this.media?.kind === 'video') this.provenance.limitTo(VIDEO_SCAN_BYTES);
		if (this.media) for (const chunk of this.head) this.push(chunk);
		this.head = [];
		this.settle(this.media);
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

/** Out-of-space errors become a 507; ImageGenErrors pass through; anything else stays as it is. */
export function storageError(error: unknown): unknown {
	return isStorageFull(error) ? insufficientStorage(error) : error;
}
