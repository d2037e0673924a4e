/**
 * The ImageGen node's parameters, derived from core's model catalog: which fields a model shows,
 * its aspect ratios and every option list come from there, never from a second list here.
 * Defaults are literals because n8n's linter reads them; a test holds them equal to core's DEFAULTS.
 */
import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

import {
	IMAGE_OUTPUT_FORMATS,
	MAGIC_PROMPT_OPTIONS,
	MAX_INPUT_IMAGES,
	MODEL_IDS,
	MATCH_INPUT_IMAGE,
	MODELS,
	STYLE_TYPES,
	aspectRatioChoices,
	modelsAccepting,
	type AspectRatioChoice,
	type ModelId,
} from '../../core/models';
import { VIDEO_MODEL_IDS, VIDEO_MODELS } from '../../core/video-models';
import { mediaSourceFields, mediaSourceOptions } from '../shared/media-source';
import { requestOptionProperties } from '../shared/request-options';
import { getGenerationProperties } from './get-generation';
import { jobOptionProperties } from './job-options';
import { hideForVideo, videoProperties } from './video-description';

const FORMAT_NAMES: Record<string, string> = { png: 'PNG', jpeg: 'JPEG', webp: 'WebP' };
const STYLE_NAMES: Record<string, string> = { RENDER_3D: '3D Render' };
const MAGIC_PROMPT_DESCRIPTIONS: Record<string, string> = {
	AUTO: 'The model decides whether to enhance the prompt',
	ON: 'Always enhance the prompt',
	OFF: 'Use the prompt as written',
};

function titleCase(value: string): string {
	return value.charAt(0) + value.slice(1).toLowerCase();
}

const showFor = (models: readonly ModelId[]) => ({ show: { model: [...models] } });

/** Shows a parameter for the Generate operation only, besides its own conditions. */
function forGenerate(property: INodeProperties): INodeProperties {
	return { ...property, displayOptions: { ...property.displayOptions, show: { ...property.displayOptions?.show, operation: ['generate'] } } };
}

/** Shows an option of the collection for the Generate operation only, besides its own conditions. */
function optionForGenerate(property: INodeProperties): INodeProperties {
	return { ...property, displayOptions: { ...property.displayOptions, show: { ...property.displayOptions?.show, '/operation': ['generate'] } } };
}

/**
 * One `aspectRatio` property per distinct ratio list, each shown only for the models that use it.
 * A model with input images also offers Match Input Image, its default: a workflow saved with a
 * named ratio keeps it, one that named none keeps the input's shape as the service does.
 */
function aspectRatioProperties(): INodeProperties[] {
	const groups = new Map<string, { ratios: readonly AspectRatioChoice[]; models: ModelId[] }>();
	for (const id of MODEL_IDS) {
		const ratios = aspectRatioChoices(MODELS[id]);
		const key = ratios.join(',');
		const group = groups.get(key) ?? { ratios, models: [] };
		group.models.push(id);
		groups.set(key, group);
	}
	return [...groups.values()].map(({ ratios, models }) => {
		const property: INodeProperties = {
			displayName: 'Aspect Ratio',
			name: 'aspectRatio',
			type: 'options',
			options: ratios.map((ratio) =>
				ratio === MATCH_INPUT_IMAGE
					? { name: 'Match Input Image', value: ratio, description: 'The shape of the first input image (the listed ratio nearest to it)' }
					: { name: ratio, value: ratio },
			),
			default: '1:1',
			description: 'Width to height of the generated image',
			displayOptions: showFor(models),
		};
		return ratios.includes(MATCH_INPUT_IMAGE) ? { ...property, default: 'match_input_image' } : property;
	});
}

const IMAGE_SOURCE = { noun: 'image', urlPlaceholder: 'https://example.com/photo.png', required: false };

const imagesProperty: INodeProperties = {
	displayName: 'Input Images',
	name: 'images',
	type: 'fixedCollection',
	placeholder: 'Add Image',
	typeOptions: { multipleValues: true, multipleValueButtonText: 'Add Image', maxAllowedFields: MAX_INPUT_IMAGES },
	default: { image: [{ source: 'binary', binaryPropertyName: 'data' }] },
	description: `Images that guide the generation, up to ${MAX_INPUT_IMAGES}`,
	displayOptions: showFor(modelsAccepting('images')),
	options: [
		{
			displayName: 'Image',
			name: 'image',
			values: [
				{
					displayName: 'Source',
					name: 'source',
					type: 'options',
					options: mediaSourceOptions(IMAGE_SOURCE),
					default: 'binary',
				},
				...mediaSourceFields('source', IMAGE_SOURCE),
			],
		},
	],
};

