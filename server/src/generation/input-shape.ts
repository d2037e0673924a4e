/**
 * `aspect_ratio: match_input_image` (p-image-edit's default): the answer keeps the first input
 * image's shape. The ratio it is brought to, and the one sent to hosts that do not take
 * `match_input_image`, is the ratio the host takes nearest to that image as it is shown: a JPEG
 * whose EXIF orientation turns it a quarter is matched turned.
 */
import { imageSize } from 'image-size';
import { MATCH_INPUT_IMAGE, nearestAspectRatio, type ModelSpec } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import type { SettledRequest } from './provider';

/** EXIF orientations 5 to 8 turn the stored picture a quarter: its width is shown as height. */
const QUARTER_TURNS = new Set([5, 6, 7, 8]);

/**
 * `spec` is the catalog entry in force for the host (provider-limits.ts). The first input has
 * already been judged readable by the loader (input-images.ts), which names `images[0]` otherwise.
 */
export async function settleAspectRatio(
	request: GenerationRequest,
	spec: ModelSpec,
	loadInputImage: (index: number) => Promise<Buffer>,
): Promise<SettledRequest> {
	if (request.aspect_ratio !== MATCH_INPUT_IMAGE) return { ...request, aspect_ratio: request.aspect_ratio };
	const { width, height, orientation } = imageSize(await loadInputImage(0));
	const turned = orientation !== undefined && QUARTER_TURNS.has(orientation);
	const ratio = turned ? nearestAspectRatio(height, width, spec.aspectRatios) : nearestAspectRatio(width, height, spec.aspectRatios);
	return { ...request, aspect_ratio: ratio, matchInputImage: true };
}

/** The loader with the first image kept once loaded: settling the ratio and the host both read it, a URL is fetched once. */
export function keepingFirstImage(load: (index: number) => Promise<Buffer>): (index: number) => Promise<Buffer> {
	let first: Promise<Buffer> | undefined;
	return (index) => (index === 0 ? (first ??= load(0)) : load(index));
}
