/**
 * Media inputs: a string that is an http(s) URL, a data URI or raw base64, and the sniffing that
 * decides what a byte sequence really is. Kind and type always come from the bytes, never from a
 * file name, a declared MIME type or a header, because those are whatever the sender claims.
 */
import { invalidField } from './errors';

export type MediaInput =
	| { kind: 'url'; url: URL }
	| { kind: 'bytes'; bytes: Buffer; declaredMimeType?: string };

const DATA_URI = /^data:([^,]*?),(.*)$/is;
const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
const BASE64_BODY = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * Parses a media input string. Throws a 400 naming `field` for every malformed case, so a caller
 * never has to guess which input was wrong or why.
 */
export function parseMediaInput(value: string, field: string): MediaInput {
	const trimmed = value.trim();
	if (trimmed.length === 0) {
		throw invalidField(field, `'${field}' is empty: give an http(s) URL, a data URI or base64 data`, 'empty_value');
	}
	if (/^https?:\/\//i.test(trimmed)) return { kind: 'url', url: parseHttpUrl(trimmed, field) };
	if (/^data:/i.test(trimmed)) return parseDataUri(trimmed, field);
	const scheme = SCHEME.exec(trimmed);
	// Raw base64 never contains ':', so anything shaped like "scheme:" is a URL we do not fetch.
	if (scheme) {
		throw invalidField(
			field,
			`'${field}' uses the unsupported URL scheme '${scheme[1]!.toLowerCase()}:'; only http and https URLs are fetched`,
			'unsupported_url_scheme',
		);
	}
	return { kind: 'bytes', bytes: decodeBase64(trimmed, field) };
}

function parseHttpUrl(value: string, field: string): URL {
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw invalidField(field, `'${field}' is not a valid URL`, 'invalid_url');
	}
	if (url.hostname === '') throw invalidField(field, `'${field}' has no host`, 'invalid_url');
	if (url.username !== '' || url.password !== '') {
		throw invalidField(field, `'${field}' must not carry credentials in the URL`, 'invalid_url');
	}
	return url;
}

function parseDataUri(value: string, field: string): MediaInput {
	const match = DATA_URI.exec(value);
	if (!match) {
		throw invalidField(
			field,
			`'${field}' is a malformed data URI: expected data:<type>;base64,<data>`,
			'invalid_data_uri',
		);
	}
	const parameters = match[1]!.split(';').map((part) => part.trim());
	if (!parameters.slice(1).some((part) => part.toLowerCase() === 'base64')) {
		throw invalidField(
			field,
			`'${field}' is a data URI without ';base64': only base64-encoded data URIs are accepted`,
			'invalid_data_uri',
		);
	}
	const declaredMimeType = parameters[0]!.toLowerCase() || undefined;
	return { kind: 'bytes', bytes: decodeBase64(match[2]!, field), declaredMimeType };
}

/** Decodes standard or URL-safe base64, with or without padding and line breaks. */
export function decodeBase64(value: string, field: string): Buffer {
	const compact = value.replace(/\s+/g, '');
	if (compact.length === 0) {
		throw invalidField(field, `'${field}' contains no base64 data`, 'empty_value');
	}
	if (!BASE64_BODY.test(compact)) {
		const at = compact.search(/[^A-Za-z0-9+/_=-]/);
		const where = at >= 0 ? ` (unexpected character at position ${at})` : ' (misplaced padding)';
		throw invalidField(
			field,
			`'${field}' is neither an http(s) URL, a data URI nor valid base64${where}`,
			'invalid_base64',
		);
	}
	const unpadded = compact.replace(/=+$/, '');
	if (unpadded.length % 4 === 1) {
		throw invalidField(field, `'${field}' is truncated base64 (length is impossible)`, 'invalid_base64');
	}
	const bytes = Buffer.from(unpadded.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
	if (bytes.length === 0) {
		throw invalidField(field, `'${field}' contains no base64 data`, 'empty_value');
	}
	return bytes;
}

export const IMAGE_TYPES = ['png', 'jpeg', 'webp', 'gif', 'avif'] as const;
export const VIDEO_TYPES = ['mp4', 'mov', 'webm'] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];
export type VideoType = (typeof VIDEO_TYPES)[number];
export type MediaKind = 'image' | 'video';

