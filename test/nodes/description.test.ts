/**
 * What a user sees in the editor, evaluated with n8n's own display logic (NodeHelpers): for each
 * model exactly its parameters, its own aspect ratios, and options that come from core's catalog.
 */
import { NodeHelpers, type INodeParameters, type INodeProperties, type INodeTypeDescription } from 'n8n-workflow';
import { titleCase } from 'title-case';

import { ImageGenApi } from '../../credentials/ImageGenApi.credentials';
import { DEFAULTS, IMAGE_OUTPUT_FORMATS, MAGIC_PROMPT_OPTIONS, MODEL_IDS, MODELS, STYLE_TYPES, aspectRatioChoices, type ModelId } from '../../core/models';
import { VIDEO_MODEL_IDS, isVideoModelId } from '../../core/video-models';
import { ImageGen } from '../../nodes/ImageGen/ImageGen.node';
import { ImageGenUpload } from '../../nodes/ImageGenUpload/ImageGenUpload.node';

const imageGen = new ImageGen().description;
const upload = new ImageGenUpload().description;

function visible(description: INodeTypeDescription, values: Record<string, unknown>): INodeProperties[] {
	const node = { typeVersion: 1 };
	const resolved = NodeHelpers.getNodeParameters(description.properties, values as never, true, false, node, description) ?? {};
	return description.properties.filter((property) => NodeHelpers.displayParameter(resolved, property, node, description));
}

const names = (properties: INodeProperties[]) => properties.map((property) => property.name);
const optionValues = (property: INodeProperties | undefined) => (property?.options ?? []).map((option) => (option as { value: unknown }).value);

const COMMON = ['operation', 'model', 'prompt', 'aspectRatio', 'outputFormat', 'responseFormat', 'options'];
const EXPECTED_FIELDS: Record<string, string[]> = {
	'p-image': COMMON,
	'p-image-edit': ['operation', 'model', 'prompt', 'images', 'aspectRatio', 'outputFormat', 'responseFormat', 'options'],
	'textimage-v2': ['operation', 'model', 'prompt', 'negativePrompt', 'styleType', 'magicPromptOption', 'aspectRatio', 'outputFormat', 'responseFormat', 'options'],
};

describe.each(MODEL_IDS)('ImageGen with model %s', (model) => {
	const shown = visible(imageGen, { model });

	test('shows exactly the parameters of the model', () => {
		expect(names(shown)).toEqual(EXPECTED_FIELDS[model]);
	});

	test('offers exactly the aspect ratios of the model, in catalog order', () => {
		const aspectRatio = shown.filter((property) => property.name === 'aspectRatio');
		expect(aspectRatio).toHaveLength(1);
		expect(optionValues(aspectRatio[0])).toEqual([...aspectRatioChoices(MODELS[model])]);
		expect(aspectRatio[0]!.default).toBe(MODELS[model].defaultAspectRatio);
	});
});

test('7 aspect ratios for p-image, the same 7 and Match Input Image for p-image-edit, 11 for textimage-v2', () => {
	const counts = MODEL_IDS.map((model) => optionValues(visible(imageGen, { model }).find((p) => p.name === 'aspectRatio')).length);
	expect(counts).toEqual([7, 8, 11]);
});

test('option lists come from the catalog and defaults equal the service defaults', () => {
	const byName = (name: string) => imageGen.properties.find((property) => property.name === name)!;
	expect(optionValues(byName('model'))).toEqual([...MODEL_IDS, ...VIDEO_MODEL_IDS]);
	expect(optionValues(byName('outputFormat'))).toEqual([...IMAGE_OUTPUT_FORMATS]);
	expect(optionValues(byName('styleType'))).toEqual([...STYLE_TYPES]);
	expect(optionValues(byName('magicPromptOption'))).toEqual([...MAGIC_PROMPT_OPTIONS]);
	expect(optionValues(byName('responseFormat'))).toEqual(['url', 'b64_json']);
	expect(byName('outputFormat').default).toBe(DEFAULTS.output_format);
	expect(byName('responseFormat').default).toBe(DEFAULTS.response_format);
	expect(byName('styleType').default).toBe(DEFAULTS.style_type);
	expect(byName('magicPromptOption').default).toBe(DEFAULTS.magic_prompt_option);
	// The video models' aspect ratio: test/nodes/video-description.test.ts.
	for (const property of imageGen.properties.filter((p) => p.name === 'aspectRatio' && !(p.displayOptions!.show!.model as string[]).some(isVideoModelId))) {
		const models = property.displayOptions!.show!.model as ModelId[];
		expect(models.map((model) => MODELS[model].defaultAspectRatio)).toEqual(models.map(() => property.default));
	}
	expect(byName('model').default).toBe(MODEL_IDS[0]);
});

