/**
 * The video request (`POST /v1/videos`), read from JSON or from multipart fields (where every
 * value arrives as text, as the official SDKs send it): each field checked against the catalog
 * (video-models.ts), each refusal a 400 that names the field.
 *
 * OpenAI's shape and p-video's own fields both work: `seconds` (string or number), `size` (`WxH`,
 * read as the catalog ratio nearest to it and the resolution of its short side) or `aspect_ratio` +
 * `resolution`, `input_reference` (a URL, data URI or base64, or `{ image_url }`; a multipart file
 * part is turned into a data URI before it gets here) as p-video's `image`, the first frame.
 */
import { invalidField } from './errors';
import { parseMediaInput } from './media';
import { SEED_MAX, nearestAspectRatio, type AspectRatio } from './models';
import { describeType, parseWebhookUrl } from './schemas';
import {
	VIDEO_MODEL_IDS,
	VIDEO_MODELS,
	isVideoModelId,
	resolutionForSize,
	type VideoFps,
	type VideoModelId,
	type VideoModelSpec,
	type VideoResolution,
} from './video-models';

export interface VideoRequest {
	model: VideoModelId;
	prompt: string;
	/** Whole seconds of output; with `audio`, the host follows the audio's length instead. */
	seconds: number;
	aspect_ratio: AspectRatio;
	resolution: VideoResolution;
	fps: VideoFps;
	draft: boolean;
	prompt_upsampling: boolean;
	save_audio: boolean;
	seed?: number;
	/** The first frame: an http(s) URL, a data URI or base64. */
	image?: string;
	last_frame_image?: string;
	/** An audio track (flac, mp3, wav) by URL or data URI: the video follows its length. */
	audio?: string;
	webhook_url?: string;
}

const VIDEO_FIELDS = new Set([
	'model',
	'prompt',
	'seconds',
	'size',
	'aspect_ratio',
	'resolution',
	'fps',
	'draft',
	'prompt_upsampling',
	'save_audio',
	'seed',
	'input_reference',
	'image',
	'last_frame_image',
	'audio',
	'webhook_url',
]);

/** A string value (multipart) or the JSON value, as a whole number in range. */
function wholeNumber(field: string, value: unknown, min: number, max: number): number {
	const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
	if (typeof number === 'number' && Number.isInteger(number) && number >= min && number <= max) return number;
	const got = typeof value === 'number' || typeof value === 'string' ? `'${String(value)}'` : describeType(value);
	throw invalidField(field, `'${field}' must be a whole number from ${min} to ${max}; got ${got}`, typeof value === 'number' || typeof value === 'string' ? 'invalid_value' : 'invalid_type');
}

function flag(field: string, value: unknown, absent: boolean): boolean {
	if (value === undefined || value === null) return absent;
	if (typeof value === 'boolean') return value;
	if (value === 'true' || value === 'false') return value === 'true';
	throw invalidField(field, `'${field}' must be true or false; got ${typeof value === 'string' ? `'${value}'` : describeType(value)}`, 'invalid_type');
}

function oneOf<T extends string | number>(field: string, value: unknown, allowed: readonly T[], absent: T): T {
	if (value === undefined || value === null) return absent;
	const found = allowed.find((choice) => String(choice) === String(value).trim());
	if (found !== undefined && (typeof value === 'string' || typeof value === 'number')) return found;
	throw invalidField(field, `'${field}' must be one of ${allowed.join(', ')}; got ${typeof value === 'string' || typeof value === 'number' ? `'${String(value)}'` : describeType(value)}`);
}

function text(field: string, value: unknown, maxLength: number): string {
	if (typeof value !== 'string') throw invalidField(field, `'${field}' must be a string; got ${describeType(value)}`, 'invalid_type');
	if (value.trim().length === 0) throw invalidField(field, `'${field}' must not be empty or only white space`, 'empty_value');
	if (value.length > maxLength) throw invalidField(field, `'${field}' is too long: at most ${maxLength} characters; got ${value.length}`, 'too_long');
	return value;
}

/** A media input (URL, data URI, base64), checked for form here; fetched and sniffed by the server. */
function mediaInput(field: string, value: unknown): string | undefined {
	if (value === undefined || value === null) return undefined;
	if (typeof value !== 'string') throw invalidField(field, `'${field}' must be an http(s) URL, a data URI or base64; got ${describeType(value)}`, 'invalid_type');
	parseMediaInput(value, field);
	return value;
}

