/**
 * The model catalog: the single source of truth for which models exist, which request fields each
 * accepts, and their limits and prices. Server validation, the nodes' parameter options and
 * `GET /v1/models` are all derived from this file, so adding a model or an aspect ratio is one edit here.
 */

export const MODEL_IDS = ['p-image', 'p-image-edit', 'textimage-v2'] as const;
export type ModelId = (typeof MODEL_IDS)[number];

export const STANDARD_ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;
export const EXTENDED_ASPECT_RATIOS = [
	...STANDARD_ASPECT_RATIOS,
	'16:10',
	'10:16',
	'3:1',
	'1:3',
] as const;
export type AspectRatio = (typeof EXTENDED_ASPECT_RATIOS)[number];

/**
 * `aspect_ratio` of a model with input images may also be `match_input_image`: the answer keeps
 * the first input image's shape, at the catalog ratio nearest to it (nearestAspectRatio). It is
 * p-image-edit's default, as on the vendors' own APIs, so an edited photo is not reframed.
 */
export const MATCH_INPUT_IMAGE = 'match_input_image';
export type AspectRatioChoice = AspectRatio | typeof MATCH_INPUT_IMAGE;

export const IMAGE_OUTPUT_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ImageOutputFormat = (typeof IMAGE_OUTPUT_FORMATS)[number];

export const RESPONSE_FORMATS = ['url', 'b64_json'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];

export const STYLE_TYPES = ['AUTO', 'GENERAL', 'REALISTIC', 'DESIGN', 'RENDER_3D', 'ANIME'] as const;
export type StyleType = (typeof STYLE_TYPES)[number];

export const MAGIC_PROMPT_OPTIONS = ['AUTO', 'ON', 'OFF'] as const;
export type MagicPromptOption = (typeof MAGIC_PROMPT_OPTIONS)[number];

export const PROMPT_MAX_LENGTH = 10_000;
export const MAX_INPUT_IMAGES = 10;
/** `seed` takes 0 … 2^31 − 1, the range of Replicate's and Ideogram's seed fields, so it passes to every host. */
export const SEED_MAX = 2_147_483_647;

/** Optional request fields whose presence depends on the model (model and prompt are always accepted). */
export const MODEL_SPECIFIC_FIELDS = [
	'images',
	'negative_prompt',
	'style_type',
	'magic_prompt_option',
] as const;
export type ModelSpecificField = (typeof MODEL_SPECIFIC_FIELDS)[number];

/** Fields every model accepts. */
export const COMMON_FIELDS = [
	'model',
	'prompt',
	'aspect_ratio',
	'response_format',
	'output_format',
	'seed',
] as const;
export type CommonField = (typeof COMMON_FIELDS)[number];

/**
 * OpenAI's images fields every model takes, so an OpenAI images client works unchanged: `n` images
 * (each its own provider call, seed + i) and `size` (a `WxH` read as the catalog ratio nearest to it).
 */
export const OPENAI_FIELDS = ['n', 'size'] as const;
/** OpenAI's fields that mean nothing to our hosts: accepted (their types checked) and ignored. */
export const IGNORED_OPENAI_FIELDS = ['quality', 'style', 'user', 'background', 'moderation', 'output_compression'] as const;
/** `n` at most: OpenAI's own limit for dall-e-2 and gpt-image-1. */
export const MAX_IMAGES_PER_REQUEST = 10;
export type GenerationField = CommonField | ModelSpecificField;

export interface ModelSpec {
	readonly id: ModelId;
	readonly displayName: string;
	readonly description: string;
	/** Model-specific fields this model accepts, beyond the common ones. */
	readonly fields: readonly ModelSpecificField[];
	/** Fields the request must carry (besides `model`). */
	readonly required: readonly GenerationField[];
	readonly aspectRatios: readonly AspectRatio[];
	/** `aspect_ratio` when the request names none. */
	readonly defaultAspectRatio: AspectRatioChoice;
	readonly outputFormats: readonly ImageOutputFormat[];
	readonly maxInputImages: number;
	readonly promptMaxLength: number;
	/** Price per generated image in USD; the service may override it by configuration. */
	readonly priceUsd: number;
}

export const DEFAULTS = {
	aspect_ratio: '1:1',
	response_format: 'url',
	output_format: 'png',
	style_type: 'AUTO',
	magic_prompt_option: 'AUTO',
} as const satisfies {
	aspect_ratio: AspectRatio;
	response_format: ResponseFormat;
	output_format: ImageOutputFormat;
	style_type: StyleType;
	magic_prompt_option: MagicPromptOption;
};

export const MODELS: Readonly<Record<ModelId, ModelSpec>> = {
	'p-image': {
		id: 'p-image',
		displayName: 'P-Image',
		description: 'Text to image',
		fields: [],
		required: ['prompt'],
		aspectRatios: STANDARD_ASPECT_RATIOS,
		defaultAspectRatio: DEFAULTS.aspect_ratio,
		outputFormats: IMAGE_OUTPUT_FORMATS,
		maxInputImages: 0,
		promptMaxLength: PROMPT_MAX_LENGTH,
		priceUsd: 0.0035,
	},
	'p-image-edit': {
		id: 'p-image-edit',
		displayName: 'P-Image Edit',
		description: 'Image-guided generation and editing with up to 10 input images',
		fields: ['images'],
		required: ['prompt', 'images'],
		aspectRatios: STANDARD_ASPECT_RATIOS,
		defaultAspectRatio: MATCH_INPUT_IMAGE,
		outputFormats: IMAGE_OUTPUT_FORMATS,
		maxInputImages: MAX_INPUT_IMAGES,
		promptMaxLength: PROMPT_MAX_LENGTH,
		priceUsd: 0.007,
	},
	'textimage-v2': {
		id: 'textimage-v2',
		displayName: 'TextImage V2',
		description: 'Text to image with negative prompt, style and prompt enhancement',
		fields: ['negative_prompt', 'style_type', 'magic_prompt_option'],
		required: ['prompt'],
		aspectRatios: EXTENDED_ASPECT_RATIOS,
		defaultAspectRatio: DEFAULTS.aspect_ratio,
		outputFormats: IMAGE_OUTPUT_FORMATS,
		maxInputImages: 0,
		promptMaxLength: PROMPT_MAX_LENGTH,
		// The specification gives no price; this default is the public list price of the
		// underlying model per image, and the server lets operators override it.
		priceUsd: 0.08,
	},
};

