/**
 * `automatic1111`: Stable Diffusion WebUI (AUTOMATIC1111, and Forge, which keeps its API), started
 * with `--api`. Shapes from its API models (modules/api/models.py, api.py): `POST
 * {base}/sdapi/v1/txt2img` with `{ prompt, negative_prompt, seed, width, height, steps, … }` and, for
 * p-image-edit, `POST {base}/sdapi/v1/img2img` with `init_images: [base64]` besides; both answer
 * `{ images: [base64 PNG], parameters, info }`. Its refusals are FastAPI's 422 `{ detail: [{ loc,
 * msg, type }] }` and, for a failure while drawing, a 500 `{ error, detail, body, errors }`.
 * A generation is one synchronous call, so there is no job id to resume. WebUI draws inside
 * `with self.queue_lock` (api.py text2imgapi, img2imgapi), one request at a time, and its
 * `POST /sdapi/v1/interrupt` (`shared.state.interrupt()`) names no task: it stops whatever is
 * drawing, which then answers 200 with a half-drawn image. So this process sends one call at a
 * time per WebUI (host-lane.ts), and a caller that leaves is either dropped from our line unsent or,
 * when its call is at the WebUI, interrupted only once WebUI says that call is the one drawing
 * (see `interruptIfDrawing`).
 * With `--api-auth user:password`, `A1111_API_AUTH` carries the same pair as HTTP Basic, only to
 * the configured origin.
 */
import { randomUUID } from 'node:crypto';
import { ImageGenError } from '../../../../core/errors';
import type { AspectRatio, ModelId, ModelLimits } from '../../../../core/models';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationContext, GenerationProvider, ProviderImage, SettledRequest } from '../provider';
import { hostCredentials, type HostCredentials } from './host-credentials';
import { laneOf } from './host-lane';
import { requiredSetting } from './inputs';
import { base64Bytes } from './image-json';
import { Base64Text } from './json-body';
import { setTimeout as sleep } from 'node:timers/promises';
import { pollIntervalMs, postOnce, providerImageJson, providerJson, providerRetryPolicy, type HostRetryPolicy, type ProviderTiming } from './provider-http';

/**
 * About one megapixel: the size SDXL and Flux checkpoints were trained at (1024×1024), and what
 * WebUI's own SDXL presets use; SD 1.5 checkpoints draw at 512×512 and may repeat subjects at this size.
 */
const TARGET_PIXELS = 1024 * 1024;
/** Stable Diffusion works in a latent space 8 times smaller than the image: width and height must be multiples of 8. */
const LATENT_SCALE = 8;

/**
 * Steps when A1111_STEPS is unset: the default of WebUI's own txt2img and img2img forms. Its API
 * models leave `steps` to StableDiffusionProcessing, whose default is 50: two and a half times the
 * work for the picture a person gets from the UI.
 */
const UI_DEFAULT_STEPS = 20;

/**
 * img2img's "Crop and resize" (StableDiffusionProcessingImg2Img `resize_mode`, images.resize_image:
 * 0 just resize, 1 crop and resize, 2 resize and fill, 3 latent upscale): the input is scaled to
 * cover width × height and its overflow cut, so the output keeps the asked ratio without
 * stretching the input, as the other hosts' p-image-edit does.
 */
const CROP_AND_RESIZE = 1;

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
	/** The pause between two looks at a task of ours still queued behind someone else's drawing. */
	pollMs: number;
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
		pollMs: pollIntervalMs(timing),
	};
	return {
		name: 'automatic1111',
		...(model === 'p-image-edit' ? { limits: A1111_LIMITS } : {}),
		generate: async (request, context) => await draw(settings, request, context),
	};
}

async function draw(settings: A1111Settings, request: SettledRequest, context: GenerationContext): Promise<ProviderImage[]> {
	const edit = request.model === 'p-image-edit';
	const payload = await payloadFor(settings, request, context);
	const endTurn = await laneOf(settings.root).enter(context.signal);
	let stopping: Promise<void> | undefined;
	const stopDrawing = () => void (stopping = interruptIfDrawing(settings, payload.force_task_id));
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
			refusalMessage: validationRefusal,
		});
		const bytes = base64Bytes(Array.isArray(answer.images) ? answer.images[0] : undefined);
		if (!bytes) throw new ImageGenError(502, 'The automatic1111 provider returned no image: its answer had an empty images list', { code: 'upstream_no_output' });
		return [ImageBytes.owned(bytes)];
	} finally {
		context.signal.removeEventListener('abort', stopDrawing);
		// The next call goes only once WebUI has been told to stop this one: an interrupt arriving
		// after the next drawing began would stop that one instead.
		void (stopping ?? Promise.resolve()).finally(endTurn);
	}
}

