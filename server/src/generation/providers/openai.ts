/**
 * `openai`: any OpenAI-compatible images API (OpenAI's gpt-image-1, LocalAI, another gateway).
 * Shapes from OpenAI's API reference, "Images": `POST {base}/images/generations` with
 * `{ model, prompt, n, size }` and `POST {base}/images/edits` (multipart: `model`, `prompt`, `n`,
 * `size` and the input images as `image[]`, or one `image` for dall-e-2), both answered
 * `{ created, data: [{ b64_json | url }] }`. The gpt-image models always answer `b64_json` and
 * refuse `response_format`; dall-e models answer a `url` unless `response_format: "b64_json"`, which
 * is sent to every other model (a URL answer is still read, and fetched through the address check).
 * Refusals are `{ error: { message, type, param, code } }`; a 400 whose code is
 * `moderation_blocked` (gpt-image) or `content_policy_violation` (dall-e) is a content filter.
 * A host takes a list of sizes, not ratios: the one nearest the asked ratio is sent and the answer
 * is brought to the exact ratio afterwards, as for every host (normalize-output.ts). A generation is
 * one synchronous call: there is no job to name, follow or cancel; leaving closes the connection.
 */
import { FormData } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { sniffMedia } from '../../../../core/media';
import type { ModelId, ModelLimits } from '../../../../core/models';
import { nearestSize, type ImageSize } from '../../../../core/openai-images';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationContext, GenerationProvider, ProviderImage, SettledRequest } from '../provider';
import { hostCredentials, type HostCredentials } from './host-credentials';
import { loadInputImages } from './inputs';
import { base64Bytes } from './image-json';
import { providerImageJson, providerRetryPolicy, type HostRetryPolicy, type ProviderTiming } from './provider-http';

/** OpenAI itself (the default of --openai-base-url), which always wants a key. */
const OPENAI_ORIGIN = 'https://api.openai.com';
/** Refusal codes of OpenAI's content checks: gpt-image's `moderation_blocked`, dall-e's `content_policy_violation`. */
const CONTENT_FILTER_CODES = new Set(['moderation_blocked', 'content_policy_violation']);

/** gpt-image models answer base64 only and refuse `response_format` (OpenAI's images reference). */
const isGptImage = (model: string) => model.startsWith('gpt-image');

/**
 * gpt-image-1 edits take up to 16 input images; dall-e-2 (and hosts that copy its form) one
 * (OpenAI's images reference, "Create image edit").
 */
function openaiLimits(model: ModelId, hostModel: string): ModelLimits | undefined {
	return model === 'p-image-edit' ? { maxInputImages: isGptImage(hostModel) ? 16 : 1 } : undefined;
}

interface OpenAiImages {
	data?: Array<{ b64_json?: unknown; url?: unknown }>;
}

interface OpenAiSettings {
	root: string;
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
		model: configured.imageModel,
		sizes: configured.imageSizes,
		negativePrompt: configured.negativePrompt,
		...(apiKey ? { credentials: hostCredentials(root, { authorization: `Bearer ${apiKey}` }) } : {}),
		retry: providerRetryPolicy(timing),
	};
	return {
		name: 'openai',
		limits: openaiLimits(model, settings.model),
		generate: async (request, context) => await generateImage(settings, request, context),
	};
}

async function generateImage(settings: OpenAiSettings, request: SettledRequest, context: GenerationContext): Promise<ProviderImage[]> {
	const { width, height } = nearestSize(settings.sizes, request.aspect_ratio);
	const fields: Record<string, string | number> = {
		model: settings.model,
		prompt: request.prompt,
		n: 1,
		size: `${width}x${height}`,
		...(isGptImage(settings.model) ? {} : { response_format: 'b64_json' }),
		...(settings.negativePrompt && request.negative_prompt ? { negative_prompt: request.negative_prompt } : {}),
	};
	const edit = request.model === 'p-image-edit';
	const body = edit ? { form: await editForm(fields, await loadInputImages(request, context), isGptImage(settings.model)) } : { json: fields };
	const answer = await providerImageJson<OpenAiImages>({
		provider: 'openai',
		method: 'POST',
		url: `${settings.root}/images/${edit ? 'edits' : 'generations'}`,
		...(settings.credentials ? { credentials: settings.credentials } : {}),
		...body,
		signal: context.signal,
		deadline: context.deadline,
		codeOfRefusal: (status, text) => (status === 400 && CONTENT_FILTER_CODES.has(errorCode(text) ?? '') ? 'upstream_content_filtered' : undefined),
		submit: true,
		retry: settings.retry,
	});
	return [imageOf(answer)];
}

/** The multipart form of an edit: the fields, then each input image as `image[]` (gpt-image) or `image`. */
async function editForm(fields: Record<string, string | number>, images: Buffer[], manyImages: boolean): Promise<FormData> {
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

/** `error.code` of OpenAI's refusal shape, when the body has one. */
function errorCode(text: string): string | undefined {
	try {
		const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
		return typeof code === 'string' ? code : undefined;
	} catch {
		return undefined;
	}
}
