/**
 * The upload options `expires_in`, `max_side` and `max_bytes`. They arrive as JSON numbers or as
 * multipart text fields, so one parser takes both: an integer, or a string of decimal digits.
 */
import { invalidField } from './errors';
import type { MediaKind } from './media';

export const UPLOAD_OPTION_FIELDS = ['expires_in', 'max_side', 'max_bytes'] as const;
export type UploadOptionField = (typeof UPLOAD_OPTION_FIELDS)[number];

export interface UploadOptions {
	/** Seconds the file stays online; the configured retention when absent. */
	expiresIn?: number;
	/** Longest side of a stored image, in pixels. */
	maxSide?: number;
	/** Largest size of a stored image, in bytes. */
	maxBytes?: number;
}

export interface UploadOptionLimits {
	/** The server's retention: no file may outlive it. */
	retentionSeconds: number;
}

/** Inclusive bounds. `expires_in` ends at the retention, which only the server knows. */
export const UPLOAD_OPTION_BOUNDS = {
	expires_in: { min: 60 },
	max_side: { min: 16, max: 8192 },
	max_bytes: { min: 10_240 },
} as const;

/** Options that change the image itself: a video is stored exactly as sent. */
const IMAGE_ONLY_FIELDS: readonly UploadOptionField[] = ['max_side', 'max_bytes'];

const DIGITS = /^\d+$/;

export function isUploadOptionField(name: string): name is UploadOptionField {
	return (UPLOAD_OPTION_FIELDS as readonly string[]).includes(name);
}

/**
 * Parses the upload options found in `values` (a JSON body, or the text fields of a multipart
 * form gathered by name); other keys are ignored. Absent, null and undefined mean "not given".
 */
export function parseUploadOptions(values: Readonly<Record<string, unknown>>, limits: UploadOptionLimits): UploadOptions {
	const options: UploadOptions = {};
	const expiresIn = parseUploadOption('expires_in', values.expires_in, limits);
	const maxSide = parseUploadOption('max_side', values.max_side, limits);
	const maxBytes = parseUploadOption('max_bytes', values.max_bytes, limits);
	if (expiresIn !== undefined) options.expiresIn = expiresIn;
	if (maxSide !== undefined) options.maxSide = maxSide;
	if (maxBytes !== undefined) options.maxBytes = maxBytes;
	return options;
}

/** One option: an integer within its bounds, or undefined when not given. Throws a 400 naming it. */
export function parseUploadOption(field: UploadOptionField, value: unknown, limits: UploadOptionLimits): number | undefined {
	if (value === undefined || value === null) return undefined;
	const number = toInteger(field, value);
	const { min, max } = boundsOf(field, limits);
	if (max < min) {
		throw invalidField(field, `'${field}' cannot be used: this server keeps files only ${max} seconds`, 'field_not_supported');
	}
	if (number < min || number > max) {
		const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`;
		throw invalidField(field, `'${field}' must be ${range} ${UNITS[field]}; got ${number}`, 'out_of_range');
	}
	return number;
}

/** `max_side` and `max_bytes` change images; a video with either is a 400 naming the field. */
export function checkUploadOptionsFor(kind: MediaKind, options: UploadOptions): void {
	if (kind !== 'video') return;
	for (const field of IMAGE_ONLY_FIELDS) {
		const given = field === 'max_side' ? options.maxSide : options.maxBytes;
		if (given !== undefined) {
			throw invalidField(field, `'${field}' applies to images only; videos are stored as sent`, 'field_not_supported');
		}
	}
}

function toInteger(field: UploadOptionField, value: unknown): number {
	if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
	if (typeof value === 'string' && DIGITS.test(value.trim()) && Number.isSafeInteger(Number(value.trim()))) {
		return Number(value.trim());
	}
	throw invalidField(field, `'${field}' must be a whole number of ${UNITS[field]}; got ${describe(value)}`, 'invalid_type');
}

function boundsOf(field: UploadOptionField, limits: UploadOptionLimits): { min: number; max: number } {
	switch (field) {
		case 'expires_in':
			return { min: UPLOAD_OPTION_BOUNDS.expires_in.min, max: limits.retentionSeconds };
		case 'max_side':
			return UPLOAD_OPTION_BOUNDS.max_side;
		case 'max_bytes':
			return { min: UPLOAD_OPTION_BOUNDS.max_bytes.min, max: Number.MAX_SAFE_INTEGER };
	}
}

const UNITS: Record<UploadOptionField, string> = { expires_in: 'seconds', max_side: 'pixels', max_bytes: 'bytes' };

function describe(value: unknown): string {
	if (typeof value === 'string') return `'${value.length > 20 ? `${value.slice(0, 20)}…` : value}'`;
	if (typeof value === 'number') return String(value);
	if (value === null) return 'null';
	return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
