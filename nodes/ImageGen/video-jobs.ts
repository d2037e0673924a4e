/**
 * Videos as OpenAI's videos API has them: `POST /videos` answers at once with a Video object,
 * which the node then follows with `GET /videos/<id>` until it is completed or failed, or hands on
 * as it is (Wait for Result "Submit"). A video takes minutes, so no request is ever held open for it.
 */
import type { IDataObject, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { callApiForResponse, describedApiError, type ApiCall } from '../shared/transport';
import { FIRST_POLL_MS, LONGEST_POLL_MS, POLL_GROWTH, SHORTEST_POLL_MS, pause, retryAfterOf, type JobCall } from './jobs';

type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'canceled';

const STATUSES: readonly VideoStatus[] = ['queued', 'in_progress', 'completed', 'failed', 'canceled'];
const FINAL: readonly VideoStatus[] = ['completed', 'failed', 'canceled'];

/** A Video object as answered; `body` is kept whole, it is what Submit outputs. */
export interface Video {
	id: string;
	status: VideoStatus;
	body: IDataObject;
}

interface Polled {
	video: Video;
	retryAfterMs?: number;
}

export async function submitVideo(call: JobCall, body: IDataObject, headers: Record<string, string>, parameterNames: Readonly<Record<string, string>>): Promise<Polled> {
	const response = await callApiForResponse(call.context, {
		method: 'POST',
		path: '/videos',
		body: () => ({ ...body }),
		headers,
		itemIndex: call.itemIndex,
		parameterNames,
		...call.settings,
	});
	return polled(call, response.body, retryAfterOf(response));
}

/**
 * Follows a video until it ends or `maxWaitSeconds` have passed since it was submitted; then it
 * is canceled (best effort) and the item fails naming Max Wait. A video that ended meanwhile is
 * answered by the cancel with its end, which is used as any other end.
 */
export async function waitForVideo(call: JobCall, submitted: Polled, maxWaitSeconds: number): Promise<Video> {
	const deadline = Date.now() + maxWaitSeconds * 1000;
	let { video, retryAfterMs } = submitted;
	let interval = FIRST_POLL_MS;
	const aborted = () => call.context.getExecutionCancelSignal()?.aborted === true;
	while (!FINAL.includes(video.status)) {
		const remaining = deadline - Date.now();
		if (remaining <= 0 || aborted()) {
			const answered = await cancelVideo(call, video.id);
			if (answered && answered.status !== 'canceled' && FINAL.includes(answered.status) && !isCancelFailure(answered)) return answered;
			const canceled = answered && FINAL.includes(answered.status) ? 'it was canceled' : 'a cancel was asked for but not confirmed';
			if (aborted()) throw new NodeOperationError(call.context.getNode(), `The execution was canceled while video ${video.id} was ${video.status}; ${canceled}`, { itemIndex: call.itemIndex });
			throw maxWaitReached(call, video, maxWaitSeconds, canceled);
		}
		await pause(Math.min(Math.max(retryAfterMs ?? interval, SHORTEST_POLL_MS), remaining), aborted);
		interval = Math.min(interval * POLL_GROWTH, LONGEST_POLL_MS);
		if (aborted()) continue;
		({ video, retryAfterMs } = await fetchVideo(call, video.id));
	}
	return video;
}

export async function fetchVideo(call: JobCall, id: string): Promise<Polled> {
	const response = await callApiForResponse(call.context, { method: 'GET', path: videoPath(id), itemIndex: call.itemIndex, ...call.settings });
	return polled(call, response.body, retryAfterOf(response));
}

/** Best effort: the video as the cancel answered it, or nothing when the cancel failed. */
async function cancelVideo(call: JobCall, id: string): Promise<Video | undefined> {
	const cancel: ApiCall = {
		method: 'POST',
		path: `${videoPath(id)}/cancel`,
		itemIndex: call.itemIndex,
		timeoutMs: call.settings.timeoutMs,
		retry: { ...call.settings.retry, maxRetries: 0 },
	};
	try {
		return readVideo(call, (await callApiForResponse(call.context, cancel)).body);
	} catch {
		return undefined;
	}
}

/** A video that failed because it was canceled: OpenAI's API has no `canceled` status, only a failure saying so. */
function isCancelFailure(video: Video): boolean {
	const error = video.body.error as { code?: unknown } | null | undefined;
	return video.status === 'failed' && typeof error?.code === 'string' && /cancel/i.test(error.code);
}

/**
 * The item's failure for a video that ended without an MP4: the service's own message, and the
 * parameter behind the field it names, when it names one.
 */
export function videoFailure(call: JobCall, video: Video, parameterNames: Readonly<Record<string, string>>): NodeApiError | NodeOperationError {
	const error = (typeof video.body.error === 'object' && video.body.error !== null ? video.body.error : {}) as { message?: unknown; code?: unknown; param?: unknown; type?: unknown };
	const message = typeof error.message === 'string' && error.message !== '' ? error.message : `Video ${video.id} ended ${video.status} without a video`;
	const code = typeof error.code === 'string' ? error.code : '';
	if (typeof error.param === 'string' && error.param !== '') {
		const body = { error: { message, type: typeof error.type === 'string' ? error.type : 'invalid_request_error', param: error.param, code } };
		return describedApiError(call.context, body, { origin: `video ${video.id} failed`, itemIndex: call.itemIndex, parameterNames });
	}
	return new NodeOperationError(call.context.getNode(), message, {
		itemIndex: call.itemIndex,
		description: `Video ${video.id} ended ${video.status}${code ? ` (code ${code})` : ''}; nothing is charged for it.`,
	});
}

function maxWaitReached(call: JobCall, video: Video, maxWaitSeconds: number, canceled: string): NodeOperationError {
	return new NodeOperationError(call.context.getNode(), `Max Wait (Seconds) reached: video ${video.id} was still ${video.status} after ${maxWaitSeconds} s; ${canceled}`, {
		itemIndex: call.itemIndex,
		description: "Raise the option 'Max Wait (Seconds)' (maxWaitSeconds), or choose Wait for Result 'Submit' and fetch the video later with the operation Get Generation.",
	});
}

function polled(call: JobCall, body: unknown, retryAfterMs: number | undefined): Polled {
	return { video: readVideo(call, body), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/** A Video object, or an error saying the answer is not one (another API behind the Base URL). */
export function readVideo(call: JobCall, body: unknown): Video {
	const fields = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as IDataObject;
	const status = STATUSES.find((state) => state === fields.status);
	if (typeof fields.id !== 'string' || fields.id === '' || status === undefined) {
		throw new NodeApiError(call.context.getNode(), { body: JSON.stringify(body ?? null).slice(0, 2000) } as JsonObject, {
			message: 'The ImageGen API answered without a video: a Video object needs an id and a status',
			description: 'Check that the Base URL of the ImageGen API credential points at an ImageGen service that makes videos.',
			itemIndex: call.itemIndex,
		});
	}
	return { id: fields.id, status, body: fields };
}

export function videoPath(id: string): string {
	return `/videos/${encodeURIComponent(id)}`;
}
