/**
 * zod schemas for the generation and upload requests, built from the catalog, plus the
 * translation of zod issues into errors that name the offending field in words a user can act on.
 */
import { z } from 'zod/v3';
import { ImageGenError, invalidField } from './errors';
import { parseMediaInput, type MediaInput } from './media';
import { isUploadOptionField } from './upload-options';
import {
	COMMON_FIELDS,
	DEFAULTS,
	IGNORED_OPENAI_FIELDS,
	MAGIC_PROMPT_OPTIONS,
	MAX_IMAGES_PER_REQUEST,
	MATCH_INPUT_IMAGE,
	MODEL_IDS,
	MODEL_SPECIFIC_FIELDS,
	MODELS,
	OPENAI_FIELDS,
	PROMPT_MAX_LENGTH,
	RESPONSE_FORMATS,
	SEED_MAX,
	STYLE_TYPES,
	isModelId,
	modelsAccepting,
	aspectRatioChoices,
	nearestAspectRatio,
	type AspectRatioChoice,
	type ImageOutputFormat,
	type MagicPromptOption,
	type ModelId,
	type ModelSpec,
	type ModelSpecificField,
	type ResponseFormat,
	type StyleType,
} from './models';

export interface GenerationRequest {
	model: ModelId;
	prompt: string;
	/** Always an array once validated, even when the caller sent a single string. */
	images?: string[];
	negative_prompt?: string;
	/** `match_input_image` (p-image-edit's default) keeps the first input image's shape. */
	aspect_ratio: AspectRatioChoice;
	style_type?: StyleType;
	magic_prompt_option?: MagicPromptOption;
	response_format: ResponseFormat;
	output_format: ImageOutputFormat;
	/** The same seed with the same request gives the same image (exactly so on the sandbox). */
	seed?: number;
	/** Where the service POSTs the generation's end, signed (Standard Webhooks); http(s) only. */
	webhook_url?: string;
	/** How many images, 1 to 10 (one when absent): image i is drawn with seed + i, each charged. */
	n?: number;
}

/** Every model takes it; it says where the answer goes, not what is drawn. */
const WEBHOOK_URL = 'webhook_url';
/** As long as a URL gets in practice (browsers and proxies cut longer ones). */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

const KNOWN_FIELDS = new Set<string>([...COMMON_FIELDS, ...OPENAI_FIELDS, ...IGNORED_OPENAI_FIELDS, ...MODEL_SPECIFIC_FIELDS, WEBHOOK_URL]);

function enumOf<T extends string>(values: readonly T[]) {
	return z.enum(values as unknown as [T, ...T[]]);
}

function textField(maxLength: number, required: boolean) {
	return z
		.string()
		.max(maxLength)
		.refine((value) => !required || value.trim().length > 0, {
			message: 'must not be empty or only white space',
		});
}

const imageInputs = z
	.union([z.string(), z.array(z.unknown())])
	.transform((value, ctx): string[] => {
		const list = typeof value === 'string' ? [value] : value;
		if (list.length === 0) {
			ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must contain at least 1 image' });
			return z.NEVER;
		}
		if (list.length > MODELS['p-image-edit'].maxInputImages) {
			ctx.addIssue({
				code: z.ZodIssueCode.custom,
				message: `must contain at most ${MODELS['p-image-edit'].maxInputImages} images, got ${list.length}`,
			});
			return z.NEVER;
		}
		list.forEach((entry, index) => {
			if (typeof entry !== 'string') {
				ctx.addIssue({
					code: z.ZodIssueCode.custom,
					path: [index],
					message: `must be a string (an http(s) URL, a data URI or base64), got ${describeType(entry)}`,
				});
				return;
			}
			try {
				parseMediaInput(entry, `images[${index}]`);
			} catch (error) {
				ctx.addIssue({
					code: z.ZodIssueCode.custom,
					path: [index],
					message: error instanceof Error ? error.message : String(error),
					params: { preformatted: true, code: error instanceof ImageGenError ? error.code : undefined },
				});
			}
		});
		return list as string[];
	});

/** Strict: a whole number in range, never a numeric string or a float rounded for the caller. */
const seedField = z.unknown().transform((value, ctx): number | undefined => {
	if (value === undefined) return undefined;
	if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= SEED_MAX) return value;
	ctx.addIssue({
		code: z.ZodIssueCode.custom,
		message: `must be a whole number from 0 to ${SEED_MAX}; got ${typeof value === 'number' ? String(value) : describeType(value)}`,
	});
	return z.NEVER;
});

