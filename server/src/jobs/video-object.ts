/**
 * A video job as OpenAI's videos API shows it (the Video object), plus our `url` and `usage`. Our
 * job statuses map onto OpenAI's four: running is `in_progress`, succeeded `completed`, and a
 * canceled job is `failed` with the error code `canceled` (OpenAI's videos have no canceled state).
 */
import type { VideoObject, VideoResult, VideoStatus } from '../../../core/video-api';
import { videoDimensions, type VideoModelId } from '../../../core/video-models';
import type { VideoRequest } from '../../../core/video-schemas';
import type { GenerationStatus, Job } from './job-store';

const STATUSES: Readonly<Record<GenerationStatus, VideoStatus>> = {
	queued: 'queued',
	running: 'in_progress',
	succeeded: 'completed',
	failed: 'failed',
	canceled: 'failed',
};

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** The stored result of a video job that succeeded, or null. */
export function videoResultOf(job: Job): VideoResult | null {
	return job.status === 'succeeded' && job.result ? (JSON.parse(job.result.body) as VideoResult) : null;
}

export function videoObject(job: Job): VideoObject {
	const request = job.request as unknown as VideoRequest;
	const result = videoResultOf(job);
	const asked = videoDimensions(request.aspect_ratio, request.resolution);
	return {
		id: job.id,
		object: 'video',
		model: job.model as VideoModelId,
		status: STATUSES[job.status],
		progress: job.status === 'succeeded' ? 100 : 0,
		created_at: seconds(job.createdAt),
		completed_at: result && job.finishedAt ? seconds(job.finishedAt) : null,
		expires_at: result ? result.video.expires_at : null,
		seconds: String(result?.seconds ?? request.seconds),
		size: result?.size ?? `${asked.width}x${asked.height}`,
		prompt: request.prompt ?? null,
		remixed_from_video_id: null,
		error: job.error ? { code: job.error.code, message: job.error.message, param: job.error.param } : null,
		url: result?.video.url ?? null,
		usage: result?.usage ?? null,
	};
}
