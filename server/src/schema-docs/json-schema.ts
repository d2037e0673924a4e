/**
 * JSON Schemas of the request bodies, generated from the zod schemas that validate them (core), so
 * the OpenAPI document and the MCP tool schemas state the very rules the service enforces. zod
 * cannot see into a transform, so the few fields validated by hand (`seed`, `images`, a prompt
 * that is not blank) get their shape here from the same catalog constants the validators use.
 */
import { zodToJsonSchema } from 'zod-to-json-schema';
import type { ZodTypeAny } from 'zod/v3';
import { IGNORED_OPENAI_FIELDS, MAX_IMAGES_PER_REQUEST, MODELS, SEED_MAX, type ModelId } from '../../../core/models';
import { GENERATION_SCHEMAS, UPLOAD_OUTPUT_FORMATS, WEBHOOK_URL_MAX_LENGTH } from '../../../core/schemas';
import { UPLOAD_OPTION_BOUNDS } from '../../../core/upload-options';
import { VIDEO_MODEL_IDS, VIDEO_MODELS } from '../../../core/video-models';

export type JsonSchema = { [key: string]: unknown };

/** Words for people and models reading the schema; the rules themselves come from zod. */
const GENERATION_FIELD_DESCRIPTIONS: Record<string, string> = {
	model: 'The model to run.',
	prompt: 'What the image should show. Not blank.',
	images:
		'Input images to edit or combine: one string or an array, each an http(s) URL, a data URI or raw base64 (e.g. a URL returned by upload_file or an earlier generation).',
	negative_prompt: 'What the image should not show.',
	style_type: 'Rendering style.',
	magic_prompt_option: 'Whether the model may enhance the prompt before drawing (ON, OFF or AUTO).',
	aspect_ratio: "Width:height of the image; 'match_input_image' (p-image-edit's default) keeps the first input image's shape, at the listed ratio nearest to it.",
	response_format: "'url' hosts the image and answers its URL; 'b64_json' answers the bytes inline.",
	output_format: 'Image file format.',
	seed: 'Same seed and request, same image. Omit for a random one; the answer says which seed was used.',
	n: 'How many images (OpenAI): each its own call with seed + i, each charged; all or nothing.',
	size: "OpenAI's <width>x<height> (e.g. 1792x1024), read as the listed aspect ratio nearest to it, or auto (the model's default). Not with aspect_ratio.",
	quality: "OpenAI's; accepted and ignored.",
	style: "OpenAI's; accepted and ignored.",
	user: "OpenAI's; accepted and ignored.",
	background: "OpenAI's; accepted and ignored.",
	moderation: "OpenAI's; accepted and ignored.",
	output_compression: "OpenAI's (0-100); accepted and ignored.",
	webhook_url:
		"An http(s) URL the service POSTs the generation's end to, signed per Standard Webhooks (the key's secret: GET /v1/webhooks/secret). Private and loopback hosts are refused unless the operator allows them.",
};

export function toJsonSchema(schema: ZodTypeAny): JsonSchema {
	const json = zodToJsonSchema(schema, { target: 'jsonSchema7', $refStrategy: 'none', effectStrategy: 'input' }) as JsonSchema;
	delete json.$schema;
	return json;
}

/** The request body of POST /v1/images/generations for one model. */
export function generationJsonSchema(id: ModelId): JsonSchema {
	const spec = MODELS[id];
	const schema = toJsonSchema(GENERATION_SCHEMAS[id]);
	const properties = schema.properties as Record<string, JsonSchema>;
	properties.prompt = { ...properties.prompt, minLength: 1 };
	properties.seed = { type: 'integer', minimum: 0, maximum: SEED_MAX };
	properties.webhook_url = { type: 'string', format: 'uri', pattern: '^https?://', maxLength: WEBHOOK_URL_MAX_LENGTH };
	properties.n = { type: 'integer', minimum: 1, maximum: MAX_IMAGES_PER_REQUEST };
	properties.size = { type: 'string', pattern: '^(auto|[1-9][0-9]*x[1-9][0-9]*)$' };
	for (const field of IGNORED_OPENAI_FIELDS) properties[field] = { type: 'string' };
	properties.output_compression = { type: 'integer', minimum: 0, maximum: 100 };
	if (properties.images) {
		const url = { type: 'string', minLength: 1 };
		properties.images = { oneOf: [url, { type: 'array', items: url, minItems: 1, maxItems: spec.maxInputImages }] };
	}
	for (const [name, property] of Object.entries(properties)) {
		const description = GENERATION_FIELD_DESCRIPTIONS[name];
		if (description) property.description = description;
	}
	properties.model = { ...properties.model, description: `${spec.displayName}: ${spec.description}.` };
	return { title: spec.displayName, ...schema };
}

