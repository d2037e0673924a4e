/**
 * Storing an upload, shared by every way in (POST /v1/uploads, the MCP tool `upload_file`): a
 * staged file is converted or fitted as planned and published (`finish`), and a JSON upload (URL,
 * data URI or base64 in `file` / `image` / `video`) is received, checked and finished (`fromJson`).
 * The bytes decide what the file is; whatever fails leaves nothing stored.
 */
import { Readable } from 'node:stream';
import { ImageGenError, invalidField } from '../../../core/errors';
import { sniffMedia, type ImageType, type SniffedMedia } from '../../../core/media';
import { outputFormatForVideo, parseUploadJson, type UploadOutputFormat } from '../../../core/schemas';
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

export function createUploads({ store, openRemote, maxUploadBytes, retentionSeconds, metrics }: UploadServices): Uploads {
	const limits = { retentionSeconds };
	const failedKinds = new WeakMap<object, string>();

	const describe = (file: FileRecord): UploadResponse => {
		const url = store.publicUrl(file);
		const details = { expiresAt: file.expiresAt.toISOString(), id: file.id, mimeType: file.mimeType, sizeBytes: file.size, provenance: file.provenance ?? NO_PROVENANCE };
		return file.kind === 'video' ? { videoUrl: url, ...details } : { imageUrl: url, ...details };
	};

	const finish = async (staged: StagedFile, field: string, plan: UploadPlan, signal?: AbortSignal): Promise<UploadResponse> => {
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
			return describe(published);
		} catch (error) {
			if (error !== null && typeof error === 'object') failedKinds.set(error, current.media.kind);
			// Already gone when converting or publishing failed; a second discard finds nothing.
			await store.discard(current).catch(() => undefined);
			throw error;
		}
	};

	const fromJson = async (body: unknown, ownerKeyId: string, signal?: AbortSignal): Promise<UploadResponse> => {
		if (body === undefined || body === null) {
			throw new ImageGenError(
				400,
				"Send a multipart form with the part 'file', or a JSON body with 'file', 'image' or 'video' (Content-Type: application/json)",
				{ code: 'missing_body' },
			);
		}
		const upload = parseUploadJson(body);
		const options = parseUploadOptions(body as Record<string, unknown>, limits);
		const { field } = upload;
		if (field === 'video') checkUploadOptionsFor('video', options);
		const plan: UploadPlan = { outputFormat: upload.outputFormat, options };
		// Refused as soon as the leading bytes are sniffed, before the rest is downloaded or stored.
		const acceptKind = (media: SniffedMedia) => {
			// `file` lets the bytes decide the kind; only image options make no sense for a video.
			if (field === 'file') {
				refuseImageOptionsForVideo(media, plan);
			} else if (media.kind !== field) {
				throw invalidField(
					field,
					`'${field}' holds ${media.kind === 'video' ? 'a video' : 'an image'} (${media.type}); send it as '${media.kind}'`,
					'media_kind_mismatch',
				);
			}
		};
		// Fitting re-encodes anyway: converting first would only lose quality twice.
		const convertTo = isFitting(options) ? undefined : upload.outputFormat;
		let staged: StagedFile;
		const stageOptions = { ownerKeyId, maxBytes: maxUploadBytes, field, oversizeStatus: 413 as const, accept: acceptKind, signal };
		if (upload.input.kind === 'url') {
			const remote = await openRemote(upload.input.url, { field, maxBytes: maxUploadBytes, oversizeStatus: 413 });
			// Converted as it streams in: the original never needs storing.
			staged = await store.stage(remote, { ...stageOptions, convertTo });
		} else {
			const { bytes } = upload.input;
			if (bytes.length > maxUploadBytes) throw fileTooLarge(field, maxUploadBytes);
			const media = sniffMedia(bytes);
			if (!media) throw unsupportedMedia(field);
			acceptKind(media);
			staged = convertTo
				? await store.stage(Readable.from([bytes]), { ...stageOptions, convertTo })
				: await store.stageBuffer(bytes, media, ownerKeyId);
		}
		// Already in its final format when converted on the way into storage.
		return finish(staged, field, convertTo ? { options } : plan, signal);
	};

	const failedKind = (error: unknown) => (error !== null && typeof error === 'object' ? failedKinds.get(error) : undefined);

	return { describe, finish, fromJson, failedKind };
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
