/**
 * Every error leaves the service as the JSON shape of core/errors.ts: our own ImageGenErrors as
 * they are, Fastify's and the multipart parser's translated, anything unexpected as a bare 500
 * (logged, never with a stack trace in the body).
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import { formatBytes } from '../../../core/units';
import { databaseBusy, isDatabaseBusy, isEngineUnreachable, serviceUnavailable } from './engine-unavailable';
import { insufficientStorage, isStorageFull } from './storage-full';

export function toApiError(error: unknown, limits: { maxJsonBytes: number; maxUploadBytes: number }): ImageGenError {
	if (error instanceof ImageGenError) return error;
	const fastifyError = error as Partial<FastifyError>;
	switch (fastifyError.code) {
		case 'FST_ERR_CTP_INVALID_JSON_BODY':
			return new ImageGenError(400, `The request body is not valid JSON: ${fastifyError.message}`, { code: 'invalid_json' });
		case 'FST_ERR_CTP_EMPTY_JSON_BODY':
			return new ImageGenError(400, 'The request body is empty; send a JSON object', { code: 'invalid_json' });
		case 'FST_ERR_CTP_BODY_TOO_LARGE':
			return new ImageGenError(
				413,
				`The request body is larger than the JSON limit of ${formatBytes(limits.maxJsonBytes)}; send large files as multipart or by URL`,
				{ code: 'payload_too_large' },
			);
		case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
			return new ImageGenError(415, 'Unsupported Content-Type: send application/json (or multipart/form-data for uploads)', {
				code: 'unsupported_content_type',
			});
		case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
			return new ImageGenError(400, 'The Content-Length header does not match the body', { code: 'invalid_body' });
		case 'FST_REQ_FILE_TOO_LARGE':
			return fileTooLarge('file', limits.maxUploadBytes);
		case 'FST_FILES_LIMIT':
			return new ImageGenError(400, "Send exactly one file, in the part 'file'", { param: 'file', code: 'too_many_files' });
		case 'FST_PARTS_LIMIT':
		case 'FST_FIELDS_LIMIT':
			return new ImageGenError(400, "Too many form fields: send 'file' and optionally 'output_format'", { code: 'too_many_fields' });
		case 'FST_PROTO_VIOLATION':
			return new ImageGenError(400, 'Form field names such as __proto__ are not allowed', { code: 'invalid_field' });
		case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
			return new ImageGenError(415, 'The request is not multipart/form-data', { code: 'unsupported_content_type' });
	}
	const status = fastifyError.statusCode;
	if (typeof status === 'number' && status >= 400 && status < 500) {
		const known = status === 404 || status === 413 || status === 415 || status === 429 ? status : 400;
		return new ImageGenError(known, fastifyError.message || 'Bad request', { code: 'invalid_request' });
	}
	// A full disk or database: whichever engine found it, the same 507 as for the bytes.
	if (isStorageFull(error)) return insufficientStorage(error);
	if (isDatabaseBusy(error)) return databaseBusy(error);
	// PostgreSQL or the bucket down: retryable, and the driver's text (internal addresses) stays in the log.
	if (isEngineUnreachable(error)) return serviceUnavailable(error);
	return new ImageGenError(500, 'Internal server error', { code: 'internal_error', cause: error });
}

/** A file past the upload limit, wherever it was counted (a multipart part, a JSON body, the stored stream). */
export function fileTooLarge(field: string, maxBytes: number, status: 400 | 413 = 413): ImageGenError {
	return new ImageGenError(status, `'${field}' is larger than the upload limit of ${formatBytes(maxBytes)}`, { param: field, code: 'file_too_large' });
}

export function sendApiError(reply: FastifyReply, error: ImageGenError): FastifyReply {
	if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
	return reply.status(error.status).type('application/json; charset=utf-8').send(error.toBody());
}

export function installErrorHandling(
	app: FastifyInstance,
	limits: { maxJsonBytes: number; maxUploadBytes: number },
): void {
	app.setErrorHandler((error, request, reply) => {
		const apiError = toApiError(error, limits);
		if (apiError.status >= 500 && apiError.status !== 507) {
			const logged = apiError.status === 503 && apiError.cause !== undefined ? apiError.cause : error;
			request.log.error({ err: logged, method: request.method, path: request.routeOptions.url }, 'request failed');
		}
		return sendApiError(reply, apiError);
	});
	installNotFoundHandler(app);
}

/** Installed again inside the /v1 scope, so unknown /v1 routes pass its auth hook first. */
export function installNotFoundHandler(app: FastifyInstance): void {
	app.setNotFoundHandler((request, reply) =>
		sendApiError(
			reply,
			new ImageGenError(404, `Unknown route: ${request.method} ${request.url.split('?')[0]}`, { code: 'unknown_route' }),
		),
	);
}
