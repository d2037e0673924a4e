/**
 * `openai`: any OpenAI-compatible images API (OpenAI's gpt-image-1 and dall-e, a gateway, LocalAI).
 * Shapes from OpenAI's API reference, "Images": `POST {base}/images/generations` with
 * `{ model, prompt, n, size }` and `POST {base}/images/edits` (multipart: `model`, `prompt`, `n`,
 * `size` and the input images as `image[]`, or one `image` for dall-e-2), both answered
 * `{ created, data: [{ b64_json | url }] }`. The gpt-image models always answer `b64_json` and
 * refuse `response_format`; dall-e models answer a `url` unless `response_format: "b64_json"`, which
 * is sent to every other model (a URL answer is still read, and fetched through the address check).
 * A gateway's model name (`openai/gpt-image-1`) is read by its last segment (core/openai-images.ts).
 * Refusals are `{ error: { message, type, param, code } }`; a 400 whose code is
 * `moderation_blocked` (gpt-image) or `content_policy_violation` (dall-e) is a content filter, and a
 * 429 `insufficient_quota` is an account without credit, not a rate limit. An edit's inputs other
 * than PNG, JPEG and WebP (the edit reference's types) are converted to PNG first.
 * `OPENAI_SERVER=localai` speaks LocalAI's version of the API instead (openai-localai.ts).
 * A host takes a list of sizes, not ratios: the one nearest the asked ratio is sent and the answer
 * is brought to the exact ratio afterwards, as for every host (normalize-output.ts). A generation is
 * one synchronous call: there is no job to name, follow or cancel; leaving closes the connection.
 */
import { FormData } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { sniffMedia } from '../../../../core/media';
import type { ModelId, ModelLimits } from '../../../../core/models';
import { isGptImageModel, nearestSize, openAiImageSizes, openAiPromptMaxLength, type ImageSize } from '../../../../core/openai-images';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationContext, GenerationProvider, ProviderImage, SettledRequest } from '../provider';
import { hostCredentials, type HostCredentials } from './host-credentials';
import { base64Bytes } from './image-json';
import { openAiInputImages } from './openai-inputs';
import { localAiBody } from './openai-localai';
import { NothingMadeError, providerImageJson, providerRetryPolicy, type HostRetryPolicy, type ProviderTiming } from './provider-http';

/** OpenAI itself (the default of --openai-base-url), which always wants a key. */
const OPENAI_ORIGIN = 'https://api.openai.com';
/** Refusal codes of OpenAI's content checks: gpt-image's `moderation_blocked`, dall-e's `content_policy_violation`. */
const CONTENT_FILTER_CODES = new Set(['moderation_blocked', 'content_policy_violation']);
/** OpenAI's 429 for an account without credit ("You exceeded your current quota"), its `code` and `type` alike. */
const NO_QUOTA = 'insufficient_quota';
/** What a host without `/images/edits` answers it: 404 (LocalAI's router, most gateways) or 405. */
const NO_EDITS_STATUSES = new Set([404, 405]);

/**
 * What the host takes for this model: gpt-image-1 edits take up to 16 input images, dall-e-2 and
 * LocalAI one (OpenAI's images reference, "Create image edit"; LocalAI's ImageEndpoint reads one
 * `file`); the prompt lengths OpenAI documents per model (dall-e-2 1000, dall-e-3 4000, gpt-image
 * 32000 characters).
 */
function openaiLimits(model: ModelId, settings: OpenAiSettings): ModelLimits | undefined {
	const promptMaxLength = openAiPromptMaxLength(settings.model);
	const manyImages = settings.server === 'openai' && isGptImageModel(settings.model);
	const limits: ModelLimits = {
		...(model === 'p-image-edit' ? { maxInputImages: manyImages ? 16 : 1 } : {}),
		...(promptMaxLength === undefined ? {} : { promptMaxLength }),
	};
	return Object.keys(limits).length > 0 ? limits : undefined;
}

interface OpenAiImages {
	data?: Array<{ b64_json?: unknown; url?: unknown }>;
}

export interface OpenAiSettings {
	root: string;
	server: ProviderSettings['openai']['server'];
	model: string;
	sizes: ImageSize[];
	negativePrompt: boolean;
	credentials?: HostCredentials;
	retry: HostRetryPolicy;
}

export function openaiProvider(model: ModelId, configured: ProviderSettings['openai'], timing: ProviderTiming): GenerationProvider {
	const root = configured.baseUrl;
	const apiKey = configured.apiKey;
	// LocalAI and many gateways on a private network take no key; OpenAI itself always does.
	if (!apiKey && new URL(root).origin === OPENAI_ORIGIN) throw new Error(`providers: ${model}=openai needs OPENAI_API_KEY`);
	const settings: OpenAiSettings = {
		root,
		server: configured.server,
		model: configured.imageModel,
		// Each OpenAI model takes its own sizes (dall-e-3's 1792x1024, not gpt-image's 1536x1024).
		sizes: configured.imageSizes ?? openAiImageSizes(configured.imageModel),
		negativePrompt: configured.negativePrompt,
		...(apiKey ? { credentials: hostCredentials(root, { authorization: `Bearer ${apiKey}` }) } : {}),
		retry: providerRetryPolicy(timing),
	};
	return {
		name: 'openai',
		limits: openaiLimits(model, settings),
		generate: async (request, context) => await generateImage(settings, request, context),
	};
}

