/**
 * POST /v1/uploads: a multipart `file` (streamed into storage) or JSON `file` / `image` / `video` (URL
 * fetched through the SSRF-checked fetcher and streamed into storage, or data URI / base64
 * decoded). The bytes decide what the file is; `output_format` converts images with sharp and
 * `max_side` / `max_bytes` fit them (media/fit-image.ts), otherwise the stored bytes are exactly
 * the bytes received. `expires_in` shortens the file's lifetime. With an `Idempotency-Key` a
 * repeat replays the first answer; a multipart body is staged (and hashed) first, because its
 * fingerprint is known only once all of it has arrived. Storing the file is `fastify.uploads`
 * (uploads/uploads.ts), which the MCP tool `upload_file` shares.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import { parseUploadOutputFormat, type UploadOutputFormat } from '../../../core/schemas';
import { isUploadOptionField, parseUploadOption, parseUploadOptions } from '../../../core/upload-options';
import { FingerprintHasher, fingerprintJson, type IdempotentAnswer } from '../idempotency/idempotency';
import type { StagedFile } from '../storage/hosted-files';
import { isFitting, refuseImageOptionsForVideo, type UploadPlan } from '../uploads/uploads';
import { isEngineError } from '../http/engine-unavailable';
import { clientGoneSignal } from '../http/client-gone';

const ROUTE = '/v1/uploads';

export default async function uploadRoutes(v1: FastifyInstance): Promise<void> {
	const store = v1.hostedFiles;
	const { maxUploadBytes, retentionSeconds } = v1.config;
	const limits = { retentionSeconds };

	const { finish } = v1.uploads;

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

	v1.post('/uploads', async (request, reply) => {
		try {
			const key = v1.idempotency.keyOf(request);
			if (request.isMultipart()) return await receiveMultipart(request, reply, key);
			const clientGone = clientGoneSignal(reply);
			return await v1.idempotency.send(request, reply, {
				key,
				fingerprint: () => fingerprintJson(request.method, ROUTE, request.body),
				run: () => v1.uploads.fromJson(request.body, request.apiKeyId, clientGone),
			});
		} catch (error) {
			v1.metrics.upload({ kind: v1.uploads.failedKind(error) ?? 'unknown', outcome: error instanceof ImageGenError ? error.code : 'internal_error', bytes: 0 });
			throw error;
		}
	});
}

/** `output_format` and the upload options of a multipart form, from its text fields so far. */
function planOf(fields: ReadonlyMap<string, string>, limits: { retentionSeconds: number }): UploadPlan {
	const outputFormatText = fields.get('output_format');
	return {
		outputFormat: outputFormatText === undefined ? undefined : parseUploadOutputFormat(outputFormatText),
		options: parseUploadOptions(Object.fromEntries(fields), limits),
	};
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
