/**
 * `replicate`: Replicate's predictions API for all three models.
 * Shapes from Replicate's HTTP API reference: POST {base}/models/{owner}/{name}/predictions with
 * `Authorization: Bearer <token>`, `Prefer: wait=<seconds>` (sync mode, at most 60 s) and
 * `{ input }`; a prediction is `{ id, status: starting|processing|succeeded|failed|canceled|aborted,
 * output, error, urls: { get, cancel } }`. Every create carries `Cancel-After` (see cancelAfter).
 * The create waits at most 5 s (`Prefer: wait=5`), so the prediction's id is known, and told to
 * `hostJobStarted`, before any long wait: a restart can then follow it with GET {base}/predictions/{id} (`resume`) instead of creating it again.
 * Unfinished predictions are polled at `urls.get`; when our client goes away or our time limit
 * passes, `urls.cancel` is called so nobody pays for work no one will see; `cancel` is
 * POST {base}/predictions/{id}/cancel. Inputs follow each model's schema on Replicate (prunaai/p-image,
 * prunaai/p-image-edit, ideogram-ai/ideogram-v2); file inputs take data URIs, and inputs whose data
 * URIs together would exceed 1 MiB are first uploaded through the files API (POST {base}/files,
 * multipart part `content`, answered with `urls.get`) and passed by that URL. A model named in
 * `REPLICATE_MODEL_VERSIONS` (`p-image=owner/name:version_id`, for a model without an
 * official-model route) runs as POST {base}/predictions with `{ version, input }` instead.
 * The token goes to the configured origin only (host-credentials.ts): a `urls.get` elsewhere is
 * refused, a `urls.cancel` elsewhere is replaced by our own cancel URL, and output URLs are
 * downloaded keyless through the address-checked fetcher.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageGenError } from '../../../../core/errors';
import type { ModelId, ModelLimits } from '../../../../core/models';
import type { ProviderSettings } from '../../config';
import type { GenerationContext, GenerationProvider, SettledRequest } from '../provider';
import { hostJobUnwanted } from '../provider';
import { hostCredentials, isOwnOrigin, ownUrl, type HostCredentials } from './host-credentials';
import { boundedHostText } from './host-text';
import { aspectRatioSent, loadInputImages, requiredSetting, uploadInputImage, type FilesApi } from './inputs';
import { dataUri, type Base64Text } from './json-body';
import { NothingMadeError, pollIntervalMs, postOnce, providerJson, providerRetryPolicy, type ProviderRequest, type ProviderTiming } from './provider-http';

const REPLICATE_MODELS: Readonly<Record<ModelId, string>> = {
	'p-image': 'prunaai/p-image',
	'p-image-edit': 'prunaai/p-image-edit',
	'textimage-v2': 'ideogram-ai/ideogram-v2',
};

/**
 * Where Replicate takes less than the catalog. prunaai/p-image-edit "supports up to 5 reference
 * images" (https://replicate.com/prunaai/p-image-edit, the same model as Pruna's own API,
 * https://docs.api.pruna.ai/guides/models/p-image-edit: 1-5). The aspect ratios in the
 * prunaai/p-image and ideogram-ai/ideogram-v2 input schemas match the catalog's. Output formats
 * are no limit: normalize-output.ts converts what the host returns into the one asked for.
 */
const REPLICATE_LIMITS: Readonly<Partial<Record<ModelId, ModelLimits>>> = {
	'p-image-edit': { maxInputImages: 5 },
};

/**
 * Replicate's guidance is to send larger files through the files API rather than as data URIs,
 * which travel inside the prediction's JSON body: above 1 MiB of them in one request, every input
 * goes by URL.
 */
const INLINE_INPUTS_MAX_BYTES = 1_048_576;

/**
 * How long a create may hold its answer for a prediction that finishes fast. Short, because until
 * the create answers the prediction has no id we could keep: a restart in that window would lose a
 * prediction that runs (and is billed) anyway. A p-image prediction usually finishes within it.
 */
const CREATE_WAIT_SECONDS = 5;

/**
 * How long after our own time limit Replicate's deadline falls: our cancel at the limit comes first,
 * and Replicate's deadline only stops a prediction whose cancel was lost (or never sent: a crash).
 */
const CANCEL_AFTER_MARGIN_SECONDS = 15;

