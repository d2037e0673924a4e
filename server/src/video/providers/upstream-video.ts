/**
 * `upstream` for p-video: another host of OpenAI's videos API as this service implements it
 * (another imagegen-server). POST {base}/videos (JSON: `model`, `prompt`, `seconds`, and p-video's
 * own fields, inputs as data URIs, because the upstream cannot reach what we can: loopback,
 * private networks) answers the Video object `{ id, status: queued|in_progress|completed|failed,
 * progress, error }`; its id is the job's id. GET {base}/videos/{id} is polled until completed or
 * failed, telling `progress` as it goes, and the MP4 is GET {base}/videos/{id}/content, streamed
 * with the key. `cancel` is POST {base}/videos/{id}/cancel, as this API has it (OpenAI's own API
 * has none, so a 404 there is passed over); a video is also canceled when our job stops while we
 * follow it. The key goes only to the configured origin: every call here is on it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ImageGenError } from '../../../../core/errors';
import type { VideoModelId } from '../../../../core/video-models';
import type { ProviderSettings } from '../../config';
import { hostCredentials } from '../../generation/providers/host-credentials';
import { boundedHostText } from '../../generation/providers/host-text';
import { requiredSetting } from '../../generation/providers/inputs';
import { Base64Text } from '../../generation/providers/json-body';
import { pollIntervalMs, postOnce, providerJson, providerRetryPolicy, providerStream, type ProviderTiming } from '../../generation/providers/provider-http';
import type { ProviderVideo, SettledVideoRequest, VideoContext, VideoProvider } from '../video-provider';
import { hostJobUnwanted } from '../../generation/provider';
import { invalidAnswer, loadVideoInputs, pVideoFields } from './video-inputs';

const VIDEO_STATUSES = ['queued', 'in_progress', 'completed', 'failed'] as const;

/** OpenAI's Video object, the fields of it this provider reads. */
interface UpstreamVideo {
	id?: unknown;
	status?: unknown;
	progress?: unknown;
	error?: { message?: unknown; code?: unknown } | null;
}

export function upstreamVideoProvider(model: VideoModelId, settings: ProviderSettings['upstream'], timing: ProviderTiming): VideoProvider {
	const root = requiredSetting(settings.baseUrl, 'UPSTREAM_BASE_URL (--upstream-base-url)', 'upstream', model);
	const apiKey = requiredSetting(settings.apiKey, 'UPSTREAM_API_KEY', 'upstream', model);
	const retry = providerRetryPolicy(timing);
	const pollMs = pollIntervalMs(timing);
	const credentials = hostCredentials(root, { authorization: `Bearer ${apiKey}` });
	const videoUrl = (id: string) => `${root}/videos/${encodeURIComponent(id)}`;
	const cancelVideo = (id: string) => postOnce({ provider: 'upstream', url: `${videoUrl(id)}/cancel`, credentials });

	/** Checks a Video object's shape; tells its progress. */
	function read(video: UpstreamVideo, context: VideoContext): UpstreamVideo & { id: string } {
		if (typeof video?.id !== 'string' || !video.id) throw invalidAnswer('upstream', 'a video without its id');
		if (!(VIDEO_STATUSES as readonly unknown[]).includes(video.status)) throw invalidAnswer('upstream', `a video status that is none of ${VIDEO_STATUSES.join(', ')}`);
		if (typeof video.progress === 'number' && Number.isFinite(video.progress)) context.progress?.(Math.min(100, Math.max(0, video.progress)));
		return video as UpstreamVideo & { id: string };
	}

	/** Polls the video to its end (the first poll at once when `pollAtOnce`), then streams its MP4. */
	async function follow(id: string, context: VideoContext, pollAtOnce: boolean): Promise<ProviderVideo> {
		let video: UpstreamVideo = { id, status: 'queued' };
		try {
			for (let wait = !pollAtOnce; video.status === 'queued' || video.status === 'in_progress'; wait = true) {
				if (wait) await sleep(pollMs, undefined, { signal: context.signal });
				video = read(await providerJson<UpstreamVideo>({ provider: 'upstream', method: 'GET', url: videoUrl(id), credentials, signal: context.signal, deadline: context.deadline, retry }), context);
			}
		} catch (error) {
			if (hostJobUnwanted(context.signal)) await cancelVideo(id);
			throw error;
		}
		if (video.status !== 'completed') {
			const reason = typeof video.error?.message === 'string' && video.error.message ? boundedHostText(video.error.message) : `the video ended as '${String(video.status)}'`;
			throw new ImageGenError(502, `The upstream provider failed: ${reason}`, { code: 'upstream_failed' });
		}
		const stream = await providerStream({ provider: 'upstream', method: 'GET', url: `${videoUrl(id)}/content`, headers: { accept: 'video/mp4' }, credentials, signal: context.signal, deadline: context.deadline, retry });
		return { stream };
	}

	async function body(request: SettledVideoRequest, context: VideoContext): Promise<Record<string, unknown>> {
		const inputs = await loadVideoInputs(request, context);
		const { duration, ...fields } = pVideoFields(request);
		return { model: request.model, seconds: duration, ...fields, ...Object.fromEntries(inputs.map((each) => [each.field, new Base64Text(each.bytes, `data:${each.mimeType};base64,`)])) };
	}

	return {
		name: 'upstream',
		hasJobIds: true,
		async generate(request, context) {
			const json = await body(request, context);
			const created = read(await providerJson<UpstreamVideo>({ provider: 'upstream', method: 'POST', url: `${root}/videos`, credentials, json, signal: context.signal, deadline: context.deadline, submit: true, retry }), context);
			context.hostJobNamed?.({ provider: 'upstream', id: created.id });
			try {
				await context.hostJobStarted?.({ provider: 'upstream', id: created.id });
			} catch (error) {
				// Not kept, so no one will follow it: nobody should pay for it either.
				await cancelVideo(created.id);
				throw error;
			}
			// One that ended already is read once more, at once; one still running after the interval.
			return await follow(created.id, context, created.status === 'completed' || created.status === 'failed');
		},
		async resume(job, context) {
			return await follow(job.id, context, true);
		},
		async cancel(job) {
			await cancelVideo(job.id);
		},
	};
}
