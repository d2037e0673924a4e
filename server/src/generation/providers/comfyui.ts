/**
 * `comfyui`: a ComfyUI server someone runs (COMFYUI_BASE_URL), one workflow file per model in
 * ComfyUI's API format (`--comfyui-workflow p-image=./flux.json`, comfyui-workflow.ts).
 * Shapes from ComfyUI's server (server.py, execution.py): `POST /prompt` `{ prompt, client_id }`
 * answers `{ prompt_id, number, node_errors }`, or 400 `{ error: { type, message, details },
 * node_errors: { <node id>: { class_type, errors: [{ message, details }] } } }` when validation
 * fails; `GET /history/<prompt_id>` is `{}` until the prompt ended, then `{ <prompt_id>: { outputs:
 * { <node id>: { images: [{ filename, subfolder, type }] } }, status: { status_str: success|error,
 * messages: [[event, data], …] } } }` (an `execution_error` message carries the node and the
 * exception); `GET /view?filename=&subfolder=&type=` serves an image; `POST /upload/image`
 * (multipart `image`, `overwrite`) answers `{ name, subfolder, type }`; `GET /queue` lists
 * `queue_running` and `queue_pending` as `[number, prompt_id, …]`; `POST /queue { delete: [id] }`
 * drops a waiting prompt and `POST /interrupt` stops the one running.
 * The prompt id is told to `hostJobStarted` before the first poll, so a restart follows the same
 * prompt (`resume`) instead of queueing it again. ComfyUI has no authentication of its own and no
 * way to delete an uploaded input, so inputs get unique names and stay in its input folder.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { FormData } from 'undici';
import { ImageGenError, invalidField } from '../../../../core/errors';
import { sniffMedia } from '../../../../core/media';
import { SEED_MAX, type AspectRatio, type ModelId } from '../../../../core/models';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationContext, GenerationProvider, HostJobRef, ProviderImage, SettledRequest } from '../provider';
import { hostJobUnwanted } from '../provider';
import { bindComfyWorkflow, loadComfyWorkflow, type ComfyWorkflow } from './comfyui-workflow';
import { hostCredentials } from './host-credentials';
import { boundedHostText } from './host-text';
import { loadInputImages, requiredSetting } from './inputs';
import { hostMessage, pollIntervalMs, postOnce, providerBytes, providerJson, providerRetryPolicy, type ProviderRequest, type ProviderTiming } from './provider-http';

/**
 * Width and height sent for an aspect ratio: about one megapixel, each side a multiple of 64.
 * SDXL was trained on sizes of that kind (1024×1024, 1152×896, 1344×768, …) and draws badly far
 * from them; 64 is also a whole number of latent cells for SD and SDXL (8 pixels) and Flux (16), so
 * no model crops or pads. 16:9 is 1344×768; the answer is still brought to the exact ratio.
 */
export function comfyDimensions(ratio: AspectRatio): { width: number; height: number } {
	const [across, down] = ratio.split(':').map(Number) as [number, number];
	const side = (value: number) => Math.max(SIDE_STEP, Math.round(value / SIDE_STEP) * SIDE_STEP);
	return { width: side(Math.sqrt((TARGET_PIXELS * across) / down)), height: side(Math.sqrt((TARGET_PIXELS * down) / across)) };
}
const TARGET_PIXELS = 1024 * 1024;
const SIDE_STEP = 64;

interface QueuedPrompt {
	prompt_id?: unknown;
	number?: unknown;
	node_errors?: unknown;
}

interface ImageRef {
	filename?: unknown;
	subfolder?: unknown;
	type?: unknown;
}

interface HistoryEntry {
	outputs?: Record<string, { images?: ImageRef[] } | undefined>;
	status?: { status_str?: string; completed?: boolean; messages?: Array<[string, Record<string, unknown>]> };
}

interface QueueState {
	queue_running?: unknown[][];
	queue_pending?: unknown[][];
}

