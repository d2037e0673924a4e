/**
 * `automatic1111`: Stable Diffusion WebUI (AUTOMATIC1111, and Forge, which keeps its API), started
 * with `--api`. Shapes from its API models (modules/api/models.py, api.py): `POST
 * {base}/sdapi/v1/txt2img` with `{ prompt, negative_prompt, seed, width, height, steps, … }` and, for
 * p-image-edit, `POST {base}/sdapi/v1/img2img` with `init_images: [base64]` besides; both answer
 * `{ images: [base64 PNG], parameters, info }`. Its refusals are FastAPI's 422 `{ detail: [{ loc,
 * msg, type }] }` and, for a failure while drawing, a 500 `{ error, detail, body, errors }`.
 * A generation is one synchronous call, so there is no job id; when our client leaves or the time
 * limit passes, `POST /sdapi/v1/interrupt` stops the drawing (see `interrupt`).
 * With `--api-auth user:password`, `A1111_API_AUTH` carries the same pair as HTTP Basic, only to
 * the configured origin.
 */
import { ImageGenError } from '../../../../core/errors';
import type { AspectRatio, ModelId, ModelLimits } from '../../../../core/models';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationContext, GenerationProvider, ProviderImage, SettledRequest } from '../provider';
import { hostCredentials, type HostCredentials } from './host-credentials';
import { requiredSetting } from './inputs';
import { base64Bytes } from './image-json';
import { Base64Text } from './json-body';
import { postOnce, providerImageJson, providerRetryPolicy, type HostRetryPolicy, type ProviderTiming } from './provider-http';

/**
 * About one megapixel: the size SDXL and Flux checkpoints were trained at (1024×1024), and what
 * WebUI's own SDXL presets use; SD 1.5 checkpoints draw at 512×512 and may repeat subjects at this size.
 */
const TARGET_PIXELS = 1024 * 1024;
/** Stable Diffusion works in a latent space 8 times smaller than the image: width and height must be multiples of 8. */
const LATENT_SCALE = 8;

/** img2img draws from one init image here: WebUI uses the others only for batches of several images. */
const A1111_LIMITS: ModelLimits = { maxInputImages: 1 };

/** Width and height of about one megapixel at the ratio, each a multiple of 8. */
export function sizeForRatio(ratio: AspectRatio): { width: number; height: number } {
	const [w, h] = ratio.split(':').map(Number) as [number, number];
	const width = Math.sqrt((TARGET_PIXELS * w) / h);
	const toLatent = (side: number) => Math.max(LATENT_SCALE, Math.round(side / LATENT_SCALE) * LATENT_SCALE);
	return { width: toLatent(width), height: toLatent((width * h) / w) };
}

interface A1111Settings {
	root: string;
	steps?: number;
	credentials?: HostCredentials;
	retry: HostRetryPolicy;
}

interface A1111Answer {
	images?: unknown;
}

export function automatic1111Provider(model: ModelId, configured: ProviderSettings['automatic1111'], timing: ProviderTiming): GenerationProvider {
	const root = requiredSetting(configured.baseUrl, 'A1111_BASE_URL (--a1111-base-url)', 'automatic1111', model);
	const { steps, apiAuth: auth } = configured;
	const settings: A1111Settings = {
		root,
		...(steps === undefined ? {} : { steps }),
		...(auth ? { credentials: hostCredentials(root, { authorization: `Basic ${Buffer.from(auth).toString('base64')}` }) } : {}),
		retry: providerRetryPolicy(timing),
	};
	return {
		name: 'automatic1111',
		...(model === 'p-image-edit' ? { limits: A1111_LIMITS } : {}),
		generate: async (request, context) => await draw(settings, request, context),
	};
}

async function draw(settings: A1111Settings, request: SettledRequest, context: GenerationContext): Promise<ProviderImage[]> {
	const payload: Record<string, unknown> = {
		prompt: request.prompt,
		negative_prompt: request.negative_prompt ?? '',
		// -1 is WebUI's "draw a seed".
		seed: request.seed ?? -1,
		...sizeForRatio(request.aspect_ratio),
		...(settings.steps === undefined ? {} : { steps: settings.steps }),
		batch_size: 1,
		n_iter: 1,
		// The API keeps no copy in WebUI's outputs folder: the image is ours to host.
		save_images: false,
	};
	const edit = request.model === 'p-image-edit';
	if (edit) payload.init_images = [new Base64Text(await context.loadInputImage(0))];
	const stopDrawing = () => void interrupt(settings);
	context.signal.addEventListener('abort', stopDrawing, { once: true });
	try {
		const answer = await providerImageJson<A1111Answer>({
			provider: 'automatic1111',
			method: 'POST',
			url: `${settings.root}/sdapi/v1/${edit ? 'img2img' : 'txt2img'}`,
			...(settings.credentials ? { credentials: settings.credentials } : {}),
			json: payload,
			signal: context.signal,
			deadline: context.deadline,
			submit: true,
			retry: settings.retry,
		});
		const bytes = base64Bytes(Array.isArray(answer.images) ? answer.images[0] : undefined);
		if (!bytes) throw new ImageGenError(502, 'The automatic1111 provider returned no image: its answer had an empty images list', { code: 'upstream_no_output' });
		return [ImageBytes.owned(bytes)];
	} finally {
		context.signal.removeEventListener('abort', stopDrawing);
	}
}

/**
 * Best effort, 5 s at most. WebUI draws one job at a time and its interrupt names no job: it stops
 * whatever is drawing now. Our request still waiting in WebUI's queue behind another client's would
 * stop that client's image instead, so this provider suits a WebUI the service has to itself.
 */
async function interrupt(settings: A1111Settings): Promise<void> {
	await postOnce({ provider: 'automatic1111', url: `${settings.root}/sdapi/v1/interrupt`, credentials: settings.credentials });
}