/** Options of the Generate operation; Get Generation has only the output and request options. */
const generateOptionProperties: INodeProperties[] = [
	{
		displayName: 'Send Binary Images Inline up to (MB)',
		name: 'inlineLimitMb',
		type: 'number',
		typeOptions: { minValue: 0 },
		default: 4,
		description: 'Binary input images (and first and last frames) up to this size are sent inside the request; larger ones are uploaded first and passed as a URL',
	},
	{
		displayName: 'Seed',
		name: 'seed',
		type: 'number',
		typeOptions: { minValue: 0, maxValue: 2147483647, numberPrecision: 0 },
		default: 0,
		description: 'The same request with the same seed gives the same image or video where the model allows it; the output shows the seed used',
	},
	...jobOptionProperties,
	{
		displayName: 'Model ID (OpenAI-Compatible)',
		name: 'openAiModel',
		type: 'string',
		default: 'gpt-image-1',
		placeholder: 'e.g. gpt-image-1, dall-e-3 or a LocalAI model',
		description:
			'Used only when the credential\'s Service Type is OpenAI-Compatible: the model the API is asked for. Model above then only chooses between generating (p-image, textimage-v2) and editing the input images (p-image-edit).',
		displayOptions: { hide: { '/model': [...VIDEO_MODEL_IDS] } },
	},
];

const optionsProperty: INodeProperties = {
	displayName: 'Options',
	name: 'options',
	type: 'collection',
	placeholder: 'Add Option',
	default: {},
	options: [
		{
			displayName: 'Download Image or Video',
			name: 'download',
			type: 'boolean',
			default: true,
			description: 'Whether to download a hosted image (Response Format "Hosted URL") or a finished video into the output item as binary data',
		},
		{
			displayName: 'Put Output File in Field',
			name: 'binaryPropertyName',
			type: 'string',
			default: 'data',
			description: 'The binary field of the output item that receives the image or video',
		},
		...generateOptionProperties.map(optionForGenerate),
		...requestOptionProperties,
	],
};

const operationProperty: INodeProperties = {
	displayName: 'Operation',
	name: 'operation',
	type: 'options',
	noDataExpression: true,
	options: [
		{ name: 'Generate', value: 'generate', action: 'Generate an image or video', description: 'Generate an image from a prompt and, for p-image-edit, input images; or a video with p-video' },
		{ name: 'Get Generation', value: 'getGeneration', action: 'Get a generation', description: 'Fetch a generation by its ID: its status, or its image or video once it has succeeded' },
	],
	// Workflows saved before operations existed have no `operation`: they generate.
	default: 'generate',
};

const generateProperties: INodeProperties[] = [
	{
		displayName: 'Model',
		name: 'model',
		type: 'options',
		noDataExpression: true,
		// Named by id: the id is what the API, the docs and the run data call the model.
		options: [
			...MODEL_IDS.map<INodePropertyOptions>((id) => ({ name: id, value: id, description: MODELS[id].description })),
			...VIDEO_MODEL_IDS.map<INodePropertyOptions>((id) => ({ name: id, value: id, description: VIDEO_MODELS[id].description })),
		],
		default: 'p-image',
	},
	{
		displayName: 'Prompt',
		name: 'prompt',
		type: 'string',
		typeOptions: { rows: 4 },
		required: true,
		default: '',
		placeholder: 'A lighthouse on a cliff at sunset, watercolor',
		description: 'What the image or video should show',
	},
	imagesProperty,
	{
		displayName: 'Negative Prompt',
		name: 'negativePrompt',
		type: 'string',
		typeOptions: { rows: 2 },
		default: '',
		description: 'What the image should not show',
		displayOptions: showFor(modelsAccepting('negative_prompt')),
	},
	{
		displayName: 'Style',
		name: 'styleType',
		type: 'options',
		options: STYLE_TYPES.map((style) => ({ name: STYLE_NAMES[style] ?? titleCase(style), value: style })),
		default: 'AUTO',
		displayOptions: showFor(modelsAccepting('style_type')),
	},
	{
		displayName: 'Magic Prompt',
		name: 'magicPromptOption',
		type: 'options',
		options: MAGIC_PROMPT_OPTIONS.map((option) => ({
			name: titleCase(option),
			value: option,
			description: MAGIC_PROMPT_DESCRIPTIONS[option],
		})),
		default: 'AUTO',
		description: 'Whether the service enhances the prompt before generating',
		displayOptions: showFor(modelsAccepting('magic_prompt_option')),
	},
	...aspectRatioProperties(),
	...videoProperties,
	{
		displayName: 'Output Format',
		name: 'outputFormat',
		type: 'options',
		options: IMAGE_OUTPUT_FORMATS.map((format) => ({ name: FORMAT_NAMES[format] ?? format, value: format })),
		default: 'png',
		displayOptions: hideForVideo,
	},
	{
		displayName: 'Response Format',
		name: 'responseFormat',
		type: 'options',
		options: [
			{ name: 'Hosted URL', value: 'url', description: 'The service hosts the image for 24 hours' },
			{ name: 'Binary Data', value: 'b64_json', description: 'The image comes back in the answer; nothing is hosted' },
		],
		default: 'url',
		displayOptions: hideForVideo,
	},
];

export const imageGenProperties: INodeProperties[] = [operationProperty, ...generateProperties.map(forGenerate), ...getGenerationProperties, optionsProperty];
