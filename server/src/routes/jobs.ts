/**
 * A key's generations as jobs: GET /v1/generations/<id>, POST /v1/generations/<id>/cancel and
 * GET /v1/generations?status=&limit=. Only the key that made a job finds it: another key's id, an
 * unknown one and one that is not a job id at all are the same 404. A succeeded job's result is
 * exactly the body its synchronous call answered, inline images streamed from storage.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod/v3';
import { GENERATION_STATUSES, generationListSchema, generationObjectSchema } from '../../../core/api';
import { foundJob, generationAnswer } from '../jobs/generation-object';
import type { Job } from '../jobs/job-store';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, type ZodTypeProvider } from '../schema-docs/route-schemas';

const params = z.object({ id: z.string().describe('The generation id, gen_…') });

const listQuery = z
	.object({
		status: z.enum(GENERATION_STATUSES).optional(),
		limit: z.coerce.number().int().min(1).max(100).default(20),
	})
	.strict();

const NOT_FOUND: [number, string] = [404, 'No generation of this key has this id; code result_gone: it succeeded, but its inline image is no longer stored (expired, or lost in a power cut)'];

/** GET and cancel: a job by its id, answered as the generation object. */
const oneJobSchema = (operationId: string, summary: string) => ({
	tags: ['Images'],
	operationId,
	summary,
	...API_KEY_AUTH,
	params,
	response: { 200: generationObjectSchema, ...errorResponses(...AUTH_ERRORS, NOT_FOUND) },
});

const getSchema = oneJobSchema('getGeneration', 'A generation job: its status, and its result once it succeeded');
const cancelSchema = oneJobSchema('cancelGeneration', 'Cancel a generation job (nothing is charged); a finished one answers its final state');

const listSchema = {
	tags: ['Images'],
	operationId: 'listGenerations',
	summary: "The key's generation jobs, newest first",
	...API_KEY_AUTH,
	querystring: listQuery,
	response: { 200: generationListSchema, ...errorResponses([400, 'A bad status or limit (param names it)'], ...AUTH_ERRORS) },
};

/**
 * A cancel carries no body, but many clients (n8n's HTTP Request node among them) send an empty one
 * labelled `application/json`, which Fastify's JSON parser refuses (FST_ERR_CTP_EMPTY_JSON_BODY).
 * In this plugin's scope only, an empty JSON body is no body; any other goes to Fastify's own parser
 * with its defaults (a `__proto__` or `constructor` key refused).
 */
function acceptEmptyJsonBodies(scope: FastifyInstance): void {
	const parseJson = scope.getDefaultJsonParser('error', 'error');
	scope.removeContentTypeParser('application/json');
	scope.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (request, body, done) => {
		if (body === '') done(null, undefined);
		else parseJson(request, body, done);
	});
}

export default async function jobRoutes(scope: FastifyInstance): Promise<void> {
	acceptEmptyJsonBodies(scope);
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	const send = (reply: FastifyReply, job: Job) => v1.idempotency.reply(reply, { ...generationAnswer(job), replayed: false });

	v1.get('/generations/:id', { schema: getSchema }, async (request, reply) => {
		return send(reply, await foundJob(request.params.id, (id) => v1.jobStore.get(id, request.apiKeyId)));
	});

	v1.post('/generations/:id/cancel', { schema: cancelSchema }, async (request, reply) => {
		return send(reply, await foundJob(request.params.id, (id) => v1.jobs.cancel(id, request.apiKeyId)));
	});

	v1.get('/generations', { schema: listSchema }, async (request, reply) => {
		const { status, limit } = request.query;
		const jobs = await v1.jobStore.list(request.apiKeyId, { ...(status ? { status } : {}), limit });
		// A job outlives its inline image by up to a sweep (the image expires from its own creation,
		// the job from its end): such a job is listed with `result: null`, not a list that fails.
		const kept = async (job: Job) => {
			const files = job.result?.inlineFiles ?? [];
			const stored = await Promise.all(files.map(async (file) => (await v1.hostedFiles.info(file.fileId, request.apiKeyId)) !== null));
			return stored.every(Boolean) ? job : { ...job, result: null };
		};
		const answers = (await Promise.all(jobs.map(kept))).map(generationAnswer);
		// Each object's text as sent alone, joined: inline images stay stored files, spliced when sent.
		let body = '{"object":"list","data":[';
		const inlineFiles = [];
		for (const [index, answer] of answers.entries()) {
			if (index > 0) body += ',';
			for (const part of answer.inlineFiles ?? []) inlineFiles.push({ fileId: part.fileId, at: body.length + part.at });
			body += answer.body;
		}
		body += ']}';
		return v1.idempotency.reply(reply, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles, replayed: false });
	});
}