/**
 * The `Cancel-After` header for a create: what is left of our time limit plus the margin, in whole
 * seconds (Replicate's deadline header takes a duration such as `90s` or `1m`; see
 * https://replicate.com/docs/topics/predictions/lifecycle, "Timeouts"). Replicate then ends the
 * prediction itself at that deadline: `aborted` (not charged) if it had not started, `canceled` if
 * it had. None without a time limit.
 */
export function cancelAfter(deadline: number | undefined): Record<string, string> {
	if (deadline === undefined) return {};
	const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
	return { 'cancel-after': `${left + CANCEL_AFTER_MARGIN_SECONDS}s` };
}

/**
 * An `aborted` prediction passed its deadline before it started: Replicate made nothing and charges
 * nothing for it (https://replicate.com/changelog/2025-10-16-prediction-deadlines), so, unlike a
 * `canceled` one that may have run (and be billed), it proves nothing was made and a fallback chain
 * may try its next host.
 */
export function abortedPrediction(): NothingMadeError {
	const error = new ImageGenError(502, 'The replicate provider failed: the prediction was aborted, its deadline passed before it started (nothing was made or charged)', { code: 'upstream_failed' });
	return new NothingMadeError('replicate', error);
}

/** Replicate's ideogram-v2 spells style types as words ("Render 3D"), magic prompt in title case. */
const STYLE_NAMES: Record<string, string> = {
	AUTO: 'Auto',
	GENERAL: 'General',
	REALISTIC: 'Realistic',
	DESIGN: 'Design',
	RENDER_3D: 'Render 3D',
	ANIME: 'Anime',
};
const MAGIC_PROMPT_NAMES: Record<string, string> = { AUTO: 'Auto', ON: 'On', OFF: 'Off' };

interface Prediction {
	id?: string;
	status?: 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled' | 'aborted';
	output?: unknown;
	error?: unknown;
	urls?: { get?: string; cancel?: string };
}

/** Data URIs while they fit together in 1 MiB; otherwise every input through the files API. */
async function replicateImages(images: Buffer[], files: FilesApi): Promise<Array<string | Base64Text>> {
	const uris = images.map(dataUri);
	if (uris.reduce((total, uri) => total + uri.length, 0) <= INLINE_INPUTS_MAX_BYTES) return uris;
	return await Promise.all(images.map(async (bytes, index) => await uploadInputImage(bytes, index, files)));
}

async function replicateInput(request: SettledRequest, context: GenerationContext, files: FilesApi): Promise<Record<string, unknown>> {
	// All three input schemas take `seed` (prunaai/p-image, prunaai/p-image-edit, ideogram-ai/ideogram-v2).
	const input: Record<string, unknown> = { prompt: request.prompt, aspect_ratio: aspectRatioSent(request), ...(request.seed === undefined ? {} : { seed: request.seed }) };
	if (request.model === 'p-image-edit') input.images = await replicateImages(await loadInputImages(request, context), files);
	if (request.model === 'textimage-v2') {
		input.style_type = STYLE_NAMES[request.style_type ?? 'AUTO'];
		input.magic_prompt_option = MAGIC_PROMPT_NAMES[request.magic_prompt_option ?? 'AUTO'];
		if (request.negative_prompt) input.negative_prompt = request.negative_prompt;
	}
	return input;
}