/** Building one: throws at start-up when COMFYUI_BASE_URL or the model's workflow is missing or wrong. */
export function comfyuiProvider(model: ModelId, settings: ProviderSettings['comfyui'], workflowPath: string | undefined, timing: ProviderTiming): GenerationProvider {
	const root = requiredSetting(settings.baseUrl, 'COMFYUI_BASE_URL (--comfyui-base-url)', 'comfyui', model);
	if (!workflowPath) throw new Error(`providers: ${model}=comfyui needs a workflow file: --comfyui-workflow ${model}=<file.json> (IMAGEGEN_COMFYUI_WORKFLOW)`);
	const workflow = loadComfyWorkflow(workflowPath);
	if (model === 'p-image-edit' && workflow.imageInputs === 0) throw new Error(`comfyui workflow ${workflow.path}: has no {{image}}, so p-image-edit's input images would reach no node (put "{{image}}" as a LoadImage node's "image")`);
	if (model !== 'p-image-edit' && workflow.imageInputs > 0) throw new Error(`comfyui workflow ${workflow.path}: uses {{image}}, but ${model} takes no input images`);
	return new ComfyuiProvider(root, workflow, timing);
}

/** One model's workflow on one ComfyUI server: submitted with POST /prompt, followed through its history. */
class ComfyuiProvider implements GenerationProvider {
	readonly name = 'comfyui';
	readonly hasJobIds = true;
	readonly limits: GenerationProvider['limits'];
	private readonly retry: ReturnType<typeof providerRetryPolicy>;
	private readonly pollMs: number;
	// No secret: ComfyUI has no keys. Kept so redirects are treated as for every host.
	private readonly credentials: ReturnType<typeof hostCredentials>;
	// ComfyUI sends a client's progress to its websocket under this id; we poll instead.
	private readonly clientId = randomUUID();

	constructor(
		private readonly root: string,
		private readonly workflow: ComfyWorkflow,
		timing: ProviderTiming,
	) {
		this.limits = workflow.imageInputs > 0 ? { maxInputImages: workflow.imageInputs } : undefined;
		this.retry = providerRetryPolicy(timing);
		this.pollMs = pollIntervalMs(timing);
		this.credentials = hostCredentials(root, {});
	}

	async generate(request: SettledRequest, context: GenerationContext): Promise<ProviderImage[]> {
		const images = await this.uploadInputs(request, context);
		const prompt = bindComfyWorkflow(this.workflow, {
			prompt: request.prompt,
			negative_prompt: request.negative_prompt ?? '',
			seed: request.seed ?? randomInt(0, SEED_MAX + 1),
			...comfyDimensions(request.aspect_ratio),
			images,
		});
		const queued = await this.call<QueuedPrompt>({
			method: 'POST',
			url: `${this.root}/prompt`,
			json: { prompt, client_id: this.clientId },
			signal: context.signal,
			deadline: context.deadline,
			submit: true,
			refusalMessage: promptRefusal,
		});
		if (typeof queued.prompt_id !== 'string' || !queued.prompt_id) throw new ImageGenError(502, 'The comfyui provider queued the prompt but answered no prompt_id', { code: 'upstream_invalid_output' });
		const id = queued.prompt_id;
		try {
			await context.hostJobStarted?.({ provider: 'comfyui', id });
		} catch (error) {
			// Not kept, so no one will follow it: the GPU should not draw it either.
			await this.cancelPrompt(id);
			throw error;
		}
		return await this.follow(id, context, false);
	}

	async resume(job: HostJobRef, context: GenerationContext): Promise<ProviderImage[]> {
		return await this.follow(job.id, context, true);
	}

	async cancel(job: HostJobRef): Promise<void> {
		await this.cancelPrompt(job.id);
	}

	private call<T>(request: Omit<ProviderRequest, 'provider' | 'retry' | 'credentials'>): Promise<T> {
		return providerJson<T>({ provider: 'comfyui', retry: this.retry, credentials: this.credentials, ...request });
	}