/** An http(s) URL of at most 2,048 characters; whether its host may be reached is the server's to say. */
const webhookUrlField = z.unknown().transform((value, ctx): string | undefined => {
	if (value === undefined) return undefined;
	const refuse = (message: string, code: string) => refuseField(ctx, WEBHOOK_URL, message, code);
	if (typeof value !== 'string') return refuse(`must be an http or https URL; got ${describeType(value)}`, 'invalid_type');
	if (value.length > WEBHOOK_URL_MAX_LENGTH) return refuse(`is too long: at most ${WEBHOOK_URL_MAX_LENGTH} characters; got ${value.length}`, 'too_long');
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		return refuse(`must be an http or https URL; got ${describeValue(value)}`, 'invalid_url');
	}
	if (url.protocol !== 'http:' && url.protocol !== 'https:') return refuse(`must be an http or https URL; got the scheme '${url.protocol}'`, 'unsupported_url_scheme');
	if (url.username || url.password) return refuse('must not carry credentials in the URL', 'invalid_url');
	return value;
});

/** `webhook_url` checked alone (a request that is not a generation: a video): undefined when absent. */
export function parseWebhookUrl(value: unknown): string | undefined {
	const parsed = webhookUrlField.safeParse(value);
	if (parsed.success) return parsed.data;
	const issue = parsed.error.issues[0]!;
	throw invalidField(WEBHOOK_URL, issue.message, (issue as { params?: { code?: string } }).params?.code ?? 'invalid_value');
}

/** A preformatted refusal of one field (an OpenAI one, `webhook_url`), in the wording of the others. */
function refuseField(ctx: z.RefinementCtx, field: string, message: string, code = 'invalid_value'): never {
	ctx.addIssue({ code: z.ZodIssueCode.custom, message: `'${field}' ${message}`, params: { preformatted: true, code } });
	return z.NEVER as never;
}

/** A whole number from `min` to `max`; absent (or null, as OpenAI takes it) is undefined. */
function wholeNumberIn(ctx: z.RefinementCtx, field: string, value: unknown, min: number, max: number): number | undefined {
	if (value === undefined || value === null) return undefined;
	if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
	const got = typeof value === 'number' ? String(value) : describeType(value);
	return refuseField(ctx, field, `must be a whole number from ${min} to ${max}; got ${got}`, typeof value === 'number' ? 'invalid_value' : 'invalid_type');
}

/** `n`: a whole number from 1 to 10; absent is left out: one image. */
const imageCountField = z.unknown().transform((value, ctx) => wholeNumberIn(ctx, 'n', value, 1, MAX_IMAGES_PER_REQUEST));

export type RequestedSize = { width: number; height: number } | 'auto';

/** `size`: `<width>x<height>` in positive whole pixels, or `auto` (the model's default shape). */
const sizeField = z.unknown().transform((value, ctx): RequestedSize | undefined => {
	if (value === undefined || value === null) return undefined;
	if (typeof value !== 'string') return refuseField(ctx, 'size', `must be a string: <width>x<height> (e.g. 1024x1024) or auto; got ${describeType(value)}`, 'invalid_type');
	if (value === 'auto') return 'auto';
	const match = /^([1-9]\d{0,5})x([1-9]\d{0,5})$/.exec(value);
	if (!match) return refuseField(ctx, 'size', `must be <width>x<height> in whole pixels (e.g. 1024x1024) or auto; got ${describeValue(value)}`);
	return { width: Number(match[1]), height: Number(match[2]) };
});

/** An OpenAI field our hosts have no use for: its type is checked as OpenAI documents it, its value dropped. */
function ignoredText(field: string) {
	return z.unknown().superRefine((value, ctx) => {
		if (value !== undefined && value !== null && typeof value !== 'string') refuseField(ctx, field, `must be a string; got ${describeType(value)}`, 'invalid_type');
	});
}

/** OpenAI's `output_compression`: a whole percentage, 0 to 100. */
const ignoredCompression = z.unknown().superRefine((value, ctx) => void wholeNumberIn(ctx, 'output_compression', value, 0, 100));

const OPENAI_SHAPE = {
	n: imageCountField,
	size: sizeField,
	quality: ignoredText('quality'),
	style: ignoredText('style'),
	user: ignoredText('user'),
	background: ignoredText('background'),
	moderation: ignoredText('moderation'),
	output_compression: ignoredCompression,
};

