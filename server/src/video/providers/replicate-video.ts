/**
 * `replicate` for p-video: Replicate's predictions API with the official model prunaai/p-video.
 * Shapes from Replicate's HTTP API reference: POST {base}/models/prunaai/p-video/predictions with
 * `Authorization: Bearer <token>`, `Prefer: wait=<seconds>` and `{ input }` (prunaai/p-video's
 * input schema: p-video's fields, `image`, `last_frame_image` and `audio` as URIs); a prediction is
 * `{ id, status: starting|processing|succeeded|failed|canceled|aborted, output, error, urls: { get, cancel } }`
 * and a succeeded one's `output` is the MP4's URL (a string). Every create carries `Cancel-After`
 * (the video's time limit plus a margin), and an `aborted` prediction is answered as one that made
 * nothing, as for images (generation/providers/replicate.ts).
 * The create waits at most 5 s, so the prediction's id is known, and told to `hostJobStarted`,
 * before any long wait: a restart follows it with GET {base}/predictions/{id} (`resume`) instead of
 * creating it again. `cancel` is POST {base}/predictions/{id}/cancel; a prediction is also
 * canceled when our job stops (canceled, or its time limit passed) while we follow it. Inputs go
 * as data URIs while they fit together in 1 MiB, otherwise through the files API (POST
 * {base}/files) by URL, as Replicate advises for larger files. Replicate reports no percentage
 * (only `logs`, the model's own text), so no progress is told.
 * The token goes to the configured origin only (host-credentials.ts): a `urls.get` elsewhere is
 * refused, a `urls.cancel` elsewhere is replaced by our own cancel URL, and the output URL is
 * answered as a URL, downloaded keyless through the address-checked fetcher.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageGenError } from '../../../../core/errors';
import type { VideoModelId } from '../../../../core/video-models';
import type { ProviderSettings } from '../../config';
import { hostCredentials, isOwnOrigin, ownUrl } from '../../generation/providers/host-credentials';
import { boundedHostText } from '../../generation/providers/host-text';
import { requiredSetting, type FilesApi } from '../../generation/providers/inputs';
import { Base64Text } from '../../generation/providers/json-body';
import { abortedPrediction, cancelAfter } from '../../generation/providers/replicate';
import { pollIntervalMs, postOnce, providerJson, providerRetryPolicy, type ProviderRequest, type ProviderTiming } from '../../generation/providers/provider-http';
import type { ProviderVideo, SettledVideoRequest, VideoContext, VideoProvider } from '../video-provider';
import { hostJobUnwanted } from '../../generation/provider';
import { invalidAnswer, loadVideoInputs, pVideoFields, uploadVideoInput, type LoadedInput } from './video-inputs';

const REPLICATE_VIDEO_MODELS: Readonly<Record<VideoModelId, string>> = { 'p-video': 'prunaai/p-video' };

/** As for images (generation/providers/replicate.ts): above this many bytes of data URIs in one request, every input goes by URL. */
const INLINE_INPUTS_MAX_BYTES = 1_048_576;

/**
 * How long a create may hold its answer. Short, because until the create answers the prediction
 * has no id we could keep: a restart in that window would lose a prediction that runs (and is
 * billed) anyway. No video finishes within it; it only saves the first poll.
 */
const CREATE_WAIT_SECONDS = 5;

/** As Replicate's prediction lifecycle publishes them; `aborted`: its deadline passed before it started. */
const REPLICATE_STATUSES = ['starting', 'processing', 'succeeded', 'failed', 'canceled', 'aborted'] as const;

interface Prediction {
	id?: unknown;
	status?: unknown;
	output?: unknown;
	error?: unknown;
	urls?: { get?: unknown; cancel?: unknown };
}

const unfinished = (prediction: Prediction) => prediction.status === 'starting' || prediction.status === 'processing';

/** Data URIs while they fit together in 1 MiB; otherwise every input through the files API. */
async function replicateInputs(inputs: LoadedInput[], files: FilesApi): Promise<Record<string, string | Base64Text>> {
	const uris = inputs.map((each) => new Base64Text(each.bytes, `data:${each.mimeType};base64,`));
	if (uris.reduce((total, uri) => total + uri.length, 0) <= INLINE_INPUTS_MAX_BYTES) return Object.fromEntries(inputs.map((each, index) => [each.field, uris[index]!]));
	return Object.fromEntries(await Promise.all(inputs.map(async (each) => [each.field, await uploadVideoInput(each, files)] as const)));
}

