/**
 * POST /v1/uploads: a multipart `file` (streamed to disk) or JSON `file` / `image` / `video` (URL fetched
 * through the SSRF-checked fetcher and streamed to disk, or data URI / base64 decoded). The bytes
 * decide what the file is; `output_format` converts images with sharp, otherwise the stored bytes
 * are exactly the bytes received.
 */
import { stat } from 'node:fs/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { ImageGenError, invalidField } from '../../../core/errors';
import { MEDIA_DETAILS, sniffMedia } from '../../../core/media';
import { outputFormatForVideo, parseUploadJson, parseUploadOutputFormat, type UploadOutputFormat } from '../../../core/schemas';
import type { UploadResponse } from '../../../core/api';
import { convertImage } from '../media/convert';
import type { OpenRemoteOptions } from '../net/safe-fetch';
import { formatBytes } from '../net/safe-fetch';
import { unsupportedMedia, type DiskFileStore, type StagedFile } from '../storage/disk-file-store';

export interface UploadRouteOptions {
	store: DiskFileStore;
	openRemote: (url: URL, options: OpenRemoteOptions) => Promise<Readable>;
	maxUploadBytes: number;
}

export async function registerUploadRoutes(v1: FastifyInstance, options: UploadRouteOptions): Promise<void> {
	const { store, maxUploadBytes } = options;

	const publish = async (staged: StagedFile, field: string, outputFormat?: UploadOutputFormat): Promise<UploadResponse> => {
		let final = staged;
		if (outputFormat && outputFormat !== staged.media.type) {
			const target = store.tempPath();
			try {
				await convertImage(staged.path, target, outputFormat, field);
				final = { path: target, media: MEDIA_DETAILS[outputFormat], size: (await stat(target)).size };
			} catch (error) {
				await store.discard({ path: target });
				throw error;
			} finally {
				await store.discard(staged);
			}
		}
		const file = await store.commit(final);
		const url = store.publicUrl(file);
		const expiresAt = file.expiresAt.toISOString();
		return file.kind === 'video' ? { videoUrl: url, expiresAt } : { imageUrl: url, expiresAt };
	};

	const receiveMultipart = async (request: FastifyRequest): Promise<UploadResponse> => {
		let staged: StagedFile | null = null;
		let outputFormatText: string | undefined;
		try {
			for await (const part of request.parts()) {
				if (part.type === 'file') {
					if (part.fieldname !== 'file') {
						part.file.resume();
						throw invalidField(part.fieldname, `Unknown file part '${part.fieldname}': send the file in the part 'file'`, 'unknown_field');
					}
					staged = await store.stage(part.file, { maxBytes: maxUploadBytes, field: 'file', oversizeStatus: 413, drainOnError: true });
				} else if (part.fieldname === 'output_format') {
					if (outputFormatText !== undefined) throw invalidField('output_format', "'output_format' was sent twice", 'duplicate_field');
					outputFormatText = String(part.value);
				} else if (part.fieldname === 'image' || part.fieldname === 'video') {
					throw invalidField(
						part.fieldname,
						`'${part.fieldname}' is a JSON field; in a multipart form send the file in the part 'file'`,
						'unknown_field',
					);
				} else {
					throw invalidField(part.fieldname, `Unknown field '${part.fieldname}': send 'file' and optionally 'output_format'`, 'unknown_field');
				}
			}
		} catch (error) {
			if (staged) await store.discard(staged);
			throw multipartError(error);
		}
		if (!staged) {
			throw invalidField('file', "The multipart form has no part 'file' holding the image or video", 'missing_field');
		}
		try {
			const outputFormat = outputFormatText === undefined ? undefined : parseUploadOutputFormat(outputFormatText);
			if (outputFormat && staged.media.kind === 'video') {
				throw invalidField('output_format', "'output_format' applies to images only; videos are stored as sent", 'field_not_supported');
			}
			return await publish(staged, 'file', outputFormat);
		} catch (error) {
			await store.discard(staged);
			throw error;
		}
	};

	const receiveJson = async (body: unknown): Promise<UploadResponse> => {
		if (body === undefined || body === null) {
			throw new ImageGenError(
				400,
				"Send a multipart form with the part 'file', or a JSON body with 'file', 'image' or 'video' (Content-Type: application/json)",
				{ code: 'missing_body' },
			);
		}
		const upload = parseUploadJson(body);
		const { field } = upload;
		let staged: StagedFile;
		if (upload.input.kind === 'url') {
			const remote = await options.openRemote(upload.input.url, { field, maxBytes: maxUploadBytes, oversizeStatus: 413 });
			staged = await store.stage(remote, { maxBytes: maxUploadBytes, field, oversizeStatus: 413 });
		} else {
			const { bytes } = upload.input;
			if (bytes.length > maxUploadBytes) {
				throw new ImageGenError(413, `'${field}' is larger than the upload limit of ${formatBytes(maxUploadBytes)}`, {
					param: field,
					code: 'file_too_large',
				});
			}
			const media = sniffMedia(bytes);
			if (!media) throw unsupportedMedia(field);
			staged = await store.stageBuffer(bytes, media);
		}
		try {
			if (field === 'file') {
				if (upload.outputFormat && staged.media.kind === 'video') throw outputFormatForVideo();
			} else if (staged.media.kind !== field) {
				throw invalidField(
					field,
					`'${field}' holds ${staged.media.kind === 'video' ? 'a video' : 'an image'} (${staged.media.type}); send it as '${staged.media.kind}'`,
					'media_kind_mismatch',
				);
			}
			return await publish(staged, field, upload.outputFormat);
		} catch (error) {
			await store.discard(staged);
			throw error;
		}
	};

	v1.post('/uploads', async (request) => (request.isMultipart() ? receiveMultipart(request) : receiveJson(request.body)));
}

/** The multipart parser reports broken bodies as plain errors; they are the caller's, not ours. */
function multipartError(error: unknown): unknown {
	if (error instanceof ImageGenError) return error;
	const { code, statusCode } = error as { code?: string; statusCode?: number };
	if (code?.startsWith('FST_') || statusCode !== undefined) return error;
	if (code === 'ENOSPC' || code === 'EDQUOT') return error;
	return new ImageGenError(400, `The multipart body is malformed: ${(error as Error)?.message ?? 'unreadable'}`, {
		code: 'invalid_multipart',
	});
}