	private async queueState(id: string, signal: AbortSignal, deadline?: number): Promise<'running' | 'pending' | undefined> {
		const queue = await this.call<QueueState>({ method: 'GET', url: `${this.root}/queue`, signal, deadline });
		const has = (list: unknown) => Array.isArray(list) && list.some((item) => Array.isArray(item) && item[1] === id);
		return has(queue.queue_running) ? 'running' : has(queue.queue_pending) ? 'pending' : undefined;
	}

	private async history(id: string, context: GenerationContext): Promise<HistoryEntry | undefined> {
		const answer = await this.call<Record<string, HistoryEntry>>({ method: 'GET', url: `${this.root}/history/${encodeURIComponent(id)}`, signal: context.signal, deadline: context.deadline });
		return answer?.[id];
	}

	/**
	 * Best effort and short. A waiting prompt is taken off the queue; a running one is interrupted
	 * only when the queue says it is ours, because `/interrupt` stops whatever runs, someone else's
	 * prompt too. Its `prompt_id` lets newer ComfyUI check that again itself, closing the moment
	 * between our look at the queue and the interrupt.
	 */
	private async cancelPrompt(id: string): Promise<void> {
		const signal = AbortSignal.timeout(5_000);
		const { root, credentials } = this;
		try {
			const state = await this.queueState(id, signal);
			if (state === 'pending') await postOnce({ provider: 'comfyui', url: `${root}/queue`, json: { delete: [id] }, credentials }, signal);
			if (state === 'running') await postOnce({ provider: 'comfyui', url: `${root}/interrupt`, json: { prompt_id: id }, credentials }, signal);
		} catch {
			// The caller is already failing for its own reason.
		}
	}

	/** Polls the prompt's history until it ended (at once when `pollAtOnce`), then brings its first image. */
	private async follow(id: string, context: GenerationContext, pollAtOnce: boolean): Promise<ProviderImage[]> {
		try {
			for (let wait = !pollAtOnce; ; wait = true) {
				if (wait) await sleep(this.pollMs, undefined, { signal: context.signal });
				const entry = await this.history(id, context);
				if (entry) return await this.output(entry, id, context);
				// Neither ended nor waiting: ComfyUI lost it (restarted, or someone cleared the queue). It may
				// have ended between the two looks, so the history is asked once more.
				if ((await this.queueState(id, context.signal, context.deadline)) === undefined) {
					const late = await this.history(id, context);
					if (late) return await this.output(late, id, context);
					throw new ImageGenError(502, `The comfyui provider no longer knows prompt ${id}: it is neither queued, running nor in its history (was ComfyUI restarted or its queue cleared?)`, { code: 'upstream_failed' });
				}
			}
		} catch (error) {
			if (hostJobUnwanted(context.signal)) await this.cancelPrompt(id);
			throw error;
		}
	}

	private async output(entry: HistoryEntry, id: string, context: GenerationContext): Promise<ProviderImage[]> {
		if (entry.status?.status_str === 'error') {
			throw new ImageGenError(502, `The comfyui provider failed: ${executionFailure(entry)}`, { code: 'upstream_failed' });
		}
		const image = firstImage(entry, this.workflow);
		if (!image) throw new ImageGenError(502, `The comfyui provider finished prompt ${id} without an image from ${this.workflow.outputNodes.map((node) => `node ${node}`).join(' or ')}`, { code: 'upstream_no_output' });
		const query = new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type });
		const { root, credentials, retry } = this;
		return [ImageBytes.owned(await providerBytes({ provider: 'comfyui', method: 'GET', url: `${root}/view?${query}`, credentials, retry, signal: context.signal, deadline: context.deadline }))];
	}

	/** Uploads the request's input images (as many as the workflow binds) and answers the names ComfyUI gave them. */
	private async uploadInputs(request: SettledRequest, context: GenerationContext): Promise<string[]> {
		const { workflow } = this;
		if (workflow.imageInputs === 0) return [];
		const images = await loadInputImages(request, context);
		if (images.length < workflow.imageInputs) {
			throw invalidField('images', `'images' must hold ${workflow.imageInputs} images for this ComfyUI workflow (it binds {{image}} to {{image_${workflow.imageInputs}}}); got ${images.length}`);
		}
		return await Promise.all(images.map((bytes, index) => this.uploadInput(bytes, index, context)));
	}

	private async uploadInput(bytes: Buffer, index: number, context: GenerationContext): Promise<string> {
		const type = sniffMedia(bytes)?.mimeType ?? 'application/octet-stream';
		const form = new FormData();
		// A name of its own, so two generations never read each other's input.
		form.append('image', new Blob([bytes], { type }), `imagegen-${randomUUID()}-${index}.${type.split('/')[1] ?? 'bin'}`);
		form.append('overwrite', 'true');
		const stored = await this.call<{ name?: unknown; subfolder?: unknown }>({ method: 'POST', url: `${this.root}/upload/image`, form, signal: context.signal, deadline: context.deadline, prepares: true });
		if (typeof stored.name !== 'string' || !stored.name) throw new ImageGenError(502, 'The comfyui provider accepted an input image but answered no name for it', { code: 'upstream_invalid_output' });
		return typeof stored.subfolder === 'string' && stored.subfolder ? `${stored.subfolder}/${stored.name}` : stored.name;
	}
}

