/**
 * `comfyui`: a ComfyUI server someone runs (COMFYUI_BASE_URL), one workflow file per model in
 * ComfyUI's API format (`--comfyui-workflow p-image=./flux.json`, comfyui-workflow.ts).
 * Shapes from ComfyUI's server (server.py, execution.py): `POST /prompt` `{ prompt, client_id,
 * prompt_id }` answers `{ prompt_id, number, node_errors }`, or 400 `{ error: { type, message,
 * details }, node_errors: { <node id>: { class_type, errors: [{ message, details }] } } }` when
 * validation fails; `GET /history/<prompt_id>` is `{}` until the prompt ended, then `{ <prompt_id>:
 * { outputs: { <node id>: { images: [{ filename, subfolder, type }] } }, status: { status_str:
 * success|error, messages: [[event, data], …] } } }` (an `execution_error` message carries the
 * node and the exception), and `POST /history { delete: [id] }` forgets it; `GET
 * /view?filename=&subfolder=&type=` serves an image; `POST /upload/image` (multipart `image`,
 * `overwrite`) answers `{ name, subfolder, type }`; `GET /queue` lists `queue_running` and
 * `queue_pending` as `[number, prompt_id, …]`; `POST /queue { delete: [id] }` drops a waiting
 * prompt and `POST /interrupt` stops the one running (any one, before PR #9607; since, only the
 * `prompt_id` its body names).
 * The prompt id is ours, told to `hostJobStarted` before the prompt is sent, so a restart follows
 * the same prompt (`resume`) instead of queueing it again. ComfyUI has no authentication of its own
 * and no way to delete an uploaded input or an output file, so inputs get unique names and stay in
 * its input folder, and outputs in its output (SaveImage) or temp (PreviewImage) folder.
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
import { hostJobUnwanted, takenOver } from '../provider';
import { executionFailure, firstImage, promptRefusal, queuePlace, type HistoryEntry, type QueueState } from './comfyui-answers';
import { bindComfyWorkflow, loadComfyWorkflow, type ApiWorkflow, type ComfyWorkflow } from './comfyui-workflow';
import { hostCredentials } from './host-credentials';
import { loadInputImages, requiredSetting } from './inputs';
import { NothingMadeError, pollIntervalMs, postOnce, providerBytes, providerJson, providerRetryPolicy, type ProviderRequest, type ProviderTiming } from './provider-http';

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
		// Named here, not by ComfyUI (server.py post_prompt takes the body's `prompt_id`), and kept
		// before the prompt is sent: a create whose answer is lost, to a proxy or to a restart, is then
		// followed by this id, never failed while the GPU draws it nor sent a second time.
		const id = randomUUID();
		await context.hostJobStarted?.({ provider: 'comfyui', id });
		return await this.follow(await this.queuePrompt(id, prompt, context), context, false);
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

	/** Best effort, once, within 5 s: a POST whose answer tells nothing (ComfyUI answers an empty 200). */
	private async post(path: string, json: unknown, signal?: AbortSignal): Promise<void> {
		await postOnce({ provider: 'comfyui', url: `${this.root}${path}`, json, credentials: this.credentials }, signal);
	}

	/** Sends the prompt under `id`; answers the id ComfyUI runs it under. */
	private async queuePrompt(id: string, prompt: ApiWorkflow, context: GenerationContext): Promise<string> {
		let queued: QueuedPrompt;
		try {
			queued = await this.call<QueuedPrompt>({
				method: 'POST',
				url: `${this.root}/prompt`,
				json: { prompt, client_id: this.clientId, prompt_id: id },
				signal: context.signal,
				deadline: context.deadline,
				submit: true,
				refusalMessage: promptRefusal,
			});
		} catch (error) {
			return await this.afterFailedCreate(id, error, context);
		}
		const answered = queued.prompt_id;
		if (typeof answered !== 'string' || !answered) throw new ImageGenError(502, 'The comfyui provider queued the prompt but answered no prompt_id', { code: 'upstream_invalid_output' });
		if (answered !== id) await this.keepOwnId(answered, context);
		return answered;
	}

	/**
	 * A ComfyUI that names every prompt itself (older than its taking the client's `prompt_id`) ran
	 * ours under its own id: that one is kept instead, and the prompt is stopped when it cannot be.
	 */
	private async keepOwnId(id: string, context: GenerationContext): Promise<void> {
		try {
			await context.hostJobStarted?.({ provider: 'comfyui', id });
		} catch (error) {
			// Not kept, so no one will follow it: the GPU should not draw it either.
			await this.cancelPrompt(id);
			throw error;
		}
	}

	/**
	 * The create failed. A refusal ComfyUI answered (its 400) or a connection it never took made
	 * nothing. A proxy's 5xx, a cut connection or an answer that is not ComfyUI's may come after
	 * ComfyUI queued the prompt: then it is looked up by its id, and followed when ComfyUI has it. A
	 * run no one wants any more (our time limit, the client gone) asks ComfyUI to stop it instead.
	 */
	private async afterFailedCreate(id: string, error: unknown, context: GenerationContext): Promise<string> {
		if (hostJobUnwanted(context.signal)) {
			await this.cancelPrompt(id);
			throw error;
		}
		const refused = error instanceof ImageGenError && ['upstream_rejected', 'upstream_auth_failed', 'upstream_rate_limited'].includes(error.code);
		if (refused || error instanceof NothingMadeError || context.signal.aborted) throw error;
		const known = await this.knows(id, context).catch(() => false);
		if (!known) throw error;
		return id;
	}

	/** Whether ComfyUI has the prompt: waiting, running, or in its history. */
	private async knows(id: string, context: GenerationContext): Promise<boolean> {
		return (await this.queueState(id, context.signal, context.deadline)) !== undefined || (await this.history(id, context)) !== undefined;
	}

	private async queueState(id: string, signal: AbortSignal, deadline?: number): Promise<'running' | 'pending' | undefined> {
		return queuePlace(await this.call<QueueState>({ method: 'GET', url: `${this.root}/queue`, signal, deadline }), id);
	}

	private async history(id: string, context: GenerationContext): Promise<HistoryEntry | undefined> {
		const answer = await this.call<Record<string, HistoryEntry>>({ method: 'GET', url: `${this.root}/history/${encodeURIComponent(id)}`, signal: context.signal, deadline: context.deadline });
		return answer?.[id];
	}

	/**
	 * Best effort and short. A waiting prompt is taken off the queue; a running one is interrupted
	 * only when the queue says it is ours, because `/interrupt` stops whatever runs, someone else's
	 * prompt too (server.py `post_interrupt` before PR #9607). Its `prompt_id` lets newer ComfyUI
	 * check that again itself, closing the moment between our look at the queue and the interrupt.
	 * A prompt that started between the look and the delete is no longer in the queue to delete:
	 * the queue is looked at again, and it is interrupted.
	 */
	private async cancelPrompt(id: string): Promise<void> {
		const signal = AbortSignal.timeout(5_000);
		try {
			let state = await this.queueState(id, signal);
			if (state === 'pending') {
				await this.post('/queue', { delete: [id] }, signal);
				state = await this.queueState(id, signal);
			}
			if (state === 'running') await this.post('/interrupt', { prompt_id: id }, signal);
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

	/**
	 * The ended prompt's first image, or why it has none; then its history entry is deleted.
	 * ComfyUI keeps every prompt's entry (its whole workflow with it) in memory until it is deleted
	 * or ten thousand are kept (execution.py MAXIMUM_HISTORY_SIZE), and nobody else reads ours. Kept
	 * only for a process that took the job over and follows it still.
	 */
	private async output(entry: HistoryEntry, id: string, context: GenerationContext): Promise<ProviderImage[]> {
		try {
			if (entry.status?.status_str === 'error') {
				throw new ImageGenError(502, `The comfyui provider failed: ${executionFailure(entry)}`, { code: 'upstream_failed' });
			}
			const image = firstImage(entry, this.workflow);
			if (!image) throw new ImageGenError(502, `The comfyui provider finished prompt ${id} without an image from ${this.workflow.outputNodes.map((node) => `node ${node}`).join(' or ')}`, { code: 'upstream_no_output' });
			const query = new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type });
			const { root, credentials, retry } = this;
			const bytes = await providerBytes({ provider: 'comfyui', method: 'GET', url: `${root}/view?${query}`, credentials, retry, signal: context.signal, deadline: context.deadline });
			// The workflow draws with a seed of its own: the request's made nothing of this image.
			if (!this.workflow.bindsSeed) context.seedUnused?.();
			return [ImageBytes.owned(bytes)];
		} finally {
			if (!takenOver(context.signal)) await this.post('/history', { delete: [id] });
		}
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