function schemaFor(spec: ModelSpec) {
	const accepts = (field: ModelSpecificField) => spec.fields.includes(field);
	return z
		.object({
			model: z.literal(spec.id),
			prompt: textField(spec.promptMaxLength, true),
			aspect_ratio: enumOf(aspectRatioChoices(spec)).default(spec.defaultAspectRatio),
			response_format: enumOf(RESPONSE_FORMATS).default(DEFAULTS.response_format),
			output_format: enumOf(spec.outputFormats).default(DEFAULTS.output_format),
			seed: seedField,
			webhook_url: webhookUrlField,
			...OPENAI_SHAPE,
			...(accepts('images') ? { images: imageInputs } : {}),
			...(accepts('negative_prompt') ? { negative_prompt: textField(PROMPT_MAX_LENGTH, false).optional() } : {}),
			...(accepts('style_type') ? { style_type: enumOf(STYLE_TYPES).default(DEFAULTS.style_type) } : {}),
			...(accepts('magic_prompt_option')
				? { magic_prompt_option: enumOf(MAGIC_PROMPT_OPTIONS).default(DEFAULTS.magic_prompt_option) }
				: {}),
		})
		.strict();
}

export const GENERATION_SCHEMAS = Object.fromEntries(
	MODEL_IDS.map((id) => [id, schemaFor(MODELS[id])]),
) as Record<ModelId, ReturnType<typeof schemaFor>>;

/**
 * Validates a generation request body and applies the defaults. Throws an ImageGenError (400)
 * whose `param` names the first offending field.
 */
export function parseGenerationRequest(body: unknown): GenerationRequest {
	const object = requireObject(body);
	if (!('model' in object) || object.model === undefined) {
		throw invalidField('model', `'model' is required: one of ${MODEL_IDS.join(', ')}`, 'missing_field');
	}
	if (!isModelId(object.model)) {
		throw invalidField(
			'model',
			`'model' must be one of ${MODEL_IDS.join(', ')}; got ${describeValue(object.model)}`,
		);
	}
	const model = object.model;
	rejectForeignFields(object, MODELS[model]);
	const result = GENERATION_SCHEMAS[model].safeParse(object);
	if (!result.success) throw issueToError(result.error.issues[0]!, object, model);
	const { size, ...parsed } = result.data;
	const request: Record<string, unknown> = parsed;
	for (const field of IGNORED_OPENAI_FIELDS) delete request[field];
	if (request.n === undefined) delete request.n;
	if (size !== undefined && object.aspect_ratio !== undefined && object.aspect_ratio !== null) {
		throw invalidField('size', "'size' and 'aspect_ratio' both say the image's shape: send only one of them", 'conflicting_fields');
	}
	// `auto` keeps the model's default (p-image-edit's match_input_image too).
	if (size !== undefined && size !== 'auto') request.aspect_ratio = nearestAspectRatio(size.width, size.height, MODELS[model].aspectRatios);
	return request as unknown as GenerationRequest;
}

function rejectForeignFields(object: Record<string, unknown>, spec: ModelSpec): void {
	for (const key of Object.keys(object)) {
		if (!KNOWN_FIELDS.has(key)) {
			throw invalidField(key, `Unknown field '${key}'`, 'unknown_field');
		}
		const field = key as ModelSpecificField;
		if ((MODEL_SPECIFIC_FIELDS as readonly string[]).includes(key) && !spec.fields.includes(field)) {
			throw invalidField(
				key,
				`'${key}' is not accepted by model '${spec.id}' (only by ${modelsAccepting(field).join(', ')})`,
				'field_not_supported',
			);
		}
	}
}

export const UPLOAD_OUTPUT_FORMATS = ['webp', 'png', 'jpg'] as const;
export type UploadOutputFormat = 'webp' | 'png' | 'jpeg';

/** Accepts `webp`, `png`, `jpg` and the alias `jpeg`; answers the canonical codec name. */
export function parseUploadOutputFormat(value: unknown, field = 'output_format'): UploadOutputFormat {
	if (typeof value !== 'string') {
		throw invalidField(field, `'${field}' must be a string: one of webp, png, jpg; got ${describeType(value)}`);
	}
	const normalized = value.trim().toLowerCase();
	if (normalized === 'jpg' || normalized === 'jpeg') return 'jpeg';
	if (normalized === 'webp' || normalized === 'png') return normalized;
	throw invalidField(field, `'${field}' must be one of webp, png, jpg; got ${describeValue(value)}`);
}

export interface UploadJsonRequest {
	/** The field that carried the file: with `file` the bytes alone decide whether it is an image or a video. */
	field: UploadJsonField;
	input: MediaInput;
	outputFormat?: UploadOutputFormat;
}

export type UploadJsonField = 'file' | 'image' | 'video';

const UPLOAD_MEDIA_FIELDS = ['file', 'image', 'video'] as const;
const UPLOAD_JSON_FIELDS = new Set<string>([...UPLOAD_MEDIA_FIELDS, 'output_format']);

/**
 * Validates a JSON upload body: exactly one of `file`, `image` or `video`; `output_format` only for
 * images (with `file`, the caller checks that once the bytes are known).
 */
