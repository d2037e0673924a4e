/**
 * A job's end enqueued as the job runner writes it (webhooks/job-events.ts `jobEndEvent`, the event
 * its end's transaction inserts), for suites whose subject is the delivery rather than the job.
 */
import type { GenerationObject, Job } from '../../../server/src/jobs/job-store';
import { jobEndEvent } from '../../../server/src/webhooks/job-events';
import type { InProcessServer } from './app';

/** The job whose API object is `generation`, made by `apiKeyId`, with or without a `webhook_url`. */
export function jobOf(generation: GenerationObject, apiKeyId: string, webhookUrl: string | null): Job {
	return {
		id: generation.id,
		apiKeyId,
		model: generation.model,
		status: generation.status,
		request: {},
		webhookUrl,
		hostJob: null,
		chargedMicros: 0,
		result: generation.result && { body: JSON.stringify(generation.result) },
		error: generation.error,
		createdAt: new Date(generation.created * 1000),
		finishedAt: generation.finished_at === null ? null : new Date(generation.finished_at * 1000),
		owner: null,
		leaseUntil: null,
	};
}

/** Enqueues the delivery of a job's end, if it has one (a `webhook_url` and an ended status). */
export async function enqueueJobEnd(server: InProcessServer, ended: { apiKeyId: string; webhookUrl?: string; generation: GenerationObject }): Promise<void> {
	const event = jobEndEvent(jobOf(ended.generation, ended.apiKeyId, ended.webhookUrl ?? null), new Date());
	if (event) await server.app.webhooks.outbox.enqueue(event);
}