/** `input_reference` as OpenAI takes it: a string, or `{ image_url }` (the SDK's ImageInputReferenceParam). */
function inputReference(value: unknown): string | undefined {
	if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
		const { image_url: url, file_id: fileId, ...rest } = value as Record<string, unknown>;
		if (fileId !== undefined) throw invalidField('input_reference.file_id', "'input_reference.file_id' is not supported: send the image itself, or its URL as input_reference.image_url", 'unsupported_value');
		const extra = Object.keys(rest)[0];
		if (extra !== undefined) throw invalidField(`input_reference.${extra}`, `'input_reference.${extra}' is not a field of input_reference (it takes image_url)`, 'unknown_field');
		return mediaInput('input_reference.image_url', url);
	}
	return mediaInput('input_reference', value);
}

/** The frame's ratio and resolution: from `size`, or `aspect_ratio` and `resolution`, or the defaults. */
function frameShape(body: Record<string, unknown>, spec: VideoModelSpec): { aspect_ratio: AspectRatio; resolution: VideoResolution } {
	if (body.size !== undefined && body.size !== null) {
		const clash = ['aspect_ratio', 'resolution'].find((field) => body[field] !== undefined && body[field] !== null);
		if (clash) throw invalidField('size', `'size' and '${clash}' say the same thing: give size, or aspect_ratio and resolution`, 'conflicting_fields');
		const match = typeof body.size === 'string' ? /^([1-9]\d{0,4})x([1-9]\d{0,4})$/.exec(body.size) : null;
		if (!match) throw invalidField('size', `'size' must be <width>x<height> in whole pixels (e.g. 1280x720); got ${typeof body.size === 'string' ? `'${body.size}'` : describeType(body.size)}`);
		const [width, height] = [Number(match[1]), Number(match[2])];
		return { aspect_ratio: nearestAspectRatio(width, height, spec.aspectRatios), resolution: resolutionForSize(width, height) };
	}
	return {
		aspect_ratio: oneOf('aspect_ratio', body.aspect_ratio, spec.aspectRatios, spec.defaultAspectRatio),
		resolution: oneOf('resolution', body.resolution, spec.resolutions, spec.defaultResolution),
	};
}

/** Checks a video request; throws a 400 naming the first field that is wrong. */
export function parseVideoRequest(body: unknown): VideoRequest {
	if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidField('body', `the request body must be a JSON object or multipart form; got ${describeType(body)}`, 'invalid_type');
	const fields = body as Record<string, unknown>;
	const unknown = Object.keys(fields).find((field) => !VIDEO_FIELDS.has(field));
	if (unknown !== undefined) throw invalidField(unknown, `'${unknown}' is not a field of a video request (known: ${[...VIDEO_FIELDS].join(', ')})`, 'unknown_field');
	const model = fields.model ?? VIDEO_MODEL_IDS[0];
	if (!isVideoModelId(model)) throw invalidField('model', `'model' must be one of ${VIDEO_MODEL_IDS.join(', ')} for a video; got ${typeof model === 'string' ? `'${model}'` : describeType(model)}`, 'model_not_found');
	const spec = VIDEO_MODELS[model];
	if (fields.prompt === undefined) throw invalidField('prompt', "'prompt' is required", 'missing_field');
	if (fields.input_reference !== undefined && fields.image !== undefined) throw invalidField('input_reference', "'input_reference' and 'image' are both the first frame: give one", 'conflicting_fields');
	const image = fields.image !== undefined ? mediaInput('image', fields.image) : inputReference(fields.input_reference);
	const lastFrame = mediaInput('last_frame_image', fields.last_frame_image);
	const audio = mediaInput('audio', fields.audio);
	const seed = fields.seed === undefined || fields.seed === null || fields.seed === '' ? undefined : wholeNumber('seed', fields.seed, 0, SEED_MAX);
	const webhookUrl = parseWebhookUrl(fields.webhook_url);
	return {
		model,
		prompt: text('prompt', fields.prompt, spec.promptMaxLength),
		seconds: fields.seconds === undefined || fields.seconds === null ? spec.defaultSeconds : wholeNumber('seconds', fields.seconds, spec.minSeconds, spec.maxSeconds),
		...frameShape(fields, spec),
		fps: oneOf('fps', fields.fps, spec.fps, spec.defaultFps),
		draft: flag('draft', fields.draft, false),
		prompt_upsampling: flag('prompt_upsampling', fields.prompt_upsampling, true),
		save_audio: flag('save_audio', fields.save_audio, true),
		...(seed === undefined ? {} : { seed }),
		...(image === undefined ? {} : { image }),
		...(lastFrame === undefined ? {} : { last_frame_image: lastFrame }),
		...(audio === undefined ? {} : { audio }),
		...(webhookUrl === undefined ? {} : { webhook_url: webhookUrl }),
	};
}