export function replicateVideoProvider(model: VideoModelId, settings: ProviderSettings['replicate'], timing: ProviderTiming): VideoProvider {
	const token = requiredSetting(settings.apiToken, 'REPLICATE_API_TOKEN', 'replicate', model);
	const root = settings.baseUrl;
	const retry = providerRetryPolicy(timing);
	const pollMs = pollIntervalMs(timing);
	const credentials = hostCredentials(root, { authorization: `Bearer ${token}` });
	const call = (request: Omit<ProviderRequest, 'provider' | 'retry' | 'credentials'>) => providerJson<Prediction>({ provider: 'replicate', retry, credentials, ...request });
	const predictionUrl = (id: string) => `${root}/predictions/${encodeURIComponent(id)}`;

	async function cancelPrediction(prediction: Prediction): Promise<void> {
		const answered = prediction.urls?.cancel;
		const own = typeof answered === 'string' && answered && isOwnOrigin(new URL(answered, `${root}/`), credentials) ? new URL(answered, `${root}/`).toString() : undefined;
		const url = own ?? (typeof prediction.id === 'string' && prediction.id ? `${predictionUrl(prediction.id)}/cancel` : undefined);
		if (url) await postOnce({ provider: 'replicate', url, credentials });
	}

	/** Polls an unfinished prediction to its end (at once when `pollAtOnce`); canceled when our job stops while we follow it. */
	async function follow(first: Prediction, context: VideoContext, pollAtOnce: boolean): Promise<ProviderVideo> {
		let prediction = first;
		try {
			for (let wait = !pollAtOnce; unfinished(prediction); wait = true) {
				if (wait) await sleep(pollMs, undefined, { signal: context.signal });
				const get = typeof prediction.urls?.get === 'string' && prediction.urls.get ? prediction.urls.get : predictionUrl(String(prediction.id));
				prediction = await call({ method: 'GET', url: ownUrl(get, credentials, 'replicate', 'status URL'), signal: context.signal, deadline: context.deadline });
				if (!(REPLICATE_STATUSES as readonly unknown[]).includes(prediction?.status)) throw invalidAnswer('replicate', `a prediction status that is none of ${REPLICATE_STATUSES.join(', ')}`);
			}
		} catch (error) {
			if (hostJobUnwanted(context.signal)) await cancelPrediction(prediction);
			throw error;
		}
		return outputOf(prediction);
	}

	/**
	 * Sends the create. It is not cut short when our job stops (only the time limit cuts it): its
	 * answer names the prediction, which is then canceled, where a cut create would leave it
	 * running unnamed. It holds its answer at most CREATE_WAIT_SECONDS.
	 */
	async function create(request: SettledVideoRequest, context: VideoContext): Promise<Prediction> {
		const files = { provider: 'replicate', url: `${root}/files`, credentials, retry, signal: context.signal, deadline: context.deadline };
		const input = { ...pVideoFields(request), ...(await replicateInputs(await loadVideoInputs(request, context), files)) };
		const createSignal = context.deadline === undefined ? new AbortController().signal : AbortSignal.timeout(Math.max(0, context.deadline - Date.now()));
		const url = `${root}/models/${REPLICATE_VIDEO_MODELS[request.model]}/predictions`;
		const prediction = await call({ method: 'POST', url, headers: { prefer: `wait=${CREATE_WAIT_SECONDS}`, ...cancelAfter(context.deadline) }, json: { input }, signal: createSignal, deadline: context.deadline, submit: true });
		if (!(REPLICATE_STATUSES as readonly unknown[]).includes(prediction?.status)) throw invalidAnswer('replicate', `a prediction status that is none of ${REPLICATE_STATUSES.join(', ')}`);
		if (unfinished(prediction) && (typeof prediction.id !== 'string' || !prediction.id)) throw invalidAnswer('replicate', 'an unfinished prediction without its id');
		if (context.signal.aborted) {
			if (unfinished(prediction)) await cancelPrediction(prediction);
			throw context.signal.reason;
		}
		return prediction;
	}

	return {
		name: 'replicate',
		hasJobIds: true,
		async generate(request, context) {
			const prediction = await create(request, context);
			if (typeof prediction.id === 'string' && prediction.id) context.hostJobNamed?.({ provider: 'replicate', id: prediction.id });
			if (unfinished(prediction) && context.hostJobStarted) {
				try {
					await context.hostJobStarted({ provider: 'replicate', id: String(prediction.id) });
				} catch (error) {
					// Not kept, so no one will follow it: nobody should pay for it either.
					await cancelPrediction(prediction);
					throw error;
				}
			}
			return await follow(prediction, context, false);
		},
		async resume(job, context) {
			return await follow({ id: job.id, status: 'starting', urls: { get: predictionUrl(job.id) } }, context, true);
		},
		async cancel(job) {
			await cancelPrediction({ id: job.id });
		},
	};
}

function outputOf(prediction: Prediction): ProviderVideo {
	if (prediction.status === 'aborted') throw abortedPrediction();
	if (prediction.status !== 'succeeded') {
		const reason = typeof prediction.error === 'string' && prediction.error ? boundedHostText(prediction.error) : `the prediction ended as '${String(prediction.status)}'`;
		throw new ImageGenError(502, `The replicate provider failed: ${reason}`, { code: 'upstream_failed' });
	}
	if (typeof prediction.output !== 'string' || !/^https?:\/\//i.test(prediction.output)) throw invalidAnswer('replicate', 'a succeeded prediction whose output is not the URL of its video');
	return { url: prediction.output };
}
