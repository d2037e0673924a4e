/**
 * Loads `images[i]` of a p-image-edit request: data URIs and base64 are decoded, URLs fetched
 * through the SSRF-checked fetcher. Whatever the form, the bytes must really be an image.
 */
import { invalidField } from '../../../core/errors';
import { checkPixels, declaredSize } from '../media/image-header';
import { formatBytes } from '../../../core/units';
import { parseMediaInput, sniffMedia } from '../../../core/media';
import type { GenerationRequest } from '../../../core/schemas';
import type { RemoteFetcher } from '../net/safe-fetch';
import type { OwnFileReader } from '../storage/own-file-inputs';

export interface InputImageSource {
	fetchRemote: RemoteFetcher;
	/** Largest accepted input image (bytes), for fetched URLs and decoded base64 alike. */
	maxInputImageBytes: number;
	/** Largest input picture (`--max-image-pixels`), from its header; 100 MP when not given. */
	maxImagePixels?: number;
	/** Reads a URL of this service's own hosted files from storage instead of fetching it. */
	readOwnFile?: OwnFileReader;
}

const DEFAULT_MAX_IMAGE_PIXELS = 100_000_000;

export function inputImageLoader(
	request: GenerationRequest,
	context: InputImageSource,
	signal: AbortSignal,
): (index: number) => Promise<Buffer> {
	return async (index) => {
		const field = `images[${index}]`;
		const value = request.images?.[index];
		if (value === undefined) throw invalidField(field, `'${field}' does not exist`);
		return await loadInputImage(value, field, context, signal);
	};
}

/** One input image given as `field` (a URL, data URI or base64): its bytes, checked to be an image within the limits. */
export async function loadInputImage(value: string, field: string, context: InputImageSource, signal: AbortSignal): Promise<Buffer> {
	const bytes = await loadInputBytes(value, field, context, signal);
	const media = sniffMedia(bytes);
	if (!media || media.kind !== 'image') {
		throw invalidField(
			field,
			`'${field}' is not a supported image (png, jpeg, webp, gif or avif)${media ? `: it is a ${media.type} video` : ''}`,
			'unsupported_media_type',
		);
	}
	// Judged here, before any provider (the sandbox included) decodes it.
	const size = declaredSize(bytes);
	if (!size) throw invalidField(field, `'${field}' could not be read as a ${media.type} image: its header is damaged`, 'undecodable_image');
	checkPixels(size, context.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS, { field, status: 400 });
	return bytes;
}

/** The bytes of an input of any kind (an image, an audio track), within the size limit. */
export async function loadInputBytes(value: string, field: string, context: InputImageSource, signal: AbortSignal): Promise<Buffer> {
	const input = parseMediaInput(value, field);
	const bytes =
		input.kind === 'url'
			? ((await context.readOwnFile?.(input.url, field, context.maxInputImageBytes)) ?? (await context.fetchRemote(input.url, { field, maxBytes: context.maxInputImageBytes, signal })))
			: input.bytes;
	if (bytes.length > context.maxInputImageBytes) {
		throw invalidField(field, `'${field}' is larger than the ${formatBytes(context.maxInputImageBytes)} allowed for an input`, 'too_large');
	}
	return bytes;
}
