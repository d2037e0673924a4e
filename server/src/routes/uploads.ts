/**
 * POST /v1/uploads: a multipart `file` (streamed into storage) or JSON `file` / `image` / `video` (URL
 * fetched through the SSRF-checked fetcher and streamed into storage, or data URI / base64
 * decoded). The bytes decide what the file is; `output_format` converts images with sharp and
 * `max_side` / `max_bytes` fit them (media/fit-image.ts), otherwise the stored bytes are exactly
 * the bytes received. `expires_in` shortens the file's lifetime. With an `Idempotency-Key` a
 * repeat replays the first answer; a multipart body is staged (and hashed) first, because its
 * fingerprint is known only once all of it has arrived.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import { sniffMedia, type ImageType, type SniffedMedia } from '../../../core/media';
import { outputFormatForVideo, parseUploadJson, parseUploadOutputFormat, type UploadOutputFormat } from '../../../core/schemas';
import type { UploadResponse } from '../../../core/api';
import {
	checkUploadOptionsFor,
	isUploadOptionField,
	parseUploadOption,
	parseUploadOptions,
	type UploadOptions,
} from '../../../core/upload-options';
import { FingerprintHasher, fingerprintJson, type IdempotentAnswer } from '../idempotency/idempotency';
import { formatBytes } from '../../../core/units';
import type { FileRecord, StagedFile } from '../storage/hosted-files';
import { unsupportedMedia } from '../storage/media-inspector';
import { isEngineError } from '../engine-unavailable';

const ROUTE = '/v1/uploads';

/** What to do with the received bytes before they are published. */
interface UploadPlan {
	/** `output_format` still to apply (not already applied while streaming in). */
	outputFormat?: UploadOutputFormat;
	options: UploadOptions;
}

export default async function uploadRoutes(v1: FastifyInstance): Promise<void> {
	const store = v1.hostedFiles;
	const { maxUploadBytes, retentionSeconds } = v1.config;
	const limits = { retentionSeconds };

	/** The media kind of uploads that failed once it was known, for the metrics' `kind` label. */
	const failedKinds = new WeakMap<object, string>();

	const describe = (file: FileRecord): UploadResponse => {
		const url = store.publicUrl(file);
		const details = { expiresAt: file.expiresAt.toISOString(), id: file.id, mimeType: file.mimeType, sizeBytes: file.size };
		return file.kind === 'video' ? { videoUrl: url, ...details } : { imageUrl: url, ...details };
	};

	/** Converts or fits the staged file as planned, then publishes it; whatever fails leaves nothing stored. */
	const finish = async (staged: StagedFile, field: string, plan: UploadPlan, signal?: AbortSignal): Promise<UploadResponse> => {
		let current = staged;
		try {
			refuseImageOptionsForVideo(current.media, plan);
			const { maxSide, maxBytes, expiresIn } = plan.options;
			if (current.media.kind === 'image' && (maxSide !== undefined || maxBytes !== undefined)) {
				const format = plan.outputFormat ?? (current.media.type as ImageType);
				current = await store.fit(current, { maxSide, maxBytes, format, field, signal });
			} else if (plan.outputFormat && plan.outputFormat !== current.media.type) {
				current = await store.convert(current, plan.outputFormat, field, signal);
			}
			const published = await store.publish(current, { lifetimeSeconds: expiresIn });
			v1.metrics.upload({ kind: current.media.kind, outcome: 'success', bytes: published.size });
			return describe(published);
		} catch (error) {
			if (error !== null && typeof error === 'object') failedKinds.set(error, current.media.kind);
			// Already gone when converting or publishing failed; a second discard finds nothing.
			await store.discard(current).catch(() => undefined);
			throw error;
		}
	};

	const receiveMultipart = async (request: FastifyRequest, reply: FastifyReply, key: string | undefined): Promise<FastifyReply> => {
		const hasher = key === undefined ? undefined : new FingerprintHasher(request.method, ROUTE);
		const clientGone = clientGoneSignal(reply);
		let staged: StagedFile | null = null;
		const fields = new Map<string, string>();
		/** Set when output_format came before the file, so the file was converted as it streamed in. */
		let convertedTo: UploadOutputFormat | undefined;
		try {
			for await (const part of request.parts()) {
				if (part.type === 'file') {
					if (part.fieldname !== 'file') {
						part.file.resume();
						throw invalidField(part.fieldname, `Unknown file part '${part.fieldname}': send the file in the part 'file'`, 'unknown_field');
					}
					const plan = planOf(fields, limits);
					// Fitting re-encodes anyway: converting first would only lose quality twice.
					const convertTo = isFitting(plan.options) ? undefined : plan.outputFormat;
					const staging = store.stage(part.file, {
						ownerKeyId: request.apiKeyId,
						maxBytes: maxUploadBytes,
						field: 'file',
						oversizeStatus: 413,
						drainOnError: true,
						accept: (media) => refuseImageOptionsForVideo(media, plan),
						convertTo,
						signal: clientGone,
					});
					// stage() has piped the part by now (it does so before its first await), so this
					// second reader sees the very same chunks.
					if (hasher) {
						hasher.file('file');
						part.file.on('data', (chunk: Buffer) => hasher.update(chunk));
					}
					staged = await staging;
					convertedTo = convertTo;
				} else if (part.fieldname === 'output_format' || isUploadOptionField(part.fieldname)) {
					const name = part.fieldname;
					if (fields.has(name)) throw invalidField(name, `'${name}' was sent twice`, 'duplicate_field');
					const value = String(part.value);
					// Checked as it arrives, so a bad option never waits for the file.
					if (name === 'output_format') parseUploadOutputFormat(value);
					else parseUploadOption(name, value, limits);
					fields.set(name, value);
					hasher?.field(name, value);
				} else if (part.fieldname === 'image' || part.fieldname === 'video') {
					throw invalidField(
						part.fieldname,
						`'${part.fieldname}' is a JSON field; in a multipart form send the file in the part 'file'`,
						'unknown_field',
					);
				} else {
					throw invalidField(
						part.fieldname,
						`Unknown field '${part.fieldname}': send 'file' and optionally 'output_format', 'expires_in', 'max_side', 'max_bytes'`,
						'unknown_field',
					);
				}
			}
		} catch (error) {
			if (staged) await store.discard(staged);
			throw multipartError(error);
		}
		if (!staged) {
			throw invalidField('file', "The multipart form has no part 'file' holding the image or video", 'missing_field');
		}
		const received = staged;
		const plan = planOf(fields, limits);
		if (convertedTo) delete plan.outputFormat;
		let finishing = false;
		let answer: IdempotentAnswer;
		try {
			answer = await v1.idempotency.answer(request, {
				key,
				fingerprint: () => hasher!.digest(),
				run: () => {
					finishing = true;
					return finish(received, 'file', plan, clientGone);
				},
			});
		} finally {
			// A replay, a reused key or a repeat still running: the bytes received are not needed,
			// and are gone before the client hears so.
			if (!finishing) await store.discard(received);
		}
		return v1.idempotency.reply(reply, answer);
	};

	const receiveJson = async (request: FastifyRequest, reply: FastifyReply): Promise<UploadResponse> => {
		const { body } = request;
		const clientGone = clientGoneSignal(reply);
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
		const stageOptions = { ownerKeyId: request.apiKeyId, maxBytes: maxUploadBytes, field, oversizeStatus: 413 as const, accept: acceptKind, signal: clientGone };
		if (upload.input.kind === 'url') {
			const remote = await v1.openRemote(upload.input.url, { field, maxBytes: maxUploadBytes, oversizeStatus: 413 });
			// Converted as it streams in: the original never needs storing.
			staged = await store.stage(remote, { ...stageOptions, convertTo });
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
			staged = convertTo
				? await store.stage(Readable.from([bytes]), { ...stageOptions, convertTo })
				: await store.stageBuffer(bytes, media, request.apiKeyId);
		}
		// Already in its final format when converted on the way into storage.
		return finish(staged, field, convertTo ? { options } : plan, clientGone);
	};

	v1.post('/uploads', async (request, reply) => {
		try {
			const key = v1.idempotency.keyOf(request);
			if (request.isMultipart()) return await receiveMultipart(request, reply, key);
			return await v1.idempotency.send(request, reply, {
				key,
				fingerprint: () => fingerprintJson(request.method, ROUTE, request.body),
				run: () => receiveJson(request, reply),
			});
		} catch (error) {
			const kind = error !== null && typeof error === 'object' ? failedKinds.get(error) : undefined;
			v1.metrics.upload({ kind: kind ?? 'unknown', outcome: error instanceof ImageGenError ? error.code : 'internal_error', bytes: 0 });
			throw error;
		}
	});
}

