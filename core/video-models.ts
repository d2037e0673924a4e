/**
 * The video half of the model catalog: which video models exist, the fields each takes, their
 * limits and per-second prices. Like models.ts for images, it is the one description that
 * validation (video-schemas.ts), the node's parameters and `GET /v1/models` are derived from.
 *
 * p-video as Pruna publishes it (model page and P-API schema): 1–10 s (default 5), 720p or 1080p,
 * 24 or 48 fps, seven aspect ratios (ignored with a first frame: the video follows the image),
 * draft (a faster, cheaper preview), seed, prompt_upsampling (default on), save_audio, a first
 * frame (`image`), a last frame, and an audio track whose length the video follows.
 */
import { MODEL_IDS, SEED_MAX, STANDARD_ASPECT_RATIOS, isModelId, type AspectRatio, type ModelId } from './models';

export const VIDEO_MODEL_IDS = ['p-video'] as const;
export type VideoModelId = (typeof VIDEO_MODEL_IDS)[number];

export const VIDEO_RESOLUTIONS = ['720p', '1080p'] as const;
export type VideoResolution = (typeof VIDEO_RESOLUTIONS)[number];

export const VIDEO_FPS = [24, 48] as const;
export type VideoFps = (typeof VIDEO_FPS)[number];

/** Price per second of output, USD, by resolution; a draft costs a quarter. */
export interface VideoPrices {
	readonly perSecondUsd: Readonly<Record<VideoResolution, number>>;
	readonly draftPerSecondUsd: Readonly<Record<VideoResolution, number>>;
}

export interface VideoModelSpec {
	readonly id: VideoModelId;
	readonly displayName: string;
	readonly description: string;
	readonly aspectRatios: readonly AspectRatio[];
	readonly defaultAspectRatio: AspectRatio;
	readonly resolutions: readonly VideoResolution[];
	readonly defaultResolution: VideoResolution;
	readonly fps: readonly VideoFps[];
	readonly defaultFps: VideoFps;
	readonly minSeconds: number;
	readonly maxSeconds: number;
	readonly defaultSeconds: number;
	readonly promptMaxLength: number;
	readonly prices: VideoPrices;
}

export const VIDEO_PROMPT_MAX_LENGTH = 10_000;

export const VIDEO_MODELS: Readonly<Record<VideoModelId, VideoModelSpec>> = {
	'p-video': {
		id: 'p-video',
		displayName: 'P-Video',
		description: 'Text or a first frame to video, 720p or 1080p, up to 10 s',
		aspectRatios: STANDARD_ASPECT_RATIOS,
		defaultAspectRatio: '16:9',
		resolutions: VIDEO_RESOLUTIONS,
		defaultResolution: '720p',
		fps: VIDEO_FPS,
		defaultFps: 24,
		minSeconds: 1,
		maxSeconds: 10,
		defaultSeconds: 5,
		promptMaxLength: VIDEO_PROMPT_MAX_LENGTH,
		prices: {
			perSecondUsd: { '720p': 0.02, '1080p': 0.04 },
			draftPerSecondUsd: { '720p': 0.005, '1080p': 0.01 },
		},
	},
};

export function isVideoModelId(value: unknown): value is VideoModelId {
	return typeof value === 'string' && (VIDEO_MODEL_IDS as readonly string[]).includes(value);
}

/**
 * The price of one second of a video. `overridePerSecondUsd` (the operator's `--prices`) is the
 * price of a second at the lowest resolution; the others keep the catalog's proportions.
 */
export function videoPricePerSecond(spec: VideoModelSpec, resolution: VideoResolution, draft: boolean, overridePerSecondUsd?: number): number {
	const table = draft ? spec.prices.draftPerSecondUsd : spec.prices.perSecondUsd;
	if (overridePerSecondUsd === undefined) return table[resolution];
	return (overridePerSecondUsd * table[resolution]) / spec.prices.perSecondUsd[spec.resolutions[0]!];
}

/** Short side of each resolution, in pixels. */
const SHORT_SIDE: Readonly<Record<VideoResolution, number>> = { '720p': 720, '1080p': 1080 };

/**
 * Frame size for a ratio and resolution: the short side is the resolution's, the long side the
 * ratio's multiple of it rounded to an even number (H.264 frames have even sides).
 */
export function videoDimensions(aspectRatio: AspectRatio, resolution: VideoResolution): { width: number; height: number } {
	const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
	const short = SHORT_SIDE[resolution];
	const long = Math.round((short * Math.max(w, h)) / Math.min(w, h) / 2) * 2;
	return w >= h ? { width: long, height: short } : { width: short, height: long };
}

/** The resolution an OpenAI-style `size` (`WxH`) asks for: its short side up to 720 is 720p. */
export function resolutionForSize(width: number, height: number): VideoResolution {
	return Math.min(width, height) <= SHORT_SIDE['720p'] ? '720p' : '1080p';
}

/** The entry of `GET /v1/models` for a video model. */
export function describeVideoModel(spec: VideoModelSpec, overridePerSecondUsd?: number) {
	const priced = (draft: boolean) =>
		Object.fromEntries(spec.resolutions.map((resolution) => [resolution, videoPricePerSecond(spec, resolution, draft, overridePerSecondUsd)]));
	return {
		id: spec.id,
		object: 'model' as const,
		type: 'video' as const,
		display_name: spec.displayName,
		description: spec.description,
		fields: ['model', 'prompt', 'seconds', 'size', 'aspect_ratio', 'resolution', 'fps', 'draft', 'seed', 'prompt_upsampling', 'save_audio', 'input_reference', 'image', 'last_frame_image', 'audio', 'webhook_url'],
		required: ['model', 'prompt'],
		aspect_ratios: [...spec.aspectRatios],
		resolutions: [...spec.resolutions],
		fps: [...spec.fps],
		limits: { prompt_max_length: spec.promptMaxLength, min_seconds: spec.minSeconds, max_seconds: spec.maxSeconds, seed_max: SEED_MAX },
		defaults: { seconds: spec.defaultSeconds, aspect_ratio: spec.defaultAspectRatio, resolution: spec.defaultResolution, fps: spec.defaultFps, draft: false, prompt_upsampling: true, save_audio: true },
		pricing: { per_second_usd: priced(false), draft_per_second_usd: priced(true) },
	};
}

/** Any model of the catalog, image or video: what a job, a key's list or a price names. */
export type CatalogModelId = ModelId | VideoModelId;
export const CATALOG_MODEL_IDS: readonly CatalogModelId[] = [...MODEL_IDS, ...VIDEO_MODEL_IDS];
export function isCatalogModelId(value: unknown): value is CatalogModelId {
	return isModelId(value) || isVideoModelId(value);
}
