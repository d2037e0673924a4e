/**
 * Response headers for reading a hosted file (GET, HEAD and 304 alike).
 *
 * Caching: the bytes under a name never change, but a file stops existing at its expiry or when
 * its owner deletes it, and no cache can be told about a delete. So a cache may keep a copy for
 * at most `MAX_CACHE_SECONDS` and never past the expiry: after a delete, a CDN or proxy serves the
 * old copy for at most an hour. A longer lifetime would buy little, because the readers of these
 * URLs (social platforms, n8n, agents) fetch a file once or a few times within minutes of upload.
 * `must-revalidate` forbids serving a stale copy when the origin is unreachable (some CDNs do by
 * default), which would otherwise outlive both limits.
 */

/** Longest time a cache may keep a file, so a deleted file is not served long after. */
export const MAX_CACHE_SECONDS = 3600;

interface CacheableFile {
	mimeType: string;
	etag: string;
	/** `<id>.<ext>`, offered as the file name. */
	name: string;
	createdAt: Date;
	expiresAt: Date;
}

/** Headers a browser app needs to read from script: ranges and validators. */
const EXPOSED_HEADERS = 'Content-Length, Content-Range, Accept-Ranges, ETag';

/** Headers for an answer carrying a hosted file, a range of it, or a 304 about it. */
export function hostedFileHeaders(file: CacheableFile, now: Date = new Date()): Record<string, string> {
	const maxAge = cacheSeconds(file.expiresAt, now);
	return {
		'content-type': file.mimeType,
		etag: file.etag,
		'last-modified': file.createdAt.toUTCString(),
		'cache-control': maxAge > 0 ? `public, max-age=${maxAge}, must-revalidate` : 'no-store',
		// Same bound for HTTP/1.0 caches, which ignore Cache-Control; the API answer carries the file's own expiry.
		expires: new Date(now.getTime() + maxAge * 1000).toUTCString(),
		'accept-ranges': 'bytes',
		// Hosted files are temporary hand-offs, not pages: search engines must not list them.
		'x-robots-tag': 'noindex',
		// The id in the URL is the capability; any site may draw the file (canvas, fetch).
		'access-control-allow-origin': '*',
		'access-control-expose-headers': EXPOSED_HEADERS,
		'cross-origin-resource-policy': 'cross-origin',
		'x-content-type-options': 'nosniff',
		'content-disposition': inlineContentDisposition(file.name),
	};
}

/** Headers for a 404 on a file URL: nobody may cache the absence, since the next answer may differ. */
export function missingFileHeaders(): Record<string, string> {
	return {
		'cache-control': 'no-store',
		'x-robots-tag': 'noindex',
		'access-control-allow-origin': '*',
	};
}

/** Whole seconds a cache may keep the file: at most `MAX_CACHE_SECONDS`, never past the expiry. */
export function cacheSeconds(expiresAt: Date, now: Date): number {
	const secondsLeft = Math.floor((expiresAt.getTime() - now.getTime()) / 1000);
	return Math.max(0, Math.min(secondsLeft, MAX_CACHE_SECONDS));
}

/**
 * `Content-Disposition: inline` with a suggested file name (RFC 6266): the plain `filename` for
 * every client, plus `filename*` (RFC 8187) when the name is not plain ASCII.
 */
export function inlineContentDisposition(fileName: string): string {
	// Quotes, backslashes and control characters cannot appear in a quoted-string as-is; the
	// fallback name swaps them (and any non-ASCII character) for an underscore.
	const fallback = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
	if (fallback === fileName) return `inline; filename="${fileName}"`;
	const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`);
	return `inline; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
