/**
 * Input schemas of the MCP tools. `generate_image` takes one flat object (MCP clients and models
 * expect an object schema, not a union), merged from the per-model request schemas: each field
 * says which models accept it and, where they differ, which values each model takes, so a model
 * choosing arguments sees the catalog's rules. The server still validates with core's parser.
 */
import { DEFAULTS, IGNORED_OPENAI_FIELDS, MODEL_IDS, MODELS, OPENAI_FIELDS, type ModelId } from '../../../core/models';
import { generationJsonSchema, uploadOptionsJsonSchema, type JsonSchema } from '../schema-docs/json-schema';

/**
 * Tools always answer hosted URLs: base64 image data would flood a model's context. A tool call
 * waits for its image, so a webhook would only tell the caller what it already has. The tool draws
 * one image; OpenAI's fields are for OpenAI's clients.
 */
export const OPENAI_ONLY = new Set<string>([...OPENAI_FIELDS, ...IGNORED_OPENAI_FIELDS]);
const HIDDEN_GENERATION_FIELDS = new Set<string>(['response_format', 'webhook_url', ...OPENAI_ONLY]);

export function generateImageInputSchema(prices: Partial<Record<ModelId, number>>, models: readonly ModelId[] = MODEL_IDS): JsonSchema {
	const perModel = models.map((id) => ({ id, properties: generationJsonSchema(id).properties as Record<string, JsonSchema> }));
	const names = [...new Set(perModel.flatMap(({ properties }) => Object.keys(properties)))].filter((name) => !HIDDEN_GENERATION_FIELDS.has(name));
	const properties: Record<string, JsonSchema> = {};
	for (const name of names) {
		if (name === 'model') continue;
		const accepting = perModel.filter((model) => name in model.properties);
		const merged: JsonSchema = { ...accepting[0]!.properties[name]! };
		let description = String(merged.description ?? '');
		const enums = accepting.map(({ id, properties: own }) => ({ id, values: own[name]!.enum as string[] | undefined }));
		if (enums.every(({ values }) => values)) {
			merged.enum = [...new Set(enums.flatMap(({ values }) => values!))];
			const differ = enums.some(({ values }) => values!.join() !== (merged.enum as string[]).join());
			if (differ) description += ` Values by model: ${enums.map(({ id, values }) => `${id}: ${values!.join(', ')}`).join('; ')}.`;
		}
		if (accepting.length < perModel.length) description += ` Only for ${accepting.map(({ id }) => id).join(', ')}; leave it out for other models.`;
		if (accepting.some(({ id }) => MODELS[id].required.includes(name as never))) {
			description += ` Required for ${accepting.filter(({ id }) => MODELS[id].required.includes(name as never)).map(({ id }) => id).join(', ')}.`;
		}
		merged.description = description.trim();
		properties[name] = merged;
	}
	return {
		type: 'object',
		properties: {
			model: {
				type: 'string',
				enum: [...models],
				description: models
					.map((id) => `${id}: ${MODELS[id].description} (${MODELS[id].displayName}, ${prices[id] ?? MODELS[id].priceUsd} USD per image)`)
					.join('; '),
			},
			...properties,
		},
		required: ['model', 'prompt'],
		additionalProperties: false,
	};
}

export function uploadFileInputSchema(retentionSeconds: number): JsonSchema {
	return {
		type: 'object',
		properties: {
			file: {
				type: 'string',
				minLength: 1,
				description: 'The image or video: an http(s) URL, a data URI or raw base64. Its bytes decide what it is (png, jpeg, webp, gif, avif; mp4, mov, webm).',
			},
			...uploadOptionsJsonSchema(retentionSeconds),
		},
		required: ['file'],
		additionalProperties: false,
	};
}

/** One argument, `id`. */
const idInputSchema = (description: string): JsonSchema => ({ type: 'object', properties: { id: { type: 'string', description } }, required: ['id'], additionalProperties: false });

export const FILE_ID_INPUT_SCHEMA = idInputSchema('The file id: the last part of its URL, without the extension (given as `id` by upload_file).');
export const GENERATION_ID_INPUT_SCHEMA = idInputSchema('The generation id: gen_… for images, video_… for a video (the `id` a generation or generate_video answered).');

/** `verify_image`: the image alone, in any form uploads take. */
export const VERIFY_IMAGE_INPUT_SCHEMA: JsonSchema = {
	type: 'object',
	properties: { image: { type: 'string', minLength: 1, description: 'The image to check: an http(s) URL, a data URI or raw base64 (png, jpeg, webp, gif, avif).' } },
	required: ['image'],
	additionalProperties: false,
};

export const EMPTY_INPUT_SCHEMA: JsonSchema = { type: 'object', properties: {}, additionalProperties: false };

/** Kept in one place so a change of default shows in the tool description too. */
const OWN_RATIO_DEFAULTS = MODEL_IDS.filter((id) => MODELS[id].defaultAspectRatio !== DEFAULTS.aspect_ratio).map((id) => `${id}: ${MODELS[id].defaultAspectRatio}`);
export const GENERATION_DEFAULTS_TEXT = `Defaults: aspect_ratio ${DEFAULTS.aspect_ratio}${OWN_RATIO_DEFAULTS.length > 0 ? ` (${OWN_RATIO_DEFAULTS.join('; ')})` : ''}, output_format ${DEFAULTS.output_format}.`;