export function parseUploadJson(body: unknown): UploadJsonRequest {
	const object = requireObject(body);
	for (const key of Object.keys(object)) {
		// The upload options are parsed by `parseUploadOptions`, which needs the server's retention.
		if (!UPLOAD_JSON_FIELDS.has(key) && !isUploadOptionField(key)) throw invalidField(key, `Unknown field '${key}'`, 'unknown_field');
	}
	const present = UPLOAD_MEDIA_FIELDS.filter((key) => object[key] !== undefined && object[key] !== null);
	if (present.length === 0) {
		throw invalidField(
			'file',
			"Give exactly one of 'file', 'image' or 'video' (a URL, a data URI or base64), or send a multipart 'file'",
			'missing_field',
		);
	}
	if (present.length > 1) {
		throw invalidField(present[1]!, `Give exactly one of 'file', 'image' or 'video', not ${present.map((key) => `'${key}'`).join(' and ')}`, 'conflicting_fields');
	}
	const field = present[0]!;
	const value = object[field];
	if (typeof value !== 'string') {
		throw invalidField(field, `'${field}' must be a string (a URL, a data URI or base64); got ${describeType(value)}`);
	}
	const outputFormat =
		object.output_format === undefined || object.output_format === null
			? undefined
			: parseUploadOutputFormat(object.output_format);
	if (outputFormat && field === 'video') throw outputFormatForVideo();
	return { field, input: parseMediaInput(value, field), outputFormat };
}

export function outputFormatForVideo(): ImageGenError {
	return invalidField('output_format', "'output_format' applies to images only; videos are stored as sent", 'field_not_supported');
}

function requireObject(body: unknown): Record<string, unknown> {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		throw new ImageGenError(400, `The request body must be a JSON object; got ${describeType(body)}`, {
			code: 'invalid_body',
		});
	}
	return body as Record<string, unknown>;
}

export function formatPath(path: ReadonlyArray<string | number>): string {
	return path.reduce<string>(
		(text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${part}` : part),
		'',
	);
}

function valueAt(object: unknown, path: ReadonlyArray<string | number>): unknown {
	return path.reduce<unknown>(
		(value, key) => (typeof value === 'object' && value !== null ? (value as Record<string | number, unknown>)[key] : undefined),
		object,
	);
}

function issueToError(issue: z.ZodIssue, input: unknown, model: ModelId): ImageGenError {
	const param = formatPath(issue.path) || null;
	const name = `'${param}'`;
	const received = valueAt(input, issue.path);
	switch (issue.code) {
		case z.ZodIssueCode.invalid_type:
			return issue.received === 'undefined'
				? invalidField(param ?? '', `${name} is required for model '${model}'`, 'missing_field')
				: invalidField(param ?? '', `${name} must be ${expectedText(issue.expected)}; got ${describeType(received)}`, 'invalid_type');
		case z.ZodIssueCode.invalid_enum_value: {
			// A model without input images has no input whose shape it could keep.
			const why = received === MATCH_INPUT_IMAGE ? ` (it keeps an input image's shape: only ${modelsAccepting('images').join(', ')} take images)` : '';
			return invalidField(
				param ?? '',
				`${name} must be one of ${issue.options.join(', ')} for model '${model}'; got ${describeValue(received)}${why}`,
			);
		}
		case z.ZodIssueCode.too_big:
			return invalidField(
				param ?? '',
				`${name} is too long: at most ${issue.maximum} characters; got ${typeof received === 'string' ? received.length : 'more'}`,
				'too_long',
			);
		case z.ZodIssueCode.invalid_union:
			if (received === undefined) {
				return invalidField(param ?? '', `${name} is required for model '${model}'`, 'missing_field');
			}
			return invalidField(
				param ?? '',
				`${name} must be a string or an array of strings (http(s) URLs, data URIs or base64); got ${describeType(received)}`,
				'invalid_type',
			);
		case z.ZodIssueCode.unrecognized_keys:
			return invalidField(issue.keys[0] ?? '', `Unknown field '${issue.keys[0]}'`, 'unknown_field');
		default:
			return issue.code === z.ZodIssueCode.custom && issue.params?.preformatted
				? invalidField(param ?? '', issue.message, issue.params.code)
				: invalidField(param ?? '', `${name} ${issue.message}`);
	}
}

function expectedText(expected: string): string {
	// zod describes an enum as `'a' | 'b'`: say it as a user reads it.
	return expected.includes('|') ? `a string: one of ${expected.replace(/'/g, '').split(' | ').join(', ')}` : `a ${expected}`;
}

export function describeType(value: unknown): string {
	if (value === null) return 'null';
	if (Array.isArray(value)) return 'an array';
	return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function describeValue(value: unknown): string {
	if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
	return describeType(value);
}
