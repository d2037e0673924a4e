/**
 * A job's end as a webhook: `{ type: "generation.succeeded" | "generation.failed" |
 * "generation.canceled", timestamp, data: <generation object> }`, signed with the secret of the
 * key that made the job and enqueued in the outbox.
 *
 * The body never carries base64 images: a delivery is kept and re-sent as it is, and receivers
 * (an n8n Wait node among them) take bodies of a few MB at most. A result whose images are all URLs
 * is delivered whole; one with inline (`b64_json`) images is delivered as `result: null`, the
 * generation's id saying where to fetch it (`GET /v1/generations/<id>`).
 */
import type { GenerationObject, JobEndListener } from '../jobs/job-store';
import type { WebhookOutbox } from './outbox';

const EVENT_TYPES = { succeeded: 'generation.succeeded', failed: 'generation.failed', canceled: 'generation.canceled' } as const;

interface GenerationEvent {
	type: (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];
	timestamp: string;
	data: GenerationObject;
}

/** Null for a status that is not an end (a listener told of one has nothing to send). */
function generationEvent(generation: GenerationObject, at: Date): GenerationEvent | null {
	const type = EVENT_TYPES[generation.status as keyof typeof EVENT_TYPES];
	if (!type) return null;
	const inline = generation.result?.data.some((image) => 'b64_json' in image) ?? false;
	return { type, timestamp: at.toISOString(), data: inline ? { ...generation, result: null } : generation };
}

/** The outbox as a listener of job endings: a job with a `webhook_url` gets its delivery enqueued. */
export function webhookJobListener(outbox: WebhookOutbox, now: () => Date = () => new Date()): JobEndListener {
	return {
		async jobEnded({ apiKeyId, webhookUrl, generation }) {
			if (!webhookUrl) return;
			const event = generationEvent(generation, now());
			if (!event) return;
			await outbox.enqueue({ url: webhookUrl, signingKeyId: apiKeyId, type: event.type, body: JSON.stringify(event) });
		},
	};
}
