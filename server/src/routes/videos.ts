/**
 * OpenAI's videos API: POST /v1/videos (JSON or the SDKs' multipart), GET /v1/videos/<id>,
 * GET /v1/videos (newest first, `after`, `limit`), DELETE /v1/videos/<id>,
 * GET /v1/videos/<id>/content (the MP4, Range and HEAD; `variant=thumbnail` a still of its first
 * frame) and POST /v1/videos/<id>/cancel. Every video is a durable job (plugins/jobs.ts) run by the
 * shared video runner (plugins/videos.ts); the create answers at once, with the job in progress.
 * With an `Idempotency-Key` a create runs at most once per key. Only the key that made a video finds it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod/v3';
import { ImageGenError } from '../../../core/errors';
import { videoDeletedSchema, videoListSchema, videoObjectSchema } from '../../../core/video-api';
import { parseVideoRequest } from '../../../core/video-schemas';
import { fingerprintJson } from '../idempotency/idempotency';
import { keyPolicyOf } from '../keys/authenticate';
import type { Job } from '../jobs/job-store';
import { videoObject, videoResultOf } from '../jobs/video-object';
import { videoRequestJsonSchemas } from '../schema-docs/json-schema';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, EXAMPLE_PNG_DATA_URI, IDEMPOTENCY_KEY_HEADER, type BodyExamples, type ZodTypeProvider } from '../schema-docs/route-schemas';
import { sendHostedFile } from './send-file';
import { readVideoForm } from './video-form';

const ROUTE = '/v1/videos';
/** A first frame or an audio track sent as a file part is held in memory while the host works. */
const MAX_INPUT_BYTES = 50 * 1024 * 1024;
const VIDEO_ID = /^video_[0-9a-f]{32}$/;

const params = z.object({ id: z.string().describe('The video id, video_…') });
const NOT_FOUND: [number, string] = [404, 'No video of this key has this id'];

const videoBodies = videoRequestJsonSchemas();

/** The body documents only: parseVideoRequest checks both forms (a multipart form is read by video-form.ts). */
const createSchema = {
	tags: ['Videos'],
	operationId: 'createVideo',
	summary: 'Make a video (p-video): JSON or multipart, as OpenAI\'s videos API takes it; answers the job at once',
	...API_KEY_AUTH,
	headers: IDEMPOTENCY_KEY_HEADER,
	body: { content: { 'application/json': { schema: videoBodies.json }, 'multipart/form-data': { schema: videoBodies.form } } },
	bodyExamples: {
		prompt: { summary: 'Five seconds from a prompt, 16:9 at 720p', value: { model: 'p-video', prompt: 'Waves rolling onto a pebble beach at sunrise', seconds: 5, aspect_ratio: '16:9', resolution: '720p' } },
		'first frame': {
			summary: 'A draft from a first frame, as OpenAI\'s SDKs send it',
			value: { model: 'p-video', prompt: 'The colour slowly fades to deep blue', seconds: '4', input_reference: { image_url: EXAMPLE_PNG_DATA_URI }, draft: true },
		},
	} satisfies BodyExamples,
	response: {
		200: videoObjectSchema,
		...errorResponses([400, 'A field is wrong (param names it)'], ...AUTH_ERRORS, [402, "The key's budget is spent"], [409, 'Idempotency-Key reused with another body, or still running'], [413, 'Body too large']),
	},
};

const oneSchema = (operationId: string, summary: string) => ({ tags: ['Videos'], operationId, summary, ...API_KEY_AUTH, params, response: { 200: videoObjectSchema, ...errorResponses(...AUTH_ERRORS, NOT_FOUND) } });

const listQuery = z
	.object({
		after: z.string().optional().describe('The id of the last video of the previous page'),
		limit: z.coerce.number().int().min(1).max(100).default(20),
		order: z.enum(['desc']).default('desc').describe('Newest first (the only order)'),
	})
	.strict();

const listSchema = { tags: ['Videos'], operationId: 'listVideos', summary: "The key's videos, newest first", ...API_KEY_AUTH, querystring: listQuery, response: { 200: videoListSchema, ...errorResponses([400, 'A bad after, limit or order'], ...AUTH_ERRORS) } };

const deleteSchema = {
	tags: ['Videos'],
	operationId: 'deleteVideo',
	summary: 'Delete a completed or failed video and its hosted files',
	...API_KEY_AUTH,
	params,
	response: { 200: videoDeletedSchema, ...errorResponses(...AUTH_ERRORS, NOT_FOUND, [409, 'The video is still in progress: cancel it first']) },
};

const contentSchema = {
	tags: ['Videos'],
	operationId: 'downloadVideoContent',
	summary: 'The MP4 (Range and HEAD), or with variant=thumbnail a WebP still of its first frame',
	...API_KEY_AUTH,
	params,
	querystring: z.object({ variant: z.enum(['video', 'thumbnail']).default('video') }).strict(),
	response: {
		200: { description: 'The bytes', content: { 'video/mp4': { schema: { type: 'string', format: 'binary' } }, 'image/webp': { schema: { type: 'string', format: 'binary' } } } },
		...errorResponses(...AUTH_ERRORS, NOT_FOUND, [409, 'The video is not completed'], [416, 'Range not satisfiable']),
	},
};

