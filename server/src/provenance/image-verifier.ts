/**
 * Checking an image sent to the service (POST /v1/provenance/verify, the MCP tool `verify_image`):
 * the image taken as uploads take it (a URL fetched under the address check, or read from storage
 * when it is one of this service's own files; a data URI; base64), held in memory only while it
 * is checked, its pixels decoded in a turn of the image queue within --max-image-pixels and its
 * watermark read off the event loop (watermark-reader.ts).
 *
 * A check holds its whole file, up to VERIFY_MAX_BYTES, from the first byte read to the answer: a
 * few run at once and a few more wait their turn before a byte of theirs is read (a multipart body
 * waits in the socket); the rest hear 503 with Retry-After at once.
 */
import { buffer } from 'node:stream/consumers';
import { invalidField } from '../../../core/errors';
import { parseMediaInput } from '../../../core/media';
import { ImageWork } from '../media/image-work';
import type { RemoteOpener } from '../net/safe-fetch';
import type { ProvenanceRecordStore } from './provenance-records';
import { checkedImage, imageTooLarge, verifyImage, VERIFY_MAX_BYTES, type VerifyAnswer, type VerifyCaller } from './verify-image';
import { WatermarkReader } from './watermark-reader';

export interface ImageVerifierServices {
	records: Pick<ProvenanceRecordStore, 'find'>;
	/** The service's image queue: every decode of the service runs through it. */
	imageWork: ImageWork;
	openRemote: RemoteOpener;
	/** Reads a URL of this service's own hosted files from storage; undefined when it is not one of them. */
	readOwnFile?: (url: URL, field: string, maxBytes: number) => Promise<Buffer | undefined>;
	maxUploadBytes: number;
	/** The compiled detection worker; found beside watermark-reader.ts unless given. */
	detectWorkerScript?: string;
}

/** Checks reading or checking their image at once; each holds at most one file in memory. */
const CHECKS_AT_ONCE = 4;
/** Checks waiting for a turn, none of their bytes read yet. */
const CHECKS_WAITING = 16;
/** A turn lasts as long as reading the image may (a slow upload, a fetched URL) and checking it. */
const CHECK_BUDGET_MS = 5 * 60_000;

export class ImageVerifier {
	/** The largest image checked: the upload limit, within VERIFY_MAX_BYTES. */
	readonly maxBytes: number;
	/** Admission, not decoding: a queue of the image queue's kind, so a full one answers 503 as it does. */
	private readonly turns: ImageWork;
	private readonly watermarks: WatermarkReader;

	constructor(private readonly services: ImageVerifierServices) {
		this.maxBytes = Math.min(services.maxUploadBytes, VERIFY_MAX_BYTES);
		this.turns = new ImageWork({ maxPixels: services.imageWork.maxPixels, concurrency: CHECKS_AT_ONCE, maxQueued: CHECKS_WAITING, budgetMs: CHECK_BUDGET_MS });
		this.watermarks = new WatermarkReader(services.imageWork, services.detectWorkerScript);
	}

	/** Runs `work` (reading an image, then `verifyBytes`) in its turn; `signal`: the caller left. */
	inTurn<T>(work: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
		return this.turns.run((task) => work(task.signal), { signal });
	}

	/** `image` of a JSON body or a tool's arguments: an http(s) URL, a data URI or base64, checked in its turn. */
	verifyInput(value: unknown, field: string, caller: VerifyCaller, signal?: AbortSignal): Promise<VerifyAnswer> {
		if (typeof value !== 'string') {
			throw invalidField(field, `'${field}' must be a string: an http(s) URL, a data URI or base64 image data`, value === undefined ? 'missing_field' : 'invalid_type');
		}
		const input = parseMediaInput(value, field);
		return this.inTurn(async (stop) => {
			const bytes = input.kind === 'url' ? await this.fetch(input.url, field, stop) : input.bytes;
			return this.verifyBytes(bytes, field, caller, stop);
		}, signal);
	}

	/** Bytes already read, inside a turn (`inTurn`). */
	verifyBytes(bytes: Buffer, field: string, caller: VerifyCaller, signal?: AbortSignal): Promise<VerifyAnswer> {
		const { records, imageWork } = this.services;
		const image = checkedImage(bytes, field, { maxBytes: this.maxBytes, maxPixels: imageWork.maxPixels });
		return verifyImage(image, { records, caller, readWatermark: (checked) => this.watermarks.read(checked.bytes, signal) });
	}

	/** A file larger than `maxBytes`, refused as it is read. */
	tooLarge(field: string): Error {
		return imageTooLarge(field, this.maxBytes);
	}

	private async fetch(url: URL, field: string, signal: AbortSignal): Promise<Buffer> {
		const { readOwnFile, openRemote } = this.services;
		const own = await readOwnFile?.(url, field, this.maxBytes);
		if (own) return own;
		return buffer(await openRemote(url, { field, maxBytes: this.maxBytes, oversizeStatus: 413, signal }));
	}

	/** Waits for the images being read, then ends the reading threads. */
	close(): Promise<void> {
		return this.watermarks.close();
	}
}
