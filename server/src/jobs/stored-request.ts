/**
 * A job's request as its row keeps it: inline inputs (base64, data URIs) are left out, so that a
 * row holds no image or audio however large its inputs were, and listing jobs reads no megabytes.
 * Nothing needs them after the host was called: a resumed job follows the host's job, which has
 * its inputs, and its aspect ratio was settled before the row was written. URLs are kept as sent.
 *
 * An input left out reads `omitted:…`, which no loader takes (an unsupported scheme, a 400 naming
 * the field), so it can never be mistaken for the input it stood for.
 */
import type { Job } from './job-store';

/** The request fields that carry inputs: images' `images`, a video's first and last frame and audio. */
const INPUT_FIELDS = ['images', 'image', 'last_frame_image', 'audio'] as const;

const isUrl = (value: string) => /^https?:\/\//i.test(value.trim());

function kept(value: unknown): unknown {
	if (typeof value !== 'string' || isUrl(value)) return value;
	return `omitted:inline input of ${value.length} characters`;
}

export function storedRequest(request: object): Job['request'] {
	const stored: Record<string, unknown> = { ...request };
	for (const field of INPUT_FIELDS) {
		const value = stored[field];
		if (value === undefined) continue;
		stored[field] = Array.isArray(value) ? value.map(kept) : kept(value);
	}
	return stored;
}
