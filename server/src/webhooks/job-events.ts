/**
 * A job's end as a webhook: `{ type: "generation.succeeded" | "generation.failed" |
 * "generation.canceled", timestamp, data: <generation object> }`, signed with the secret of the
 * key that made the job and enqueued in the outbox in the same transaction as the end itself, so
 * that no crash can leave an end without its delivery.
 *
 * The body never carries base64 images: a delivery is kept and re-sent as it is, and receivers
 * (an n8n Wait node among them) take bodies of a few MB at most. A result whose images are all URLs
 * is delivered whole; one with inline (`b64_json`) images is delivered as `result: null`, the
 * generation's id saying where to fetch it (`GET /v1/generations/<id>`). A video's end is OpenAI's
 * `video.completed` / `video.failed` with the Video object (its MP4 by URL).
 */
import type { VideoObject } from '../../../core/video-api';
import { isVideoModelId } from '../../../core/video-models';
import { generationObjectOf } from '../jobs/generation-object';
import type { GenerationObject, Job, JobEndDeliveries } from '../jobs/job-store';
import { videoObject } from '../jobs/video-object';
import type { OutgoingEvent, WebhookOutbox } from './outbox';

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

/**
 * A job's end as the event its `webhook_url` is sent: null without one, or for a status that is not
 * an end. Its delivery's id is the job's own (`msg_<job id>`): a job ends once.
 */
export function jobEndEvent(job: Job, at: Date): (OutgoingEvent & { id: string }) | null {
	if (!job.webhookUrl) return null;
	const event = isVideoModelId(job.model) ? videoEvent(job, at) : generationEvent(generationObjectOf(job), at);
	return event && { id: `msg_${job.id}`, url: job.webhookUrl, signingKeyId: job.apiKeyId, type: event.type, body: JSON.stringify(event) };
}

/** Each job's webhook delivery, written in the transaction of the job's end (jobs/job-store.ts `alongside`). */
export function jobEndDeliveries(outbox: WebhookOutbox, now: () => Date = () => new Date()): JobEndDeliveries {
	return {
		writes(ended) {
			const event = jobEndEvent(ended, now());
			return event ? [outbox.enqueueStatement(event)] : [];
		},
		async committed(ended) {
			const event = jobEndEvent(ended, now());
			if (event) await outbox.committed(event);
		},
	};
}
