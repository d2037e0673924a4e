/**
 * How much of a host's own words we take in and pass on. A host's error text reaches our client's
 * answer, a job's stored error and its webhook, each sent again on every delivery attempt; a
 * broken host or a proxy in front of it may answer an error of megabytes (a whole HTML page, a
 * message with a dump in it), and none of it is worth more than its first sentences.
 */

/** The most of a host's error body we read; the rest of its stream is dropped unread. */
export const HOST_ERROR_BYTES = 32 * 1024;

/** The most characters of a host's text any message of ours carries. */
export const HOST_TEXT_CHARS = 500;

/**
 * The text, trimmed, and cut to HOST_TEXT_CHARS with an ellipsis where it was longer. The cut is
 * on a code point's boundary: half of a surrogate pair would be an invalid character in our JSON.
 */
export function boundedHostText(text: string): string {
	const trimmed = text.trim();
	if (trimmed.length <= HOST_TEXT_CHARS) return trimmed;
	let end = HOST_TEXT_CHARS;
	const last = trimmed.charCodeAt(end - 1);
	if (last >= 0xd800 && last <= 0xdbff) end -= 1;
	return `${trimmed.slice(0, end).trimEnd()}…`;
}
