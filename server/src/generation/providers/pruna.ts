/**
 * `pruna`: Pruna's P-API for p-image and p-image-edit.
 * Shapes from docs.api.pruna.ai (Models API): POST {base}/predictions with headers `apikey`,
 * `Model: p-image | p-image-edit` and optionally `Try-Sync: true` (waits up to 60 s), body
 * `{ input }`. A finished answer is `{ status: "succeeded", generation_url }`; otherwise
 * `{ id, get_url }`, polled (GET {base}/predictions/status/{id}) until `status` is succeeded,
 * failed or canceled (`error` holds the reason).
 * Try-Sync has no shorter wait than 60 s, and a create held that long has no id we could keep: a
 * restart in that window would lose a prediction that runs (and is billed) anyway. So a caller that
 * keeps job ids (`hostJobStarted`) gets an asynchronous create, its id told at once, and a restart
 * follows the prediction by that id (`resume`); a caller that keeps none still gets Try-Sync.
 * The API has no cancel: its operations are submit, status, file upload and delivery (Models API
 * reference, docs.api.pruna.ai/apis/models-api-0), and "canceled" is only a status it may report.
 * So this provider has no `cancel`; a prediction we stop following runs to its end at Pruna.
 * The output is downloaded from `generation_url` with the API key. Input images are first uploaded with
 * POST {base}/files (multipart part `content`), whose answer's `urls.get` goes into `input.images`.
 * The key goes to the configured origin only (host-credentials.ts): a status URL elsewhere is
 * refused, a delivery URL elsewhere is downloaded keyless through the address-checked fetcher.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageGenError } from '../../../../core/errors';
import type { ModelId, ModelLimits } from '../../../../core/models';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationContext, GenerationProvider, ProviderImage } from '../provider';
import { hostCredentials, isOwnOrigin, ownUrl } from './host-credentials';
import { boundedHostText } from './host-text';
import { aspectRatioSent, loadInputImages, requiredSetting, uploadInputImage } from './inputs';
import { pollIntervalMs, providerBytes, providerJson, providerRetryPolicy, type ProviderTiming } from './provider-http';

/**
 * Where Pruna takes less than the catalog. p-image-edit: "Edit and compose multiple images
 * (1-5)" (https://docs.api.pruna.ai/guides/models/p-image-edit). Aspect ratios (1:1, 16:9, 9:16,
 * 4:3, 3:4, 3:2, 2:3 for both models, same page and /guides/models/p-image) match the catalog,
 * and no prompt length is documented. Output formats are no limit: normalize-output.ts converts
 * what the host returns (jpeg, png, webp) into the one asked for.
 */
const PRUNA_LIMITS: Readonly<Partial<Record<ModelId, ModelLimits>>> = {
	'p-image-edit': { maxInputImages: 5 },
};

interface PrunaStatus {
	id?: string;
	get_url?: string;
	status?: 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';
	generation_url?: string;
	error?: string;
	message?: string;
}

export function prunaProvider(model: ModelId, settings: ProviderSettings['pruna'], timing: ProviderTiming): GenerationProvider {
	if (model === 'textimage-v2') throw new Error('providers: pruna serves p-image and p-image-edit only, not textimage-v2');
	const apiKey = requiredSetting(settings.apiKey, 'PRUNA_API_KEY', 'pruna', model);
	const root = settings.baseUrl;
	const retry = providerRetryPolicy(timing);
	const pollMs = pollIntervalMs(timing);
	const credentials = hostCredentials(root, { apikey: apiKey });

	const statusUrl = (id: string) => `${root}/predictions/status/${encodeURIComponent(id)}`;

	/** Polls an unfinished prediction to its end (at once when `pollAtOnce`), then brings its output. */
	async function follow(first: PrunaStatus, context: GenerationContext, pollAtOnce = false): Promise<ProviderImage[]> {
		let status = first;
		for (let wait = !pollAtOnce; !finished(status); wait = true) {
			const answered = status.get_url ?? (status.id ? statusUrl(status.id) : undefined);
			if (!answered) throw new ImageGenError(502, 'The pruna provider answered neither a result nor a status URL', { code: 'upstream_invalid_output' });
			const pollUrl = ownUrl(answered, credentials, 'pruna', 'status URL');
			if (wait) await sleep(pollMs, undefined, { signal: context.signal });
			status = { ...(await providerJson<PrunaStatus>({ provider: 'pruna', method: 'GET', url: pollUrl, credentials, signal: context.signal, deadline: context.deadline, retry })), get_url: pollUrl };
		}
		if (status.status !== 'succeeded' || !status.generation_url) {
			throw new ImageGenError(502, `The pruna provider failed: ${boundedHostText(status.error || status.message || `the prediction ended as '${status.status}'`)}`, { code: 'upstream_failed' });
		}
		const delivery = new URL(status.generation_url, `${root}/`);
		if (!isOwnOrigin(delivery, credentials)) return [{ url: delivery.toString() }];
		const bytes = await providerBytes({ provider: 'pruna', method: 'GET', url: delivery.toString(), credentials, signal: context.signal, deadline: context.deadline, retry });
		return [ImageBytes.owned(bytes)];
	}

	return {
		name: 'pruna',
		limits: PRUNA_LIMITS[model],
		hasJobIds: true,
		async generate(request, context) {
			// Both input schemas take `seed` (docs.api.pruna.ai, Models API schemas p-image and p-image-edit).
			const input: Record<string, unknown> = { prompt: request.prompt, aspect_ratio: aspectRatioSent(request), ...(request.seed === undefined ? {} : { seed: request.seed }) };
			if (request.model === 'p-image-edit') {
				const images = await loadInputImages(request, context);
				const files = { provider: 'pruna', url: `${root}/files`, credentials, retry, signal: context.signal, deadline: context.deadline };
				input.images = await Promise.all(images.map(async (bytes, index) => await uploadInputImage(bytes, index, files)));
			}
			const status = await providerJson<PrunaStatus>({
				provider: 'pruna',
				method: 'POST',
				url: `${root}/predictions`,
				headers: { model: request.model, ...(context.hostJobStarted ? {} : { 'try-sync': 'true' }) },
				credentials,
				json: { input },
				signal: context.signal,
				deadline: context.deadline,
				submit: true,
				retry,
			});
			if (typeof status.id === 'string' && status.id) context.hostJobNamed?.({ provider: 'pruna', id: status.id });
			if (!finished(status) && typeof status.id === 'string' && status.id) await context.hostJobStarted?.({ provider: 'pruna', id: status.id });
			return await follow(status, context);
		},
		async resume(job, context) {
			return await follow({ id: job.id, get_url: statusUrl(job.id) }, context, true);
		},
	};
}

function finished(status: PrunaStatus): boolean {
	return status.status === 'succeeded' || status.status === 'failed' || status.status === 'canceled';
}
