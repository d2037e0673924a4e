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