/** Aborted when the client goes away before its answer, so image work for it stops. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
	const client = new AbortController();
	reply.raw.once('close', () => {
		if (!reply.raw.writableFinished) client.abort(new Error('client closed the connection'));
	});
	return client.signal;
}

function isFitting(options: UploadOptions): boolean {
	return options.maxSide !== undefined || options.maxBytes !== undefined;
}

/** `output_format` and the upload options of a multipart form, from its text fields so far. */
function planOf(fields: ReadonlyMap<string, string>, limits: { retentionSeconds: number }): UploadPlan {
	const outputFormatText = fields.get('output_format');
	return {
		outputFormat: outputFormatText === undefined ? undefined : parseUploadOutputFormat(outputFormatText),
		options: parseUploadOptions(Object.fromEntries(fields), limits),
	};
}

/** `output_format`, `max_side` and `max_bytes` change images; with a video each is a 400 naming it. */
function refuseImageOptionsForVideo(media: SniffedMedia, plan: UploadPlan): void {
	if (media.kind !== 'video') return;
	if (plan.outputFormat) throw outputFormatForVideo();
	checkUploadOptionsFor('video', plan.options);
}

/** The multipart parser reports broken bodies as plain errors; they are the caller's, not ours. */
function multipartError(error: unknown): unknown {
	if (error instanceof ImageGenError) return error;
	const { code, statusCode } = error as { code?: string; statusCode?: number };
	if (code?.startsWith('FST_') || statusCode !== undefined) return error;
	if (code === 'ENOSPC' || code === 'EDQUOT') return error;
	// Our own engines failing (PostgreSQL, the bucket) is never the client's fault: a 503 or a 500.
	if (isEngineError(error)) return error;
	return new ImageGenError(400, `The multipart body is malformed: ${(error as Error)?.message ?? 'unreadable'}`, {
		code: 'invalid_multipart',
	});
}
