/**
 * A job as the API shows it (the generation object), as JSON text ready to send: its result is the
 * body a synchronous call answered, whose inline images are stored files spliced in as base64 when
 * it is sent (storage/inline-answer.ts), so neither the row nor this text holds an image.
 */
import type { GenerationResponse, VideoResult } from '../../../core/api';
import { ImageGenError } from '../../../core/errors';
import type { InlineFilePart, StoredAnswer } from '../idempotency/idempotency-store';
import type { GenerationObject, Job } from './job-store';

/** `gen_` (images) or `video_` (a video) and 32 hex digits; anything else names no job. */
const JOB_ID = /^(gen|video)_[0-9a-f]{32}$/;

/** The job `find` answers for `id`; another key's job, an unknown id and one that names no job are the same 404. */
export async function foundJob(id: string, find: (id: string) => Promise<Job | null>): Promise<Job> {
	const job = JOB_ID.test(id) ? await find(id) : null;
	if (!job) throw new ImageGenError(404, `No generation '${id}' of this API key`, { param: 'id', code: 'generation_not_found' });
	return job;
}

export const unixSeconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** The object without its result. */
function envelope(job: Job): Omit<GenerationObject, 'result'> {
	return {
		object: 'generation',
		id: job.id,
		status: job.status,
		model: job.model,
		created: unixSeconds(job.createdAt),
		finished_at: job.finishedAt ? unixSeconds(job.finishedAt) : null,
		error: job.error,
	};
}

/**
 * The object as an answer to send: JSON text whose result is the stored answer body, each inline
 * image's stored file named where its base64 goes.
 */
export function generationAnswer(job: Job): StoredAnswer {
	const { error, ...head } = envelope(job);
	const opening = `${JSON.stringify(head).slice(0, -1)},"result":`;
	const result = job.result?.body ?? 'null';
	const inlineFiles: InlineFilePart[] = (job.result?.inlineFiles ?? []).map((part) => ({ fileId: part.fileId, at: opening.length + part.at }));
	return {
		status: 200,
		contentType: 'application/json; charset=utf-8',
		body: `${opening}${result},"error":${JSON.stringify(error)}}`,
		...(inlineFiles.length > 0 ? { inlineFiles, fileIds: inlineFiles.map((part) => part.fileId) } : {}),
	};
}

/**
 * The object with its result as data; each inline image's base64 read by `inlineBase64` (a
 * listener's body, an MCP answer), or left empty without it.
 */
export async function generationObject(job: Job, inlineBase64?: (fileId: string) => Promise<string>): Promise<GenerationObject> {
	if (!inlineBase64) return generationObjectOf(job);
	const base64 = new Map<string, string>();
	for (const part of job.result?.inlineFiles ?? []) base64.set(part.fileId, await inlineBase64(part.fileId));
	return generationObjectOf(job, (fileId) => base64.get(fileId)!);
}

/** The object with its result as data, each inline image's base64 as `base64Of` gives it: empty without it (a webhook's body never carries them). */
export function generationObjectOf(job: Job, base64Of: (fileId: string) => string = () => ''): GenerationObject {
	let result: GenerationResponse | VideoResult | null = null;
	if (job.result) {
		const { body, inlineFiles = [] } = job.result;
		let text = '';
		let from = 0;
		for (const part of inlineFiles) {
			text += body.slice(from, part.at) + base64Of(part.fileId);
			from = part.at;
		}
		result = JSON.parse(text + body.slice(from)) as GenerationResponse | VideoResult;
	}
	const { error, ...head } = envelope(job);
	return { ...head, result, error };
}