/**
 * What the host serving a model can take, when it is less than the catalog allows. A host only
 * ever narrows the catalog's entry, so the catalog stays the one description of every model.
 */
export interface ModelLimits {
	readonly maxInputImages?: number;
	readonly promptMaxLength?: number;
	readonly aspectRatios?: readonly AspectRatio[];
}

export function narrowSpec(spec: ModelSpec, limits: ModelLimits = {}): ModelSpec {
	return {
		...spec,
		maxInputImages: Math.min(spec.maxInputImages, limits.maxInputImages ?? Infinity),
		promptMaxLength: Math.min(spec.promptMaxLength, limits.promptMaxLength ?? Infinity),
		aspectRatios: limits.aspectRatios ? spec.aspectRatios.filter((ratio) => limits.aspectRatios!.includes(ratio)) : spec.aspectRatios,
	};
}

/** Every value `aspect_ratio` takes for the model: `match_input_image` first where it has input images. */
export function aspectRatioChoices(spec: ModelSpec): readonly AspectRatioChoice[] {
	return spec.fields.includes('images') ? [MATCH_INPUT_IMAGE, ...spec.aspectRatios] : spec.aspectRatios;
}

/** The ratio among `ratios` nearest to width:height, measured in log(width / height). */
export function nearestAspectRatio(width: number, height: number, ratios: readonly AspectRatio[]): AspectRatio {
	const distance = (ratio: AspectRatio) => {
		const [w, h] = ratio.split(':').map(Number) as [number, number];
		return Math.abs(Math.log(width / height) - Math.log(w / h));
	};
	return ratios.reduce((best, ratio) => (distance(ratio) < distance(best) ? ratio : best));
}

export function isModelId(value: unknown): value is ModelId {
	return typeof value === 'string' && (MODEL_IDS as readonly string[]).includes(value);
}

export function modelsAccepting(field: ModelSpecificField): ModelId[] {
	return MODEL_IDS.filter((id) => MODELS[id].fields.includes(field));
}

/** Long side of every generated image, in pixels (the contract allows 1024–2048). */
export const OUTPUT_LONG_SIDE = 1024;

/**
 * Pixel dimensions for an aspect ratio: long side fixed, short side rounded to a multiple of 8
 * (what image models and codecs prefer), which keeps every ratio within 1 % of the requested one.
 */
export function dimensionsFor(
	aspectRatio: AspectRatio,
	longSide: number = OUTPUT_LONG_SIDE,
): { width: number; height: number } {
	const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
	const short = Math.max(8, Math.round((longSide * Math.min(w, h)) / Math.max(w, h) / 8) * 8);
	return w >= h ? { width: longSide, height: short } : { width: short, height: longSide };
}

/**
 * Public description of the catalog, as served by `GET /v1/models`; `specs` are the entries in
 * force where a host narrows them (see narrowSpec).
 */
export function describeCatalog(prices: Partial<Record<ModelId, number>> = {}, specs: Partial<Record<ModelId, ModelSpec>> = {}) {
	return {
		object: 'list' as const,
		data: MODEL_IDS.map((id) => {
			const spec = specs[id] ?? MODELS[id];
			return {
				id,
				object: 'model' as const,
				display_name: spec.displayName,
				description: spec.description,
				fields: [...COMMON_FIELDS, ...OPENAI_FIELDS, ...spec.fields],
				ignored_fields: [...IGNORED_OPENAI_FIELDS],
				required: ['model', ...spec.required],
				aspect_ratios: [...aspectRatioChoices(spec)],
				output_formats: [...spec.outputFormats],
				response_formats: [...RESPONSE_FORMATS],
				...(spec.fields.includes('style_type') ? { style_types: [...STYLE_TYPES] } : {}),
				...(spec.fields.includes('magic_prompt_option')
					? { magic_prompt_options: [...MAGIC_PROMPT_OPTIONS] }
					: {}),
				limits: {
					prompt_max_length: spec.promptMaxLength,
					...(spec.fields.includes('negative_prompt')
						? { negative_prompt_max_length: PROMPT_MAX_LENGTH }
						: {}),
					...(spec.maxInputImages > 0 ? { max_input_images: spec.maxInputImages } : {}),
					seed_max: SEED_MAX,
					n_max: MAX_IMAGES_PER_REQUEST,
				},
				defaults: {
					aspect_ratio: spec.defaultAspectRatio,
					response_format: DEFAULTS.response_format,
					output_format: DEFAULTS.output_format,
					...(spec.fields.includes('style_type') ? { style_type: DEFAULTS.style_type } : {}),
					...(spec.fields.includes('magic_prompt_option')
						? { magic_prompt_option: DEFAULTS.magic_prompt_option }
						: {}),
				},
				pricing: { per_image_usd: prices[id] ?? spec.priceUsd },
			};
		}),
	};
}
