/**
 * The multipart form of POST /v1/uploads: a `file` part streamed into storage, and the text parts
 * `output_format`, `expires_in`, `max_side`, `max_bytes`, each checked as it arrives so a bad one
 * never waits for the file. When `output_format` comes before the file, the file is converted as
 * it streams in. With an `Idempotency-Key` the body is staged (and hashed) first, because its
 * fingerprint is known only once all of it has arrived; then it is finished at most once.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import { parseUploadOutputFormat, type UploadOutputFormat } from '../../../core/schemas';
import { isUploadOptionField, parseUploadOption, parseUploadOptions } from '../../../core/upload-options';
import { FingerprintHasher, type IdempotentAnswer } from '../idempotency/idempotency';
import type { HostedFiles, StagedFile } from '../storage/hosted-files';
import { isEngineError } from '../http/engine-unavailable';
import { isStorageFull } from '../http/storage-full';
import { clientGoneSignal } from '../http/client-gone';
import { isFitting, refuseImageOptionsForVideo, type UploadPlan, type Uploads } from './uploads';

/** Runs a request at most once per Idempotency-Key (`fastify.idempotency`). */
export interface IdempotentRunner {
	answer(request: FastifyRequest, options: { key: string | undefined; fingerprint: () => string; run: () => Promise<unknown> }): Promise<IdempotentAnswer>;
}

export interface MultipartUploadServices {
	/** The route's path, part of the request's fingerprint. */
	route: string;
	store: HostedFiles;
	uploads: Pick<Uploads, 'finish'>;
	idempotency: IdempotentRunner;
	maxUploadBytes: number;
	retentionSeconds: number;
}

/** Receives a multipart upload and finishes it (or replays its first answer); nothing stays stored when it fails. */
export async function answerMultipartUpload(request: FastifyRequest, reply: FastifyReply, key: string | undefined, services: MultipartUploadServices): Promise<IdempotentAnswer> {
	const { store, idempotency } = services;
	const hasher = key === undefined ? undefined : new FingerprintHasher(request.method, services.route);
	const clientGone = clientGoneSignal(reply);
	const { file, plan } = await receiveForm(request, services, hasher, clientGone);
	let finishing = false;
	try {
		return await idempotency.answer(request, {
			key,
			fingerprint: () => hasher!.digest(),
			run: () => {
				finishing = true;
				return services.uploads.finish(file, 'file', plan, clientGone);
			},
		});
	} finally {
		// A replay, a reused key or a repeat still running: the bytes received are not needed,
		// and are gone before the client hears so.
		if (!finishing) await store.discard(file);
	}
}

/** The form's parts in their order: the file staged as it streams in, each text field checked as it arrives. */
async function receiveForm(request: FastifyRequest, services: MultipartUploadServices, hasher: FingerprintHasher | undefined, signal: AbortSignal): Promise<{ file: StagedFile; plan: UploadPlan }> {
	const { store, maxUploadBytes } = services;
	const limits = { retentionSeconds: services.retentionSeconds };
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
					signal,
				});
				// stage() has piped the part by now (it does so before its first await), so this
				// second reader sees the very same chunks.
				if (hasher) {
					hasher.file('file');
					part.file.on('data', (chunk: Buffer) => hasher.update(chunk));
				}
				staged = await staging;
				convertedTo = convertTo;
			} else {
				const value = String(part.value);
				checkTextField(part.fieldname, value, fields, limits);
				fields.set(part.fieldname, value);
				hasher?.field(part.fieldname, value);
			}
		}
	} catch (error) {
		if (staged) await store.discard(staged);
		throw multipartError(error);
	}
	if (!staged) {
		throw invalidField('file', "The multipart form has no part 'file' holding the image or video", 'missing_field');
	}
	const plan = planOf(fields, limits);
	if (convertedTo) delete plan.outputFormat;
	return { file: staged, plan };
}

/** A text part, checked as it arrives so a bad option never waits for the file. */
function checkTextField(name: string, value: string, fields: ReadonlyMap<string, string>, limits: { retentionSeconds: number }): void {
	if (name === 'output_format' || isUploadOptionField(name)) {
		if (fields.has(name)) throw invalidField(name, `'${name}' was sent twice`, 'duplicate_field');
		if (name === 'output_format') parseUploadOutputFormat(value);
		else parseUploadOption(name, value, limits);
		return;
	}
	if (name === 'image' || name === 'video') {
		throw invalidField(name, `'${name}' is a JSON field; in a multipart form send the file in the part 'file'`, 'unknown_field');
	}
	throw invalidField(name, `Unknown field '${name}': send 'file' and optionally 'output_format', 'expires_in', 'max_side', 'max_bytes'`, 'unknown_field');
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
	if (isStorageFull(error)) return error;
	// Our own engines failing (PostgreSQL, the bucket) is never the client's fault: a 503 or a 500.
	if (isEngineError(error)) return error;
	return new ImageGenError(400, `The multipart body is malformed: ${(error as Error)?.message ?? 'unreadable'}`, {
		code: 'invalid_multipart',
	});
}