export interface SniffedMedia {
	kind: MediaKind;
	type: ImageType | VideoType;
	mimeType: string;
	extension: string;
}

export const MEDIA_DETAILS: Readonly<Record<ImageType | VideoType, SniffedMedia>> = {
	png: { kind: 'image', type: 'png', mimeType: 'image/png', extension: 'png' },
	jpeg: { kind: 'image', type: 'jpeg', mimeType: 'image/jpeg', extension: 'jpg' },
	webp: { kind: 'image', type: 'webp', mimeType: 'image/webp', extension: 'webp' },
	gif: { kind: 'image', type: 'gif', mimeType: 'image/gif', extension: 'gif' },
	avif: { kind: 'image', type: 'avif', mimeType: 'image/avif', extension: 'avif' },
	mp4: { kind: 'video', type: 'mp4', mimeType: 'video/mp4', extension: 'mp4' },
	mov: { kind: 'video', type: 'mov', mimeType: 'video/quicktime', extension: 'mov' },
	webm: { kind: 'video', type: 'webm', mimeType: 'video/webm', extension: 'webm' },
};

/** How many leading bytes `sniffMedia` needs to decide; callers that stream read at least this many. */
export const SNIFF_BYTES = 4096;

const QUICKTIME_ATOMS = new Set(['moov', 'mdat', 'wide', 'free', 'skip', 'pnot']);
const AVIF_BRANDS = new Set(['avif', 'avis']);
const UNSUPPORTED_ISOBMFF_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'mif1', 'msf1', 'crx ']);

function ascii(bytes: Uint8Array, start: number, end: number): string {
	let text = '';
	for (let i = start; i < Math.min(end, bytes.length); i++) text += String.fromCharCode(bytes[i]!);
	return text;
}

function startsWith(bytes: Uint8Array, signature: readonly number[], offset = 0): boolean {
	return signature.every((byte, i) => bytes[offset + i] === byte);
}

/** Identifies a supported image or video from its leading bytes; null when it is neither. */
export function sniffMedia(bytes: Uint8Array): SniffedMedia | null {
	const type = sniffType(bytes);
	return type ? MEDIA_DETAILS[type] : null;
}

function sniffType(bytes: Uint8Array): ImageType | VideoType | null {
	if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
	if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
	const head = ascii(bytes, 0, 12);
	if (head.startsWith('GIF87a') || head.startsWith('GIF89a')) return 'gif';
	if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'webp';
	if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) {
		// EBML: WebM and Matroska share the container; only the DocType tells them apart.
		return ascii(bytes, 4, 64).includes('webm') ? 'webm' : null;
	}
	const box = head.slice(4, 8);
	if (box === 'ftyp') return sniffIsoBmff(bytes);
	if (QUICKTIME_ATOMS.has(box)) return 'mov';
	return null;
}

function sniffIsoBmff(bytes: Uint8Array): ImageType | VideoType | null {
	const boxSize = Math.min(
		bytes.length,
		((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0,
	);
	const major = ascii(bytes, 8, 12);
	const compatible: string[] = [];
	for (let offset = 16; offset + 4 <= boxSize; offset += 4) compatible.push(ascii(bytes, offset, offset + 4));
	if (AVIF_BRANDS.has(major) || compatible.some((brand) => AVIF_BRANDS.has(brand))) return 'avif';
	if (major === 'qt  ') return 'mov';
	if (UNSUPPORTED_ISOBMFF_BRANDS.has(major)) return null;
	return 'mp4';
}
