/**
 * Storing an upload, shared by every way in (POST /v1/uploads, the MCP tool `upload_file`): a
 * staged file is converted or fitted as planned and published (`finish`), and a JSON upload (URL,
 * data URI or base64 in `file` / `image` / `video`) is received, checked and finished (`fromJson`).
 * The bytes decide what the file is; whatever fails leaves nothing stored.
 */
import { Readable } from 'node:stream';
import { ImageGenError, invalidField } from '../../../core/errors';
import { sniffMedia, type ImageType, type MediaInput, type SniffedMedia } from '../../../core/media';
import { outputFormatForVideo, parseUploadJson, type UploadJsonField, type UploadOutputFormat } from '../../../core/schemas';
import { NO_PROVENANCE, type UploadResponse } from '../../../core/api';
import { checkUploadOptionsFor, parseUploadOptions, type UploadOptions } from '../../../core/upload-options';
import { fileTooLarge } from '../http/error-handler';
import type { ServiceMetrics } from '../metrics/service-metrics';
import type { RemoteOpener } from '../net/safe-fetch';
import type { FileRecord, HostedFiles, StagedFile } from '../storage/hosted-files';
import { unsupportedMedia } from '../storage/media-inspector';

/** What to do with the received bytes before they are published. */
export interface UploadPlan {
	/** `output_format` still to apply (not already applied while streaming in). */
	outputFormat?: UploadOutputFormat;
	options: UploadOptions;
}

interface UploadServices {
	store: HostedFiles;
	openRemote: RemoteOpener;
	maxUploadBytes: number;
	retentionSeconds: number;
	metrics: ServiceMetrics;
}

export interface Uploads {
	describe(file: FileRecord): UploadResponse;
	/** Converts or fits the staged file as planned, then publishes it; `signal` stops image work for a client that left. */
	finish(staged: StagedFile, field: string, plan: UploadPlan, signal?: AbortSignal): Promise<UploadResponse>;
	/** A JSON upload body, validated by core exactly as POST /v1/uploads validates it. */
	fromJson(body: unknown, ownerKeyId: string, signal?: AbortSignal): Promise<UploadResponse>;
	/** The media kind of an upload that failed once its kind was known (the metrics' `kind` label). */
	failedKind(error: unknown): string | undefined;
}

/** The `Uploads` of the service: received bytes staged, checked, converted or fitted, then published. */
export class UploadService implements Uploads {
	private readonly failedKinds = new WeakMap<object, string>();

	constructor(private readonly services: UploadServices) {}

	describe(file: FileRecord): UploadResponse {
		const url = this.services.store.publicUrl(file);
		const details = { expiresAt: file.expiresAt.toISOString(), id: file.id, mimeType: file.mimeType, sizeBytes: file.size, provenance: file.provenance ?? NO_PROVENANCE };
		return file.kind === 'video' ? { videoUrl: url, ...details } : { imageUrl: url, ...details };
	}

	async finish(staged: StagedFile, field: string, plan: UploadPlan, signal?: AbortSignal): Promise<UploadResponse> {
		const { store, metrics } = this.services;
		let current = staged;
		try {
			refuseImageOptionsForVideo(current.media, plan);
			const { maxSide, maxBytes, expiresIn } = plan.options;
			if (current.media.kind === 'image' && (maxSide !== undefined || maxBytes !== undefined)) {
				const format = plan.outputFormat ?? (current.media.type as ImageType);
				current = await store.fit(current, { maxSide, maxBytes, format, field, signal });
			} else if (plan.outputFormat && current.media.kind === 'image') {
				current = await store.convert(current, plan.outputFormat, field, signal);
			}
			const published = await store.publish(current, { lifetimeSeconds: expiresIn });
			metrics.upload({ kind: current.media.kind, outcome: 'success', bytes: published.size });
			return this.describe(published);
		} catch (error) {
			if (error !== null && typeof error === 'object') this.failedKinds.set(error, current.media.kind);
			// Already gone when converting or publishing failed; a second discard finds nothing.
			await store.discard(current).catch(() => undefined);
			throw error;
		}
	}