/** The first image of the workflow's output nodes, in the file's order; else any image the history lists. */
function firstImage(entry: HistoryEntry, workflow: ComfyWorkflow): { filename: string; subfolder: string; type: string } | undefined {
	const outputs = entry.outputs ?? {};
	const ids = [...workflow.outputNodes, ...Object.keys(outputs).filter((id) => !workflow.outputNodes.includes(id))];
	for (const id of ids) {
		const image = outputs[id]?.images?.find((each) => typeof each?.filename === 'string' && each.filename);
		if (image) return { filename: image.filename as string, subfolder: typeof image.subfolder === 'string' ? image.subfolder : '', type: typeof image.type === 'string' ? image.type : 'output' };
	}
	return undefined;
}

/** Why a prompt ended in error, in ComfyUI's words: its `execution_error` (node, exception) or its interruption. */
function executionFailure(entry: HistoryEntry): string {
	const messages = Array.isArray(entry.status?.messages) ? entry.status.messages : [];
	const event = (name: string) => messages.find((message) => Array.isArray(message) && message[0] === name)?.[1];
	const failed = event('execution_error');
	if (failed) {
		const node = failed.node_id === undefined ? '' : ` at node ${String(failed.node_id)}${typeof failed.node_type === 'string' ? ` (${failed.node_type})` : ''}`;
		const kind = typeof failed.exception_type === 'string' && failed.exception_type ? `${failed.exception_type}: ` : '';
		return `${kind}${boundedHostText(String(failed.exception_message ?? 'execution error'))}${node}`;
	}
	if (event('execution_interrupted')) return 'the prompt was interrupted';
	return 'the prompt ended in error';
}

/**
 * `/prompt`'s 400: `error.message` is only "Prompt outputs failed validation"; what failed is in
 * `node_errors`, which is named here (node id, class, each error's message and details).
 */
function promptRefusal(text: string): string | undefined {
	let body: { error?: { message?: unknown; details?: unknown } | string; node_errors?: Record<string, { class_type?: unknown; errors?: Array<{ message?: unknown; details?: unknown }> }> };
	try {
		body = JSON.parse(text);
	} catch {
		return undefined;
	}
	if (typeof body !== 'object' || body === null) return undefined;
	const nodes = Object.entries(body.node_errors && typeof body.node_errors === 'object' ? body.node_errors : {}).map(([id, node]) => {
		const errors = (Array.isArray(node?.errors) ? node.errors : []).map((each) => [each?.message, each?.details].filter((part) => typeof part === 'string' && part).join(': '));
		return `node ${id}${typeof node?.class_type === 'string' ? ` (${node.class_type})` : ''}: ${errors.join('; ') || 'invalid'}`;
	});
	const error = body.error;
	const head = typeof error === 'string' ? error : [error?.message, nodes.length === 0 ? error?.details : undefined].filter((part) => typeof part === 'string' && part).join(': ');
	const message = [head || hostMessage(text), ...nodes].filter(Boolean).join('; ');
	return message || undefined;
}
