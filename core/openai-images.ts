/**
 * Request shaping for a plain OpenAI-compatible images API (OpenAI, LocalAI, a gateway), from
 * OpenAI's images reference: `POST /images/generations` takes `model`, `prompt`, `n`, `size`,
 * `response_format` (dall-e only: the gpt-image models refuse it and always answer `b64_json`) and
 * `output_format` (gpt-image only); `POST /images/edits` takes the same as multipart fields, the
 * input images as `image[]` (gpt-image) or one `image` (dall-e-2). Nothing else is sent: OpenAI
 * answers any other field with 400 `unknown_parameter`.
 */
import type { AspectRatio } from './models';

export const DEFAULT_OPENAI_MODEL = 'gpt-image-1';

/** The sizes each family takes besides `auto`; any other model gets gpt-image's, as LocalAI takes any size. */
const GPT_IMAGE_SIZES = ['1024x1024', '1536x1024', '1024x1536'] as const;
const DALL_E_3_SIZES = ['1024x1024', '1792x1024', '1024x1792'] as const;
// dall-e-2 draws squares only (256, 512 or 1024 pixels): its largest.
const DALL_E_2_SIZES = ['1024x1024'] as const;

/**
 * The model as OpenAI names it: a gateway's name (LiteLLM's and OpenRouter's `openai/gpt-image-1`,
 * `azure/dall-e-3`) read by its last segment.
 */
export function hostModelName(model: string): string {
	return model.slice(model.lastIndexOf('/') + 1).toLowerCase();
}

/** gpt-image-1, gpt-image-1-mini, a gateway's `openai/gpt-image-1`: refuse `response_format`, take `output_format` and `image[]`. */
export function isGptImageModel(model: string): boolean {
	return hostModelName(model).startsWith('gpt-image');
}

export function openAiSizes(model: string): readonly string[] {
	const name = hostModelName(model);
	if (name.startsWith('dall-e-3')) return DALL_E_3_SIZES;
	if (name.startsWith('dall-e-2')) return DALL_E_2_SIZES;
	return GPT_IMAGE_SIZES;
}

/** The model's sizes as numbers. */
export function openAiImageSizes(model: string): Array<ImageSize & { text: string }> {
	return openAiSizes(model).map((text) => {
		const [width, height] = text.split('x').map(Number) as [number, number];
		return { text, width, height };
	});
}

/** The longest prompt each OpenAI model takes (its images reference, `prompt`); none known for other models. */
export function openAiPromptMaxLength(model: string): number | undefined {
	const name = hostModelName(model);
	if (name.startsWith('gpt-image')) return 32_000;
	if (name.startsWith('dall-e-3')) return 4_000;
	if (name.startsWith('dall-e-2')) return 1_000;
	return undefined;
}

/** The input images an edit takes ("Create image edit": png, webp or jpg); others are converted first. */
export const OPENAI_EDIT_INPUT_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp'];

export interface ImageSize {
	width: number;
	height: number;
}

/** The size whose shape is nearest `ratio` (distance of log(width / height)); the first listed on a tie. */
export function nearestSize<Size extends ImageSize>(sizes: readonly Size[], ratio: AspectRatio): Size {
	const [w, h] = ratio.split(':').map(Number) as [number, number];
	const distance = (size: Size) => Math.abs(Math.log(size.width / size.height) - Math.log(w / h));
	return sizes.reduce((best, size) => (distance(size) < distance(best) ? size : best));
}

/** The model's size (`WIDTHxHEIGHT`) nearest `ratio`. */
export function nearestOpenAiSize(model: string, ratio: AspectRatio): string {
	return nearestSize(openAiImageSizes(model), ratio).text;
}

export interface OpenAiImageParameters {
	model: string;
	prompt: string;
	/** Omitted (the host's default, `auto` for gpt-image) when the image should keep its input's shape. */
	aspectRatio?: AspectRatio;
	outputFormat: string;
	responseFormat: 'url' | 'b64_json';
}

/** The fields of a generation or an edit, one image each; values are strings where multipart needs them. */
export function openAiImageFields(parameters: OpenAiImageParameters): Record<string, string | number> {
	const gptImage = isGptImageModel(parameters.model);
	return {
		model: parameters.model,
		prompt: parameters.prompt,
		n: 1,
		...(parameters.aspectRatio ? { size: nearestOpenAiSize(parameters.model, parameters.aspectRatio) } : {}),
		...(gptImage ? { output_format: parameters.outputFormat } : { response_format: parameters.responseFormat }),
	};
}

/** The multipart field an edit's input images go in. */
export function openAiEditImageField(model: string): 'image[]' | 'image' {
	return isGptImageModel(model) ? 'image[]' : 'image';
}