function notFound(id: string): ImageGenError {
	return new ImageGenError(404, `No video '${id}' of this API key`, { param: 'id', code: 'video_not_found' });
}

/** The video job `find` answers for `id`; another key's, an unknown id and one that names no video are the same 404. */
async function foundVideo(id: string, find: (id: string) => Promise<Job | null>): Promise<Job> {
	const job = VIDEO_ID.test(id) ? await find(id) : null;
	if (!job) throw notFound(id);
	return job;
}

/** The first frame is `image` inside; a caller who sent it as OpenAI's `input_reference` is told that name. */
function namedAsSent(error: unknown, body: unknown): unknown {
	const sentAs = (body as { input_reference?: unknown } | null)?.input_reference;
	if (!(error instanceof ImageGenError) || error.param !== 'image' || sentAs === undefined) return error;
	return new ImageGenError(error.status, error.message.replaceAll("'image'", "'input_reference'"), { param: 'input_reference', code: error.code, cause: error });
}

export default async function videoRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();

	v1.post('/videos', { schema: createSchema }, async (request, reply) => {
		const key = v1.idempotency.keyOf(request);
		const body = request.isMultipart() ? await readVideoForm(request, Math.min(MAX_INPUT_BYTES, v1.config.maxUploadBytes)) : request.body;
		const video = parseVideoRequest(body);
		const caller = { apiKeyId: request.apiKeyId, apiKey: keyPolicyOf(request) };
		const sent = await v1.idempotency.answer(request, {
			key,
			fingerprint: () => fingerprintJson(request.method, ROUTE, body),
			run: async () => {
				// A video runs on without its client: it is fetched, or told by webhook, when it ends.
				const { job, answer } = await v1.jobs.start(video, caller).catch((error: unknown) => {
					throw namedAsSent(error, body);
				});
				void answer.catch(() => undefined);
				return videoObject(job);
			},
		});
		return v1.idempotency.reply(reply, sent);
	});

	v1.get('/videos/:id', { schema: oneSchema('getVideo', 'A video: its status, and its MP4 once completed') }, async (request) => {
		return videoObject(await foundVideo(request.params.id, (id) => v1.jobStore.get(id, request.apiKeyId)));
	});

	v1.post('/videos/:id/cancel', { schema: oneSchema('cancelVideo', 'Cancel a video in progress (nothing is charged); a finished one answers its final state') }, async (request) => {
		return videoObject(await foundVideo(request.params.id, (id) => v1.jobs.cancel(id, request.apiKeyId)));
	});

	v1.get('/videos', { schema: listSchema }, async (request) => {
		const { after, limit } = request.query;
		const jobs = await v1.jobStore.list(request.apiKeyId, { kind: 'video', limit: limit + 1, ...(after ? { after } : {}) });
		const data = jobs.slice(0, limit).map(videoObject);
		return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: jobs.length > limit };
	});

	v1.delete('/videos/:id', { schema: deleteSchema }, async (request) => {
		const job = await foundVideo(request.params.id, (id) => v1.jobStore.get(id, request.apiKeyId));
		const removed = await v1.jobStore.remove(job.id, request.apiKeyId);
		if (!removed) throw new ImageGenError(409, `The video '${job.id}' is still in progress: cancel it first`, { param: 'id', code: 'video_in_progress' });
		const result = videoResultOf(removed);
		for (const file of [result?.video, result?.thumbnail]) if (file) await v1.hostedFiles.remove(file.id, request.apiKeyId);
		return { id: removed.id, object: 'video.deleted' as const, deleted: true as const };
	});

	const content = async (request: FastifyRequest<{ Params: { id: string }; Querystring: { variant: 'video' | 'thumbnail' } }>, reply: FastifyReply) => {
		const job = await foundVideo(request.params.id, (id) => v1.jobStore.get(id, request.apiKeyId));
		const result = videoResultOf(job);
		if (!result) throw new ImageGenError(409, `The video '${job.id}' is ${videoObject(job).status}, not completed: it has no content`, { param: 'id', code: 'video_not_ready' });
		const stored = request.query.variant === 'thumbnail' ? result.thumbnail : result.video;
		const file = stored && (await v1.hostedFiles.info(stored.id, request.apiKeyId));
		if (!file) throw new ImageGenError(404, `The ${request.query.variant} of '${job.id}' is no longer stored (expired or deleted)`, { param: 'id', code: 'video_content_gone' });
		return sendHostedFile(v1, file, request, reply);
	};
	v1.get('/videos/:id/content', { exposeHeadRoute: false, schema: contentSchema }, content);
	v1.head('/videos/:id/content', { schema: { ...contentSchema, operationId: 'videoContentHeaders' } }, content);
}
