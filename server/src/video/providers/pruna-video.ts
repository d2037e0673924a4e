/**
 * `pruna` for p-video: Pruna's P-API (docs.api.pruna.ai, Models API; the p-video model page).
 * POST {base}/predictions with headers `apikey` and `Model: p-video`, body `{ input }` with
 * p-video's fields; a first frame, last frame or audio track is first uploaded with POST
 * {base}/files (multipart part `content`) and passed by the answer's `urls.get`, as p-image-edit's
 * inputs are. The create answers `{ id, get_url }`; the prediction is polled
 * (GET {base}/predictions/status/{id}) until `status` is succeeded, failed or canceled (`error`
 * holds the reason), and a success names the MP4 in `generation_url`.
 * The create never asks `Try-Sync`: a video takes longer than its 60 s, and a create held that
 * long has no id we could keep, so a restart would lose a prediction that runs (and is billed)
 * anyway. The id is told to `hostJobStarted` at once and `resume` polls by it.
 * The API has no cancel (its operations are submit, status, file upload and delivery), and
 * "canceled" is only a status it may report: this provider has no `cancel`, and a prediction we
 * stop following runs to its end at Pruna.
 * The key goes to the configured origin only (host-credentials.ts): a status URL elsewhere is
 * refused; the MP4 on Pruna's origin is downloaded with the key as a stream, one elsewhere is
 * answered as a URL, which the runner fetches keyless through the address-checked fetcher.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageGenError } from '../../../../core/errors';
import type { VideoModelId } from '../../../../core/video-models';
import type { ProviderSettings } from '../../config';
import { hostCredentials, isOwnOrigin, ownUrl } from '../../generation/providers/host-credentials';
import { boundedHostText } from '../../generation/providers/host-text';
import { requiredSetting } from '../../generation/providers/inputs';
import { pollIntervalMs, providerJson, providerRetryPolicy, providerStream, type ProviderTiming } from '../../generation/providers/provider-http';
import type { ProviderVideo, SettledVideoRequest, VideoContext, VideoProvider } from '../video-provider';
import { invalidAnswer, loadVideoInputs, pVideoFields, uploadVideoInput } from './video-inputs';

const PRUNA_STATUSES = ['starting', 'processing', 'succeeded', 'failed', 'canceled'] as const;
type PrunaStatusName = (typeof PRUNA_STATUSES)[number];

interface PrunaStatus {
	id?: unknown;
	get_url?: unknown;
	status?: unknown;
	generation_url?: unknown;
	error?: unknown;
	message?: unknown;
}

const isStatusName = (value: unknown): value is PrunaStatusName => (PRUNA_STATUSES as readonly unknown[]).includes(value);
const finished = (status: unknown) => status === 'succeeded' || status === 'failed' || status === 'canceled';

export function prunaVideoProvider(model: VideoModelId, settings: ProviderSettings['pruna'], timing: ProviderTiming): VideoProvider {
	const apiKey = requiredSetting(settings.apiKey, 'PRUNA_API_KEY', 'pruna', model);
	const root = settings.baseUrl;
	const retry = providerRetryPolicy(timing);
	const pollMs = pollIntervalMs(timing);
	const credentials = hostCredentials(root, { apikey: apiKey });
	const statusUrl = (id: string) => `${root}/predictions/status/${encodeURIComponent(id)}`;

	async function input(request: SettledVideoRequest, context: VideoContext): Promise<Record<string, unknown>> {
		const files = { provider: 'pruna', url: `${root}/files`, credentials, retry, signal: context.signal, deadline: context.deadline };
		const uploaded = await Promise.all((await loadVideoInputs(request, context)).map(async (each) => [each.field, await uploadVideoInput(each, files)] as const));
		return { ...pVideoFields(request), ...Object.fromEntries(uploaded) };
	}

	/** Polls the prediction at `pollUrl` to its end (the first poll at once when `pollAtOnce`), then answers where its MP4 is. */
	async function follow(pollUrl: string, context: VideoContext, pollAtOnce: boolean): Promise<ProviderVideo> {
		let status: PrunaStatus = {};
		for (let wait = !pollAtOnce; !finished(status.status); wait = true) {
			if (wait) await sleep(pollMs, undefined, { signal: context.signal });
			status = await providerJson<PrunaStatus>({ provider: 'pruna', method: 'GET', url: pollUrl, credentials, signal: context.signal, deadline: context.deadline, retry });
			if (!isStatusName(status?.status)) throw invalidAnswer('pruna', `a prediction status that is none of ${PRUNA_STATUSES.join(', ')}`);
		}
		return await delivered(status, context);
	}

	async function delivered(status: PrunaStatus, context: VideoContext): Promise<ProviderVideo> {
		if (status.status !== 'succeeded') {
			const reason = [status.error, status.message].find((each): each is string => typeof each === 'string' && each.length > 0) ?? `the prediction ended as '${String(status.status)}'`;
			throw new ImageGenError(502, `The pruna provider failed: ${boundedHostText(reason)}`, { code: 'upstream_failed' });
		}
		if (typeof status.generation_url !== 'string' || !status.generation_url) throw invalidAnswer('pruna', 'a succeeded prediction without its generation_url');
		const delivery = new URL(status.generation_url, `${root}/`);
		if (!isOwnOrigin(delivery, credentials)) return { url: delivery.toString() };
		const stream = await providerStream({ provider: 'pruna', method: 'GET', url: delivery.toString(), headers: { accept: 'video/mp4' }, credentials, signal: context.signal, deadline: context.deadline, retry });
		return { stream };
	}

	return {
		name: 'pruna',
		hasJobIds: true,
		async generate(request, context) {
			const created = await providerJson<PrunaStatus>({
				provider: 'pruna',
				method: 'POST',
				url: `${root}/predictions`,
				headers: { model: request.model },
				credentials,
				json: { input: await input(request, context) },
				signal: context.signal,
				deadline: context.deadline,
				submit: true,
				retry,
			});
			if (typeof created?.id === 'string' && created.id) context.hostJobNamed?.({ provider: 'pruna', id: created.id });
			if (finished(created?.status)) return await delivered(created, context);
			if (typeof created?.id !== 'string' || !created.id) throw invalidAnswer('pruna', 'an unfinished prediction without its id');
			await context.hostJobStarted?.({ provider: 'pruna', id: created.id });
			const pollUrl = typeof created.get_url === 'string' && created.get_url ? created.get_url : statusUrl(created.id);
			return await follow(ownUrl(pollUrl, credentials, 'pruna', 'status URL'), context, false);
		},
		async resume(job, context) {
			return await follow(statusUrl(job.id), context, true);
		},
	};
}