	async fromJson(body: unknown, ownerKeyId: string, signal?: AbortSignal): Promise<UploadResponse> {
		if (body === undefined || body === null) {
			throw new ImageGenError(
				400,
				"Send a multipart form with the part 'file', or a JSON body with 'file', 'image' or 'video' (Content-Type: application/json)",
				{ code: 'missing_body' },
			);
		}
		const upload = parseUploadJson(body);
		const options = parseUploadOptions(body as Record<string, unknown>, { retentionSeconds: this.services.retentionSeconds });
		const { field } = upload;
		if (field === 'video') checkUploadOptionsFor('video', options);
		const plan: UploadPlan = { outputFormat: upload.outputFormat, options };
		// Fitting re-encodes anyway: converting first would only lose quality twice.
		const convertTo = isFitting(options) ? undefined : upload.outputFormat;
		const staged = await this.stageJson(upload.input, { field, ownerKeyId, plan, convertTo, signal });
		// Already in its final format when converted on the way into storage.
		return this.finish(staged, field, convertTo ? { options } : plan, signal);
	}

	failedKind(error: unknown): string | undefined {
		return error !== null && typeof error === 'object' ? this.failedKinds.get(error) : undefined;
	}

	/** The bytes of a JSON upload into storage: a URL streamed in, inline bytes sniffed first; converted on the way when asked. */
	private async stageJson(input: MediaInput, upload: { field: UploadJsonField; ownerKeyId: string; plan: UploadPlan; convertTo?: UploadOutputFormat; signal?: AbortSignal }): Promise<StagedFile> {
		const { store, openRemote, maxUploadBytes } = this.services;
		const { field, ownerKeyId, plan, convertTo, signal } = upload;
		// Refused as soon as the leading bytes are sniffed, before the rest is downloaded or stored.
		const accept = (media: SniffedMedia) => acceptKind(field, media, plan);
		const stageOptions = { ownerKeyId, maxBytes: maxUploadBytes, field, oversizeStatus: 413 as const, accept, signal };
		if (input.kind === 'url') {
			const remote = await openRemote(input.url, { field, maxBytes: maxUploadBytes, oversizeStatus: 413 });
			// Converted as it streams in: the original never needs storing.
			return store.stage(remote, { ...stageOptions, convertTo });
		}
		const { bytes } = input;
		if (bytes.length > maxUploadBytes) throw fileTooLarge(field, maxUploadBytes);
		const media = sniffMedia(bytes);
		if (!media) throw unsupportedMedia(field);
		accept(media);
		return convertTo ? store.stage(Readable.from([bytes]), { ...stageOptions, convertTo }) : store.stageBuffer(bytes, media, ownerKeyId);
	}
}

/** `file` lets the bytes decide the kind; `image` and `video` must hold what they name. */
function acceptKind(field: UploadJsonField, media: SniffedMedia, plan: UploadPlan): void {
	// Only image options make no sense for a video.
	if (field === 'file') return refuseImageOptionsForVideo(media, plan);
	if (media.kind !== field) {
		throw invalidField(field, `'${field}' holds ${media.kind === 'video' ? 'a video' : 'an image'} (${media.type}); send it as '${media.kind}'`, 'media_kind_mismatch');
	}
}

export function isFitting(options: UploadOptions): boolean {
	return options.maxSide !== undefined || options.maxBytes !== undefined;
}

/** `output_format`, `max_side` and `max_bytes` change images; with a video each is a 400 naming it. */
export function refuseImageOptionsForVideo(media: SniffedMedia, plan: UploadPlan): void {
	if (media.kind !== 'video') return;
	if (plan.outputFormat) throw outputFormatForVideo();
	checkUploadOptionsFor('video', plan.options);
}