export function replicateProvider(model: ModelId, settings: ProviderSettings['replicate'], timing: ProviderTiming): GenerationProvider {
	const token = requiredSetting(settings.apiToken, 'REPLICATE_API_TOKEN', 'replicate', model);
	const root = settings.baseUrl;
	const retry = providerRetryPolicy(timing);
	const pollMs = pollIntervalMs(timing);
	const credentials = hostCredentials(root, { authorization: `Bearer ${token}` });
	const version = settings.modelVersions[model];
	const call = (request: Omit<ProviderRequest, 'provider' | 'retry' | 'headers' | 'credentials'>, headers: Record<string, string> = {}) =>
		providerJson<Prediction>({ provider: 'replicate', retry, headers, credentials, ...request });

	const predictionUrl = (id: string) => `${root}/predictions/${encodeURIComponent(id)}`;
	const cancelPrediction = (prediction: Prediction) => cancel(prediction, root, credentials);

	/**
	 * Polls an unfinished prediction to its end (at once when `pollAtOnce`, else after the interval);
	 * canceled when our client goes away or our time limit passes.
	 */
	async function follow(first: Prediction, context: GenerationContext, pollAtOnce = false): Promise<Array<{ url: string }>> {
		let prediction = first;
		try {
			for (let wait = !pollAtOnce; unfinished(prediction); wait = true) {
				if (wait) await sleep(pollMs, undefined, { signal: context.signal });
				const url = ownUrl(prediction.urls?.get ?? predictionUrl(String(prediction.id)), credentials, 'replicate', 'status URL');
				prediction = await call({ method: 'GET', url, signal: context.signal, deadline: context.deadline });
			}
		} catch (error) {
			if (hostJobUnwanted(context.signal)) await cancelPrediction(prediction);
			throw error;
		}
		return outputsOf(prediction);
	}

	return {
		name: 'replicate',
		limits: REPLICATE_LIMITS[model],
		hasJobIds: true,
		async generate(request, context) {
			const input = await replicateInput(request, context, { provider: 'replicate', url: `${root}/files`, credentials, retry, signal: context.signal, deadline: context.deadline });
			const create = version
				? { url: `${root}/predictions`, json: { version, input } }
				: { url: `${root}/models/${REPLICATE_MODELS[request.model]}/predictions`, json: { input } };
			// A caller that leaves while the create waits is answered at once, but the create is not cut
			// short: its answer names the prediction, which is then canceled, where a cut create would
			// leave it running unnamed. Only the time limit cuts the create itself.
			const createSignal = context.deadline === undefined ? new AbortController().signal : AbortSignal.timeout(Math.max(0, context.deadline - Date.now()));
			const creating = call({ method: 'POST', ...create, signal: createSignal, deadline: context.deadline, submit: true }, { prefer: `wait=${CREATE_WAIT_SECONDS}`, ...cancelAfter(context.deadline) });
			const prediction = await untilStopped(creating, context.signal, (made) => (unfinished(made) ? cancelPrediction(made) : undefined));
			if (typeof prediction.id === 'string' && prediction.id) context.hostJobNamed?.({ provider: 'replicate', id: prediction.id });
			if (unfinished(prediction) && typeof prediction.id === 'string' && prediction.id && context.hostJobStarted) {
				try {
					await context.hostJobStarted({ provider: 'replicate', id: prediction.id });
				} catch (error) {
					// Not kept, so no one will follow it: nobody should pay for it either.
					await cancelPrediction(prediction);
					throw error;
				}
			}
			return await follow(prediction, context);
		},
		async resume(job, context) {
			return await follow({ id: job.id, status: 'starting', urls: { get: predictionUrl(job.id) } }, context, true);
		},
		async cancel(job) {
			await cancelPrediction({ id: job.id });
		},
	};
}

/**
 * `work`, unless `signal` stops first: then the stop's reason is thrown at once, and `whenDone`
 * gets what the work makes once it is made (best effort).
 */
async function untilStopped<T>(work: Promise<T>, signal: AbortSignal, whenDone: (made: T) => Promise<void> | undefined): Promise<T> {
	let onAbort: (() => void) | undefined;
	const stopped = new Promise<never>((_, reject) => {
		onAbort = () => reject(signal.reason);
		if (signal.aborted) onAbort();
		else signal.addEventListener('abort', onAbort, { once: true });
	});
	try {
		return await Promise.race([work, stopped]);
	} catch (error) {
		if (signal.aborted) void work.then(whenDone).catch(() => undefined);
		throw error;
	} finally {
		signal.removeEventListener('abort', onAbort!);
	}
}

function unfinished(prediction: Prediction): boolean {
	return prediction.status === 'starting' || prediction.status === 'processing';
}

async function cancel(prediction: Prediction, root: string, credentials: HostCredentials): Promise<void> {
	const answered = prediction.urls?.cancel;
	const url = answered && isOwnOrigin(answered, credentials) ? answered : prediction.id ? `${root}/predictions/${encodeURIComponent(prediction.id)}/cancel` : undefined;
	if (!url) return;
	await postOnce({ provider: 'replicate', url, credentials });
}

function outputsOf(prediction: Prediction): Array<{ url: string }> {
	if (prediction.status === 'aborted') throw abortedPrediction();
	if (prediction.status !== 'succeeded') {
		const reason = typeof prediction.error === 'string' && prediction.error ? boundedHostText(prediction.error) : `the prediction ended as '${prediction.status}'`;
		throw new ImageGenError(502, `The replicate provider failed: ${reason}`, { code: 'upstream_failed' });
	}
	const urls = (Array.isArray(prediction.output) ? prediction.output : [prediction.output]).filter((item): item is string => typeof item === 'string');
	if (urls.length === 0) throw new ImageGenError(502, 'The replicate provider returned no image', { code: 'upstream_no_output' });
	return urls.map((url) => ({ url }));
}
