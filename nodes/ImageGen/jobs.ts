/**
 * Generations as jobs: a request sent with `Prefer: respond-async` is
 * answered at once with a generation object, which the node then follows with
 * `GET /generations/<id>` until it ends, or hands on as it is. A service that does not know jobs
 * (an older one, another OpenAI-compatible API) ignores the header and answers with the image.
 */
import type { IDataObject, IExecuteFunctions, IN8nHttpFullResponse, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError, sleep } from 'n8n-workflow';

import { isApiErrorBody } from '../../core/errors';
import { parseRetryAfter } from '../../core/retry-policy';
import { callApiForResponse, describedApiError, type ApiCall } from '../shared/transport';
import type { RequestSettings } from '../shared/uploads';

type GenerationStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

const STATUSES: readonly GenerationStatus[] = ['queued', 'running', 'succeeded', 'failed', 'canceled'];
const FINAL: readonly GenerationStatus[] = ['succeeded', 'failed', 'canceled'];

/** A generation object as answered; `body` is kept whole, it is what Submit and Get Generation output. */
interface Generation {
	id: string;
	status: GenerationStatus;
	body: IDataObject;
	/** The answer a synchronous call would have given, once the job succeeded. */
	result: unknown;
}

/** What a generation request was answered with: a job to follow, or (a service without jobs) the image itself. */
type Submitted = { job: Generation; retryAfterMs?: number } | { answer: unknown };

// Polls start after 250 ms and grow by half up to every 5 s: a fast host (the sandbox answers in
// tens of ms) is seen at once, a slow one (minutes) costs a request every 5 s. A Retry-After from
// the service overrides the pause.
export const FIRST_POLL_MS = 250;
export const POLL_GROWTH = 1.5;
export const LONGEST_POLL_MS = 5000;
// A Retry-After of 0 must not turn into a tight loop against the service.
export const SHORTEST_POLL_MS = 250;
// Pauses are slept in slices, so a canceled execution stops polling within a second.
const PAUSE_SLICE_MS = 1000;

export interface JobCall {
	context: IExecuteFunctions;
	itemIndex: number;
	settings: RequestSettings;
}

