/**
 * The error shape shared by the server (what it answers) and the nodes (what they parse and show).
 * Modelled on OpenAI's so existing clients and n8n's own error handling read it without surprises.
 */

export const ERROR_TYPES = {
	400: 'invalid_request_error',
	401: 'authentication_error',
	402: 'billing_error',
	403: 'permission_error',
	404: 'not_found_error',
	405: 'invalid_request_error',
	408: 'invalid_request_error',
	409: 'invalid_request_error',
	413: 'invalid_request_error',
	415: 'invalid_request_error',
	417: 'invalid_request_error',
	422: 'invalid_request_error',
	429: 'rate_limit_error',
	431: 'invalid_request_error',
	500: 'server_error',
	502: 'upstream_error',
	503: 'server_error',
	504: 'upstream_error',
	507: 'server_error',
} as const;
export type ErrorStatus = keyof typeof ERROR_TYPES;

export interface ApiErrorBody {
	error: {
		message: string;
		type: string;
		param: string | null;
		code: string;
	};
}

export interface ImageGenErrorOptions {
	param?: string | null;
	code?: string;
	/** Seconds a client should wait before retrying (429, 503). */
	retryAfterSeconds?: number;
	cause?: unknown;
}

export class ImageGenError extends Error {
	readonly status: ErrorStatus;
	readonly type: string;
	readonly param: string | null;
	readonly code: string;
	readonly retryAfterSeconds?: number;

	constructor(status: ErrorStatus, message: string, options: ImageGenErrorOptions = {}) {
		super(message, options.cause === undefined ? undefined : { cause: options.cause });
		this.name = 'ImageGenError';
		this.status = status;
		this.type = ERROR_TYPES[status];
		this.param = options.param ?? null;
		this.code = options.code ?? defaultCode(status);
		this.retryAfterSeconds = options.retryAfterSeconds;
	}

	toBody(): ApiErrorBody {
		return {
			error: { message: this.message, type: this.type, param: this.param, code: this.code },
		};
	}
}

function defaultCode(status: ErrorStatus): string {
	switch (status) {
		case 400:
			return 'invalid_value';
		case 401:
			return 'invalid_api_key';
		case 402:
			return 'budget_exceeded';
		case 403:
			return 'permission_denied';
		case 404:
			return 'not_found';
		case 409:
			return 'conflict';
		case 413:
			return 'payload_too_large';
		case 415:
			return 'unsupported_media_type';
		case 422:
			return 'unprocessable';
		case 429:
			return 'rate_limited';
		case 502:
			return 'upstream_failed';
		case 504:
			return 'upstream_timeout';
		case 507:
			return 'insufficient_storage';
		default:
			return 'internal_error';
	}
}

/** A 400 that names the offending field: the most common error, so it gets a short constructor. */
export function invalidField(param: string, message: string, code = 'invalid_value'): ImageGenError {
	return new ImageGenError(400, message, { param, code });
}

export function isApiErrorBody(value: unknown): value is ApiErrorBody {
	if (typeof value !== 'object' || value === null) return false;
	const error = (value as { error?: unknown }).error;
	return (
		typeof error === 'object' &&
		error !== null &&
		typeof (error as { message?: unknown }).message === 'string'
	);
}
