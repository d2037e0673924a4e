/**
 * "Fit For": the limits a platform puts on an image posted through its API, turned into the
 * service's `max_side`, `max_bytes` and `output_format`. Sizes are decimal megabytes (1 MB =
 * 1,000,000 bytes): the platforms state MB, and the decimal reading is the stricter one.
 *
 * Sources (as documented by each platform):
 * - Instagram feed: JPEG only, at most 8 MB, width 320–1440 px
 *   (developers.facebook.com/docs/instagram-api/guides/content-publishing, IG User Media reference).
 * - Instagram story: same image rules (JPEG, 8 MB); stories are 9:16, shown at 1080 × 1920 px.
 * - Facebook: "We recommend uploading photos under 4MB"; Facebook resizes every photo itself
 *   (developers.facebook.com/docs/graph-api/photo-uploads). 2048 px keeps the file well inside 4 MB.
 * - LinkedIn: at most 5 MB and fewer than 36,152,320 pixels (LinkedIn Images API); a 6000 px long
 *   side keeps even a square image below that pixel count.
 * - X: images at most 5 MB through the API (docs.x.com/x-api/media); X shows at most 4096 × 4096 px.
 */
import type { IDataObject, INodePropertyOptions } from 'n8n-workflow';

import type { UploadFormat } from '../shared/uploads';

interface ImageFit {
	maxSide?: number;
	maxBytes?: number;
	outputFormat?: UploadFormat;
}

const MB = 1_000_000;

const FIT_PRESETS = {
	instagramFeed: { maxSide: 1440, maxBytes: 8 * MB, outputFormat: 'jpg' },
	instagramStory: { maxSide: 1920, maxBytes: 8 * MB, outputFormat: 'jpg' },
	facebook: { maxSide: 2048, maxBytes: 4 * MB, outputFormat: 'jpg' },
	linkedIn: { maxSide: 6000, maxBytes: 5 * MB, outputFormat: 'jpg' },
	x: { maxSide: 4096, maxBytes: 5 * MB, outputFormat: 'jpg' },
} as const satisfies Record<string, Required<ImageFit>>;

type FitPreset = keyof typeof FIT_PRESETS;

export const FIT_FOR_OPTIONS: INodePropertyOptions[] = [
	{ name: 'None', value: 'none', description: 'Host the image at its own size' },
	{ name: 'Instagram Feed', value: 'instagramFeed', description: 'JPEG, long side at most 1440 px, at most 8 MB' },
	{ name: 'Instagram Story', value: 'instagramStory', description: 'JPEG, long side at most 1920 px, at most 8 MB' },
	{ name: 'Facebook', value: 'facebook', description: 'JPEG, long side at most 2048 px, at most 4 MB' },
	{ name: 'LinkedIn', value: 'linkedIn', description: 'JPEG, long side at most 6000 px, at most 5 MB' },
	{ name: 'X', value: 'x', description: 'JPEG, long side at most 4096 px, at most 5 MB' },
	{ name: 'Custom', value: 'custom', description: 'Your own longest side and file size' },
];

/** The limits chosen in the options; `custom` takes the optional Max Side and Max Size (MB). */
export function imageFitFrom(options: IDataObject): ImageFit {
	const fitFor = String(options.fitFor ?? 'none');
	if (fitFor in FIT_PRESETS) return { ...FIT_PRESETS[fitFor as FitPreset] };
	if (fitFor !== 'custom') return {};
	const fit: ImageFit = {};
	if (typeof options.maxSide === 'number' && options.maxSide > 0) fit.maxSide = Math.floor(options.maxSide);
	if (typeof options.maxSizeMb === 'number' && options.maxSizeMb > 0) fit.maxBytes = Math.floor(options.maxSizeMb * MB);
	return fit;
}