interface A1111Payload extends Record<string, unknown> {
	force_task_id: string;
}

async function payloadFor(settings: A1111Settings, request: SettledRequest, context: GenerationContext): Promise<A1111Payload> {
	const payload: A1111Payload = {
		prompt: request.prompt,
		negative_prompt: request.negative_prompt ?? '',
		// -1 is WebUI's "draw a seed".
		seed: request.seed ?? -1,
		...sizeForRatio(request.aspect_ratio),
		steps: settings.steps ?? UI_DEFAULT_STEPS,
		batch_size: 1,
		n_iter: 1,
		// The API keeps no copy in WebUI's outputs folder: the image is ours to host.
		save_images: false,
		// WebUI 1.6 and later name the task by it (api.py), so /internal/progress can say whether it is the one drawing.
		force_task_id: `imagegen-${randomUUID()}`,
	};
	if (request.model === 'p-image-edit') Object.assign(payload, { init_images: [new Base64Text(await context.loadInputImage(0))], resize_mode: CROP_AND_RESIZE });
	return payload;
}

/** Where our task is at the WebUI (modules/progress.py, `POST /internal/progress`). */
interface TaskProgress {
	active?: unknown;
	queued?: unknown;
	completed?: unknown;
}

/**
 * How long a task of ours, queued at the WebUI behind someone else's drawing, is watched so that it
 * can be stopped as it starts; our lane stays closed meanwhile, as the WebUI is busy anyway.
 */
const QUEUED_WATCH_MS = 10 * 60_000;

/**
 * Our lane keeps every other call of this process away from the WebUI, but other clients (its own
 * UI, another program) may share it, and the interrupt stops whatever draws. So WebUI is asked
 * first where our task is: drawing, it is interrupted; finished, nothing is sent; still queued
 * behind someone else's drawing (WebUI cannot take a request out of its queue), it is watched and
 * interrupted once it starts, so the other image is drawn whole and ours stops at its first step.
 * A WebUI that does not know the task (older than 1.6, which ignores `force_task_id`) or does not
 * answer is interrupted at once, as then only our lane guards the drawing. Best effort: 5 s per call.
 */
async function interruptIfDrawing(settings: A1111Settings, taskId: string): Promise<void> {
	const watchEnds = Date.now() + QUEUED_WATCH_MS;
	for (let watching = false; ; watching = true) {
		const progress = await taskProgress(settings, taskId);
		if (progress?.active === true) break;
		if (progress?.completed === true) return;
		// Once seen queued, a look that fails proves nothing: interrupting then could stop the other image.
		if (progress?.queued !== true && !watching) break;
		if (Date.now() >= watchEnds) return;
		await sleep(settings.pollMs);
	}
	await postOnce({ provider: 'automatic1111', url: `${settings.root}/sdapi/v1/interrupt`, credentials: settings.credentials }, AbortSignal.timeout(5_000));
}

async function taskProgress(settings: A1111Settings, taskId: string): Promise<TaskProgress | undefined> {
	return await providerJson<TaskProgress>({
		provider: 'automatic1111',
		method: 'POST',
		url: `${settings.root}/internal/progress`,
		...(settings.credentials ? { credentials: settings.credentials } : {}),
		json: { id_task: taskId, id_live_preview: -1 },
		signal: AbortSignal.timeout(5_000),
		retry: { ...settings.retry, maxRetries: 0 },
	}).catch(() => undefined);
}

/**
 * FastAPI's 422 names each refused field in `detail[].loc` (`["body", "width"]`): kept in our
 * message, so a WebUI whose version types a field otherwise says which.
 */
function validationRefusal(text: string): string | undefined {
	let body: { detail?: unknown };
	try {
		body = JSON.parse(text) as { detail?: unknown };
	} catch {
		return undefined;
	}
	if (!Array.isArray(body.detail)) return undefined;
	const refusals = body.detail.filter((entry): entry is { loc: unknown[]; msg: unknown } => Array.isArray(entry?.loc) && typeof entry?.msg === 'string');
	if (refusals.length === 0) return undefined;
	return refusals.map(({ loc, msg }) => `${fieldPath(loc)}: ${String(msg)}`).join('; ');
}

/** `["body", "init_images", 0]` → `init_images[0]`. */
function fieldPath(loc: unknown[]): string {
	const path = loc[0] === 'body' ? loc.slice(1) : loc;
	return path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${String(part)}` : String(part)), '');
}