test('input images: one source per entry, up to 10, each showing only its own field', () => {
	const images = imageGen.properties.find((property) => property.name === 'images')!;
	expect(images.typeOptions?.maxAllowedFields).toBe(10);
	const values = (images.options![0] as { values: INodeProperties[] }).values;
	const shownFor = (source: string) =>
		values.filter((field) => NodeHelpers.displayParameter({ source }, field, { typeVersion: 1 }, imageGen)).map((field) => field.name);
	expect(shownFor('binary')).toEqual(['source', 'binaryPropertyName']);
	expect(shownFor('url')).toEqual(['source', 'url']);
	expect(shownFor('base64')).toEqual(['source', 'base64']);
});

describe('ImageGen Upload', () => {
	test.each([
		[{ inputType: 'binary', mediaType: 'auto' }, ['operation', 'inputType', 'binaryPropertyName', 'mediaType', 'outputFormat', 'options']],
		[{ operation: 'upload', inputType: 'url', mediaType: 'image' }, ['operation', 'inputType', 'url', 'mediaType', 'outputFormat', 'options']],
		[{ inputType: 'base64', mediaType: 'auto' }, ['operation', 'inputType', 'base64', 'mediaType', 'outputFormat', 'options']],
		[{ inputType: 'binary', mediaType: 'video' }, ['operation', 'inputType', 'binaryPropertyName', 'mediaType', 'options']],
		[{ inputType: 'url', mediaType: 'video' }, ['operation', 'inputType', 'url', 'mediaType', 'options']],
		[{ operation: 'getInfo', inputType: 'url' }, ['operation', 'fileId', 'options']],
		[{ operation: 'delete' }, ['operation', 'fileId', 'options']],
		[{ operation: 'verify' }, ['operation', 'inputType', 'binaryPropertyName', 'options']],
		[{ operation: 'verify', inputType: 'url', mediaType: 'video' }, ['operation', 'inputType', 'url', 'options']],
		[{ operation: 'verify', inputType: 'base64' }, ['operation', 'inputType', 'base64', 'options']],
	])('%j shows %j', (values, expected) => {
		expect(names(visible(upload, values))).toEqual(expected);
	});

	test('operations: upload (the default, so saved workflows without one upload), get info, delete, verify', () => {
		const operation = upload.properties.find((property) => property.name === 'operation')!;
		expect(optionValues(operation)).toEqual(['upload', 'getInfo', 'delete', 'verify']);
		expect(operation.default).toBe('upload');
	});

	test.each([
		[{ operation: 'upload' }, { fitFor: 'none' }, ['fitFor', 'expiresIn', 'concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'upload' }, { fitFor: 'custom' }, ['fitFor', 'expiresIn', 'maxSide', 'maxSizeMb', 'concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'getInfo' }, { fitFor: 'custom' }, ['concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'delete' }, {}, ['concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'verify' }, { fitFor: 'custom' }, ['concurrency', 'maxRetries', 'timeout']],
	])('options for %j with %j: %j', (root, options, expected) => {
		const collection = upload.properties.find((property) => property.name === 'options')!;
		const shown = (collection.options as INodeProperties[]).filter((option) =>
			NodeHelpers.displayParameter(options, option, { typeVersion: 1 }, upload, { ...root, options }),
		);
		expect(names(shown)).toEqual(expected);
	});

	test('fit for: none, four platforms and X, custom; lifetimes from 1 to 24 hours in seconds', () => {
		const collection = upload.properties.find((property) => property.name === 'options')!.options as INodeProperties[];
		const option = (name: string) => collection.find((property) => property.name === name);
		expect(optionValues(option('fitFor'))).toEqual(['none', 'instagramFeed', 'instagramStory', 'facebook', 'linkedIn', 'x', 'custom']);
		expect(optionValues(option('expiresIn'))).toEqual([3600, 21600, 43200, 86400]);
	});

	test('output formats: original, webp, png, jpg', () => {
		expect(optionValues(upload.properties.find((property) => property.name === 'outputFormat'))).toEqual(['original', 'webp', 'png', 'jpg']);
	});
});

