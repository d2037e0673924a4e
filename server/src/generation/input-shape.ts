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

type InputLoader = (index: number) => Promise<Buffer>;

/**
 * `spec` is the catalog entry in force for the host (provider-limits.ts). The first input has
 * already been judged readable by the loader (input-images.ts), which names `images[0]` otherwise.
 * Answers the settled request and the loader the host is to use: for `match_input_image` it hands
 * the first image read here to the host's first call for it (a URL is fetched once) and keeps it no
 * longer, so it is not held while the answer is normalized and stored.
 */
export async function settleAspectRatio(
	request: GenerationRequest,
	spec: ModelSpec,
	load: InputLoader,
): Promise<{ settled: SettledRequest; loadInputImage: InputLoader }> {
	if (request.aspect_ratio !== MATCH_INPUT_IMAGE) return { settled: { ...request, aspect_ratio: request.aspect_ratio }, loadInputImage: load };
	let first: Buffer | undefined = await load(0);
	const { width, height, orientation } = imageSize(first);
	const turned = orientation !== undefined && QUARTER_TURNS.has(orientation);
	const ratio = turned ? nearestAspectRatio(height, width, spec.aspectRatios) : nearestAspectRatio(width, height, spec.aspectRatios);
	const loadInputImage: InputLoader = async (index) => {
		if (index !== 0 || first === undefined) return await load(index);
		const kept = first;
		first = undefined;
		return kept;
	};
	return { settled: { ...request, aspect_ratio: ratio, matchInputImage: true }, loadInputImage };
}