/** A JSON upload body (POST /v1/uploads, MCP upload_file), from the bounds core's parsers apply. */
export function uploadOptionsJsonSchema(retentionSeconds: number): Record<string, JsonSchema> {
	return {
		output_format: {
			type: 'string',
			enum: [...UPLOAD_OUTPUT_FORMATS, 'jpeg'],
			description: "Convert an image to this format ('jpeg' is an alias of 'jpg'). Images only.",
		},
		expires_in: {
			type: 'integer',
			minimum: UPLOAD_OPTION_BOUNDS.expires_in.min,
			maximum: retentionSeconds,
			description: `Seconds the file stays online (default and most: the server's retention, ${retentionSeconds}).`,
		},
		max_side: {
			type: 'integer',
			minimum: UPLOAD_OPTION_BOUNDS.max_side.min,
			maximum: UPLOAD_OPTION_BOUNDS.max_side.max,
			description: 'Scale an image down so its longest side is at most this many pixels. Images only.',
		},
		max_bytes: {
			type: 'integer',
			minimum: UPLOAD_OPTION_BOUNDS.max_bytes.min,
			description: 'Re-encode an image until it is at most this many bytes. Images only.',
		},
	};
}

/**
 * The request body of POST /v1/videos, in JSON and as the SDKs' multipart form (every field a
 * text part, the first frame, last frame and audio file parts). Documents only: core's
 * parseVideoRequest checks it, with the catalog's limits written here.
 */
export function videoRequestJsonSchemas(): { json: JsonSchema; form: JsonSchema } {
	const spec = VIDEO_MODELS[VIDEO_MODEL_IDS[0]];
	const media = (what: string) => ({ type: 'string', minLength: 1, description: `${what}: an http(s) URL, a data URI or raw base64` });
	const fields: Record<string, JsonSchema> = {
		model: { type: 'string', enum: [...VIDEO_MODEL_IDS], default: spec.id, description: `${spec.displayName}: ${spec.description}.` },
		prompt: { type: 'string', minLength: 1, maxLength: spec.promptMaxLength, description: 'What the video shows. Not blank.' },
		seconds: { type: ['integer', 'string'], minimum: spec.minSeconds, maximum: spec.maxSeconds, pattern: '^[0-9]+$', default: spec.defaultSeconds, description: `Length in whole seconds, ${spec.minSeconds}–${spec.maxSeconds} (OpenAI's SDKs send it as a string).` },
		size: { type: 'string', pattern: '^[1-9][0-9]*x[1-9][0-9]*$', description: "OpenAI's <width>x<height> (e.g. 1280x720), read as the nearest aspect ratio and resolution. Not with aspect_ratio or resolution." },
		aspect_ratio: { type: 'string', enum: [...spec.aspectRatios], default: spec.defaultAspectRatio, description: "Width:height of the frame; a first frame's own shape wins." },
		resolution: { type: 'string', enum: [...spec.resolutions], default: spec.defaultResolution },
		fps: { type: 'integer', enum: [...spec.fps], default: spec.defaultFps, description: 'Frames per second.' },
		draft: { type: 'boolean', default: false, description: 'A faster, cheaper preview.' },
		prompt_upsampling: { type: 'boolean', default: true, description: 'Whether the host may enhance the prompt.' },
		save_audio: { type: 'boolean', default: true, description: 'Whether the MP4 keeps its audio track.' },
		seed: { type: 'integer', minimum: 0, maximum: SEED_MAX, description: GENERATION_FIELD_DESCRIPTIONS.seed },
		input_reference: { oneOf: [media('The first frame'), { type: 'object', required: ['image_url'], properties: { image_url: media('The first frame') }, additionalProperties: false }], description: "OpenAI's first frame. Not with image." },
		image: media('The first frame (p-video\'s name for input_reference)'),
		last_frame_image: media('The last frame'),
		audio: media('An audio track (flac, mp3, wav): the video follows its length'),
		webhook_url: { type: 'string', format: 'uri', pattern: '^https?://', maxLength: WEBHOOK_URL_MAX_LENGTH, description: GENERATION_FIELD_DESCRIPTIONS.webhook_url },
	};
	const file = (description: string) => ({ type: 'string', format: 'binary', description });
	const formFiles = { input_reference: file('The first frame'), image: file('The first frame'), last_frame_image: file('The last frame'), audio: file('An audio track') };
	return {
		json: { type: 'object', required: ['prompt'], properties: fields, additionalProperties: false },
		form: { type: 'object', required: ['prompt'], properties: { ...fields, ...formFiles }, additionalProperties: false },
	};
}