describe('ImageGen operations', () => {
	const collection = imageGen.properties.find((property) => property.name === 'options')!;
	// The root parameters as the editor holds them: a saved workflow's, with the defaults filled in.
	const shownOptions = (saved: Record<string, unknown>, options: INodeParameters) => {
		const root = NodeHelpers.getNodeParameters(imageGen.properties, { model: 'p-image', ...saved, options } as never, true, false, { typeVersion: 1 } as never, imageGen) ?? {};
		return names((collection.options as INodeProperties[]).filter((option) => NodeHelpers.displayParameter(options, option, { typeVersion: 1 }, imageGen, root)));
	};

	test('generate (the default, so saved workflows without an operation generate) and get generation', () => {
		const operation = imageGen.properties.find((property) => property.name === 'operation')!;
		expect(optionValues(operation)).toEqual(['generate', 'getGeneration']);
		expect(operation.default).toBe('generate');
		expect(names(visible(imageGen, { model: 'p-image' }))).toEqual(EXPECTED_FIELDS['p-image']);
	});

	test('get generation shows only the generation id and the options', () => {
		expect(names(visible(imageGen, { operation: 'getGeneration', model: 'textimage-v2' }))).toEqual(['operation', 'generationId', 'options']);
	});

	test.each([
		[{}, {}, ['download', 'binaryPropertyName', 'inlineLimitMb', 'seed', 'waitForResult', 'maxWaitSeconds', 'webhookUrl', 'openAiModel', 'concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'generate' }, { waitForResult: 'wait' }, ['download', 'binaryPropertyName', 'inlineLimitMb', 'seed', 'waitForResult', 'maxWaitSeconds', 'webhookUrl', 'openAiModel', 'concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'generate' }, { waitForResult: 'submit' }, ['download', 'binaryPropertyName', 'inlineLimitMb', 'seed', 'waitForResult', 'webhookUrl', 'openAiModel', 'concurrency', 'maxRetries', 'timeout']],
		[{ operation: 'getGeneration' }, { waitForResult: 'wait' }, ['download', 'binaryPropertyName', 'concurrency', 'maxRetries', 'timeout']],
	])('options for %j with %j: %j', (root, options, expected) => {
		expect(shownOptions(root, options)).toEqual(expected);
	});

	test('job options: Wait by default, Max Wait 1800 s, no Webhook URL', () => {
		const option = (name: string) => (collection.options as INodeProperties[]).find((property) => property.name === name)!;
		expect(optionValues(option('waitForResult'))).toEqual(['submit', 'wait']);
		expect([option('waitForResult').default, option('maxWaitSeconds').default, option('webhookUrl').default]).toEqual(['wait', 1800, '']);
	});
});

test('ImageGen options: a seed from 0 to 2147483647', () => {
	const seed = (imageGen.properties.find((property) => property.name === 'options')!.options as INodeProperties[]).find((option) => option.name === 'seed')!;
	expect(seed.typeOptions).toMatchObject({ minValue: 0, maxValue: 2147483647 });
});

/** Every label a parameter shows, options and fixed collections included. */
function labels(properties: readonly unknown[]): string[] {
	return properties.flatMap((entry) => {
		const property = entry as Partial<INodeProperties> & { values?: unknown[] };
		// Options of a list have a name and a value, no type: they are choices, not labels.
		const own = property.displayName !== undefined && property.type !== undefined ? [property.displayName] : [];
		return [...own, ...labels(property.options ?? []), ...labels(property.values ?? [])];
	});
}

test('both nodes: every label is in n8n\'s title case (small words such as "to" lower case, acronyms kept)', () => {
	// n8n-workflow and n8n's lint rule for labels use the `title-case` package; it leaves an already
	// capitalised word alone, so each plain capitalised word is lowered first and must come back as it was.
	const miscased = [...labels(imageGen.properties), ...labels(upload.properties)].filter(
		(label) => titleCase(label.replace(/\b[A-Z][a-z]+\b/g, (word) => word.toLowerCase())) !== label,
	);
	expect(miscased).toEqual([]);
});

test('both nodes: usable as tools, light and dark icons, the ImageGen API credential, a subtitle', () => {
	for (const description of [imageGen, upload]) {
		expect(description.usableAsTool).toBe(true);
		expect(description.icon).toEqual({ light: expect.stringMatching(/^file:.*\.svg$/), dark: expect.stringMatching(/^file:.*\.dark\.svg$/) });
		expect(description.credentials).toEqual([{ name: 'imageGenApi', required: true }]);
		expect(description.subtitle).toMatch(/\$parameter/);
	}
});

test('credential: bearer header from the key, a test against /models, base URL defaulting to a local server', () => {
	const credential = new ImageGenApi();
	expect(credential.name).toBe('imageGenApi');
	expect(credential.properties.map((property) => property.name)).toEqual(['apiKey', 'baseUrl', 'serviceType']);
	expect(credential.properties[0]!.typeOptions?.password).toBe(true);
	expect(credential.properties[1]!.default).toBe('http://localhost:8080/v1');
	// Credentials saved before Service Type existed have none: they keep talking to an ImageGen service.
	expect(optionValues(credential.properties[2])).toEqual(['imagegen', 'openai']);
	expect(credential.properties[2]!.default).toBe('imagegen');
	expect(credential.authenticate).toEqual({ type: 'generic', properties: { headers: { Authorization: '=Bearer {{$credentials.apiKey}}' } } });
	expect(credential.test.request.url).toBe('/models');
});
