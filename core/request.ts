/**
 * Request shaping for clients (the n8n nodes): turns camelCase parameters into the API body,
 * sending only the fields the selected model accepts, and maps API field names back to
 * parameter names so an error can point at the field the user actually sees.
 */
import { MODELS, type ModelId } from './models';

export interface GenerationParameters {
	model: ModelId;
	prompt: string;
	images?: string[];
	negativePrompt?: string;
	styleType?: string;
	magicPromptOption?: string;
	aspectRatio?: string;
	outputFormat?: string;
	responseFormat?: string;
	seed?: number;
}

export const PARAMETER_NAMES = {
	model: 'model',
	prompt: 'prompt',
	images: 'images',
	negative_prompt: 'negativePrompt',
	style_type: 'styleType',
	magic_prompt_option: 'magicPromptOption',
	aspect_ratio: 'aspectRatio',
	output_format: 'outputFormat',
	response_format: 'responseFormat',
	seed: 'seed',
} as const;

/** The node parameter behind an API field path such as `images[2]` (→ `images`). */
export function parameterNameFor(apiField: string | null | undefined): string | undefined {
	if (!apiField) return undefined;
	const root = apiField.replace(/[.[].*$/, '') as keyof typeof PARAMETER_NAMES;
	return PARAMETER_NAMES[root];
}

export function toGenerationBody(parameters: GenerationParameters): Record<string, unknown> {
	const accepted = MODELS[parameters.model]?.fields ?? [];
	const body: Record<string, unknown> = { model: parameters.model, prompt: parameters.prompt };
	const optional: Record<string, unknown> = {
		aspect_ratio: parameters.aspectRatio,
		output_format: parameters.outputFormat,
		response_format: parameters.responseFormat,
		seed: parameters.seed,
	};
	if (accepted.includes('images')) optional.images = parameters.images;
	if (accepted.includes('negative_prompt') && parameters.negativePrompt) {
		optional.negative_prompt = parameters.negativePrompt;
	}
	if (accepted.includes('style_type')) optional.style_type = parameters.styleType;
	if (accepted.includes('magic_prompt_option')) optional.magic_prompt_option = parameters.magicPromptOption;
	for (const [key, value] of Object.entries(optional)) {
		if (value !== undefined && value !== '') body[key] = value;
	}
	return body;
}
