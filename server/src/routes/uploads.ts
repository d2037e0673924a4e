/**
 * POST /v1/uploads: a multipart `file` (streamed into storage) or JSON `file` / `image` / `video` (URL
 * fetched through the SSRF-checked fetcher and streamed into storage, or data URI / base64
 * decoded). The bytes decide what the file is; `output_format` converts images with sharp,
 * otherwise the stored bytes are exactly the bytes received.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import { sniffMedia, type SniffedMedia } from '../../../core/media';
import { outputFormatForVideo, parseUploadJson, parseUploadOutputFormat, type UploadOutputFormat } from '../../../core/schemas';
import type { UploadResponse } from '../../../core/api';
import { formatBytes } from '../../../core/units';
import type { StagedFile } from '../storage/hosted-files';
import { unsupportedMedia } from '../storage/media-inspector';

export default async function uploadRoutes(v1: FastifyInstance): Promise<void> {
	const store = v1.hostedFiles;
	const { maxUploadBytes } = v1.config;

	const publish = async (staged: StagedFile, field: string, outputFormat?: UploadOutputFormat): Promise<UploadResponse> => {
		const final = outputFormat && outputFormat !== staged.media.type ? await store.convert(staged, outputFormat, field) : staged;
		const file = await store.publish(final);
		const url = store.publicUrl(file);
		const expiresAt = file.expiresAt.toISOString();
		return file.kind === 'video' ? { videoUrl: url, expiresAt } : { imageUrl: url, expiresAt };
	};

	const receiveMultipart = async (request: FastifyRequest): Promise<UploadResponse> => {
		let staged: StagedFile | null = null;
		let outputFormatText: string | undefined;
		/** Set when output_format came before the file, so the file was converted as it streamed in. */
		let convertedTo: UploadOutputFormat | undefined;
		try {
			for await (const part of request.parts()) {
				if (part.type === 'file') {
					if (part.fieldname !== 'file') {
						part.file.resume();
						throw invalidField(part.fieldname, `Unknown file part '${part.fieldname}': send the file in the part 'file'`, 'unknown_field');
					}
					const outputFormat = outputFormatText === undefined ? undefined : parseUploadOutputFormat(outputFormatText);
					staged = await store.stage(part.file, {
						ownerKeyId: request.apiKeyId,
						maxBytes: maxUploadBytes,
						field: 'file',
						oversizeStatus: 413,
						drainOnError: true,
						accept: (media) => {
							if (outputFormat && media.kind === 'video') throw outputFormatForVideo();
						},
						convertTo: outputFormat,
					});
					convertedTo = outputFormat;
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
			if (outputFormat && staged.media.kind === 'video') throw outputFormatForVideo();
			return await publish(staged, 'file', convertedTo ? undefined : outputFormat);
		} catch (error) {
			await store.discard(staged);
			throw error;
		}
	};

	const receiveJson = async (request: FastifyRequest): Promise<UploadResponse> => {
		const { body } = request;
		if (body === undefined || body === null) {
			throw new ImageGenError(
				400,
				"Send a multipart form with the part 'file', or a JSON body with 'file', 'image' or 'video' (Content-Type: application/json)",
				{ code: 'missing_body' },
			);
		}
		const upload = parseUploadJson(body);
		const { field } = upload;
		// Refused as soon as the leading bytes are sniffed, before the rest is downloaded or stored.
		const acceptKind = (media: SniffedMedia) => {
			// `file` lets the bytes decide the kind; only a conversion makes no sense for a video.
			if (field === 'file') {
				if (upload.outputFormat && media.kind === 'video') throw outputFormatForVideo();
			} else if (media.kind !== field) {
				throw invalidField(
					field,
					`'${field}' holds ${media.kind === 'video' ? 'a video' : 'an image'} (${media.type}); send it as '${media.kind}'`,
					'media_kind_mismatch',
				);
			}
		};
		let staged: StagedFile;
		const stageOptions = { ownerKeyId: request.apiKeyId, maxBytes: maxUploadBytes, field, oversizeStatus: 413 as const, accept: acceptKind };
		if (upload.input.kind === 'url') {
			const remote = await v1.openRemote(upload.input.url, { field, maxBytes: maxUploadBytes, oversizeStatus: 413 });
			// Converted as it streams in: the original never needs storing.
			staged = await store.stage(remote, { ...stageOptions, convertTo: upload.outputFormat });
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
			acceptKind(media);
			staged = upload.outputFormat
				? await store.stage(Readable.from([bytes]), { ...stageOptions, convertTo: upload.outputFormat })
				: await store.stageBuffer(bytes, media, request.apiKeyId);
		}
		try {
			// Already in its final format: converted on the way into storage.
			return await publish(staged, field);
		} catch (error) {
			await store.discard(staged);
			throw error;
		}
	};

	v1.post('/uploads', async (request) => (request.isMultipart() ? receiveMultipart(request) : receiveJson(request)));
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