export async function submitGeneration(call: JobCall, body: IDataObject, headers: Record<string, string>, parameterNames: Readonly<Record<string, string>>): Promise<Submitted> {
	const response = await callApiForResponse(call.context, {
		method: 'POST',
		path: '/images/generations',
		body: () => ({ ...body }),
		headers: { ...headers, Prefer: 'respond-async' },
		itemIndex: call.itemIndex,
		parameterNames,
		...call.settings,
	});
	if (response.statusCode !== 202 && !isGenerationObject(response.body)) return { answer: response.body };
	const retryAfterMs = retryAfterOf(response);
	return { job: readGeneration(call, response.body), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/**
 * Follows a job until it ends or `maxWaitSeconds` have passed since it was submitted; then it is
 * canceled (best effort) and the item fails naming Max Wait. A job that ended meanwhile is
 * answered by the cancel with its end, which is used as any other end.
 */
export async function waitForGeneration(call: JobCall, submitted: { job: Generation; retryAfterMs?: number }, maxWaitSeconds: number): Promise<Generation> {
	const deadline = Date.now() + maxWaitSeconds * 1000;
	let { job, retryAfterMs } = submitted;
	let interval = FIRST_POLL_MS;
	const aborted = () => call.context.getExecutionCancelSignal()?.aborted === true;
	while (!isFinal(job)) {
		const remaining = deadline - Date.now();
		if (remaining <= 0 || aborted()) {
			const answered = await cancelGeneration(call, job.id);
			// A job that ended on its own meanwhile: the cancel answers with that end.
			if (answered && answered.status !== 'canceled' && isFinal(answered)) return answered;
			const canceled = answered?.status === 'canceled' ? 'it was canceled' : 'a cancel was asked for but not confirmed';
			if (aborted()) throw new NodeOperationError(call.context.getNode(), `The execution was canceled while generation ${job.id} was ${job.status}; ${canceled}`, { itemIndex: call.itemIndex });
			throw maxWaitReached(call, job, maxWaitSeconds, canceled);
		}
		await pause(Math.min(Math.max(retryAfterMs ?? interval, SHORTEST_POLL_MS), remaining), aborted);
		interval = Math.min(interval * POLL_GROWTH, LONGEST_POLL_MS);
		if (aborted()) continue;
		({ job, retryAfterMs } = await fetchGeneration(call, job.id));
	}
	return job;
}

export async function fetchGeneration(call: JobCall, id: string, notFoundParameter?: string): Promise<{ job: Generation; retryAfterMs?: number }> {
	const response = await callApiForResponse(call.context, { method: 'GET', path: generationPath(id), itemIndex: call.itemIndex, notFoundParameter, ...call.settings });
	const retryAfterMs = retryAfterOf(response);
	return { job: readGeneration(call, response.body), ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
}

/** Best effort: the job's state as the cancel answered it, or nothing when the cancel failed. */
async function cancelGeneration(call: JobCall, id: string): Promise<Generation | undefined> {
	const cancel: ApiCall = {
		method: 'POST',
		path: `${generationPath(id)}/cancel`,
		itemIndex: call.itemIndex,
		timeoutMs: call.settings.timeoutMs,
		retry: { ...call.settings.retry, maxRetries: 0 },
	};
	try {
		return readGeneration(call, (await callApiForResponse(call.context, cancel)).body);
	} catch {
		return undefined;
	}
}

/** The item's failure for a job that ended without an image: the API's own message and field. */
export function generationFailure(call: JobCall, job: Generation, parameterNames: Readonly<Record<string, string>>): NodeApiError | NodeOperationError {
	const error = job.body.error;
	if (job.status === 'failed' && isApiErrorBody({ error })) {
		return describedApiError(call.context, { error } as never, { origin: `generation ${job.id} failed`, itemIndex: call.itemIndex, parameterNames });
	}
	return new NodeOperationError(call.context.getNode(), `Generation ${job.id} ended ${job.status} without an image`, {
		itemIndex: call.itemIndex,
		description: job.status === 'canceled' ? 'It was canceled through the API before it finished.' : undefined,
	});
}

function maxWaitReached(call: JobCall, job: Generation, maxWaitSeconds: number, canceled: string): NodeOperationError {
	return new NodeOperationError(
		call.context.getNode(),
		`Max Wait (Seconds) reached: generation ${job.id} was still ${job.status} after ${maxWaitSeconds} s; ${canceled}`,
		{
			itemIndex: call.itemIndex,
			description: "Raise the option 'Max Wait (Seconds)' (maxWaitSeconds), or choose Wait for Result 'Submit' and fetch the generation later with the operation Get Generation.",
		},
	);
}

function isFinal(job: Generation): boolean {
	return FINAL.includes(job.status);
}

function isGenerationObject(body: unknown): boolean {
	return typeof body === 'object' && body !== null && (body as { object?: unknown }).object === 'generation';
}

function readGeneration(call: JobCall, body: unknown): Generation {
	const fields = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as IDataObject;
	const status = STATUSES.find((state) => state === fields.status);
	if (typeof fields.id !== 'string' || fields.id === '' || status === undefined) {
		throw new NodeApiError(call.context.getNode(), { body: JSON.stringify(body ?? null).slice(0, 2000) } as JsonObject, {
			message: 'The ImageGen API answered without a generation: a generation object needs an id and a status',
			description: 'Check that the Base URL of the ImageGen API credential points at an ImageGen service.',
			itemIndex: call.itemIndex,
		});
	}
	return { id: fields.id, status, body: fields, result: fields.result };
}

function generationPath(id: string): string {
	return `/generations/${encodeURIComponent(id)}`;
}

export function retryAfterOf(response: IN8nHttpFullResponse): number | undefined {
	return parseRetryAfter(response.headers['retry-after']);
}

/** Sleeps `ms` in slices, returning early once `aborted` says so. */
export async function pause(ms: number, aborted: () => boolean): Promise<void> {
	for (let left = ms; left > 0 && !aborted(); left -= PAUSE_SLICE_MS) await sleep(Math.min(left, PAUSE_SLICE_MS));
}
