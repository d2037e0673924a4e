/**
 * A job's end as a webhook: `{ type: "generation.succeeded" | "generation.failed" |
 * "generation.canceled", timestamp, data: <generation object> }`, signed with the secret of the
 * key that made the job and enqueued in the outbox.
 *
 * The body never carries base64 images: a delivery is kept and re-sent as it is, and receivers
 * (an n8n Wait node among them) take bodies of a few MB at most. A result whose images are all URLs
 * is delivered whole; one with inline (`b64_json`) images is delivered as `result: null`, the
 * generation's id saying where to fetch it (`GET /v1/generations/<id>`). A video's end is OpenAI's
 * `video.completed` / `video.failed` with the Video object (its MP4 by URL).
 */
import type { VideoObject } from '../../../core/video-api';
import { isVideoModelId } from '../../../core/video-models';
import type { GenerationObject, Job, JobEndListener } from '../jobs/job-store';
import { videoObject } from '../jobs/video-object';
import type { WebhookOutbox } from './outbox';

const EVENT_TYPES = { succeeded: 'generation.succeeded', failed: 'generation.failed', canceled: 'generation.canceled' } as const;
/** OpenAI's event names for videos: a canceled video is a failed one (its error says canceled). */
const VIDEO_EVENT_TYPES = { succeeded: 'video.completed', failed: 'video.failed', canceled: 'video.failed' } as const;

interface GenerationEvent {
	type: (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];
	timestamp: string;
	data: GenerationObject;
}

interface VideoEvent {
	type: (typeof VIDEO_EVENT_TYPES)[keyof typeof VIDEO_EVENT_TYPES];
	timestamp: string;
	data: VideoObject;
}

function videoEvent(job: Job, at: Date): VideoEvent | null {
	const type = VIDEO_EVENT_TYPES[job.status as keyof typeof VIDEO_EVENT_TYPES];
	return type ? { type, timestamp: at.toISOString(), data: videoObject(job) } : null;
}

/** Null for a status that is not an end (a listener told of one has nothing to send). */
function generationEvent(generation: GenerationObject, at: Date): GenerationEvent | null {
	const type = EVENT_TYPES[generation.status as keyof typeof EVENT_TYPES];
	if (!type) return null;
	const inline = generation.result !== null && 'data' in generation.result && generation.result.data.some((image) => 'b64_json' in image);
	return { type, timestamp: at.toISOString(), data: inline ? { ...generation, result: null } : generation };
}

/** The outbox as a listener of job endings: a job with a `webhook_url` gets its delivery enqueued. */
export function webhookJobListener(outbox: WebhookOutbox, now: () => Date = () => new Date()): JobEndListener {
	return {
		async jobEnded({ apiKeyId, webhookUrl, generation, job }) {
			if (!webhookUrl) return;
			const event = job && isVideoModelId(job.model) ? videoEvent(job, now()) : generationEvent(generation, now());
			if (!event) return;
			await outbox.enqueue({ url: webhookUrl, signingKeyId: apiKeyId, type: event.type, body: JSON.stringify(event) });
		},
	};
}