async function generateImage(settings: OpenAiSettings, request: SettledRequest, context: GenerationContext): Promise<ProviderImage[]> {
	const edit = request.model === 'p-image-edit';
	const images = edit ? await openAiInputImages(request, context) : [];
	const { width, height } = nearestSize(settings.sizes, request.aspect_ratio);
	const size = `${width}x${height}`;
	const localAi = settings.server === 'localai';
	const body = localAi ? { json: localAiBody(settings.model, size, request, images[0]) } : await openAiBody(settings, size, request, images);
	const route = edit && !localAi ? 'edits' : 'generations';
	try {
		const answer = await providerImageJson<OpenAiImages>({
			provider: 'openai',
			method: 'POST',
			url: `${settings.root}/images/${route}`,
			...(settings.credentials ? { credentials: settings.credentials } : {}),
			...body,
			signal: context.signal,
			deadline: context.deadline,
			codeOfRefusal: (status, text) => refusalCode(status, text, route),
			submit: true,
			retry: settings.retry,
		});
		return [imageOf(answer)];
	} catch (error) {
		throw error instanceof ImageGenError && error.code === 'upstream_cannot_edit' ? cannotEdit(error) : error;
	}
}

/** OpenAI's request: JSON for a generation, multipart for an edit. */
async function openAiBody(settings: OpenAiSettings, size: string, request: SettledRequest, images: Buffer[]): Promise<{ json: Record<string, string | number> } | { form: FormData }> {
	const gptImage = isGptImageModel(settings.model);
	const fields: Record<string, string | number> = {
		model: settings.model,
		prompt: request.prompt,
		n: 1,
		size,
		...(gptImage ? {} : { response_format: 'b64_json' }),
		...(settings.negativePrompt && request.negative_prompt ? { negative_prompt: request.negative_prompt } : {}),
	};
	return images.length > 0 ? { form: editForm(fields, images, gptImage) } : { json: fields };
}

/** Our code for a refusal whose meaning is in OpenAI's body, or in a missing edits route. */
function refusalCode(status: number, text: string, route: 'edits' | 'generations'): string | undefined {
	const { code, type } = errorOf(text);
	if (status === 400 && CONTENT_FILTER_CODES.has(code ?? '')) return 'upstream_content_filtered';
	if (status === 429 && (code === NO_QUOTA || type === NO_QUOTA)) return 'upstream_quota_exhausted';
	if (route === 'edits' && NO_EDITS_STATUSES.has(status)) return 'upstream_cannot_edit';
	return undefined;
}

/**
 * A host without `/images/edits` (LocalAI, many gateways) cannot run p-image-edit as OpenAI's API
 * does it: said so, naming `images`. Nothing was made, so a fallback chain may try its next host.
 */
function cannotEdit(error: ImageGenError): ImageGenError {
	const message =
		`The openai provider's host cannot edit images: it has no POST /images/edits (${error.message}). ` +
		'For LocalAI, set OPENAI_SERVER=localai (it edits through /images/generations); otherwise send p-image-edit to another provider.';
	return new NothingMadeError('openai', new ImageGenError(502, message, { code: 'upstream_cannot_edit', param: 'images' }));
}

/** The multipart form of an edit: the fields, then each input image as `image[]` (gpt-image) or `image`. */
function editForm(fields: Record<string, string | number>, images: Buffer[], manyImages: boolean): FormData {
	const form = new FormData();
	for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
	images.forEach((bytes, index) => {
		const type = sniffMedia(bytes)?.mimeType ?? 'application/octet-stream';
		form.append(manyImages ? 'image[]' : 'image', new Blob([bytes], { type }), `input-${index}.${type.split('/')[1] ?? 'bin'}`);
	});
	return form;
}

function imageOf(answer: OpenAiImages): ProviderImage {
	const first = Array.isArray(answer.data) ? answer.data[0] : undefined;
	const bytes = base64Bytes(first?.b64_json);
	if (bytes) return ImageBytes.owned(bytes);
	if (typeof first?.url === 'string' && first.url) return { url: first.url };
	const why = first ? 'an entry with neither b64_json nor url' : 'an empty data list';
	throw new ImageGenError(502, `The openai provider returned no image: its answer had ${why}`, { code: 'upstream_no_output' });
}

/** `error.code` and `error.type` of OpenAI's refusal shape, when the body has them. */
function errorOf(text: string): { code?: string; type?: string } {
	try {
		const error = (JSON.parse(text) as { error?: { code?: unknown; type?: unknown } }).error;
		return { ...(typeof error?.code === 'string' ? { code: error.code } : {}), ...(typeof error?.type === 'string' ? { type: error.type } : {}) };
	} catch {
		return {};
	}
}
