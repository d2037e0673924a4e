/**
 * GET /v1/admin/jobs?limit: every key's newest generation jobs, for the operator page: who asked,
 * which model, how far it got, and the error code of one that failed or was canceled. Results are
 * left out: they belong to the key that made the job (GET /v1/generations/<id>).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod/v3';
import { GENERATION_STATUSES } from '../../../../core/api';
import { unixSeconds } from '../../jobs/generation-object';
import type { Job } from '../../jobs/job-store';
import { ADMIN_KEY_AUTH, AUTH_ERRORS, errorResponses, type ZodTypeProvider } from '../../schema-docs/route-schemas';

const query = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50).describe('How many, 1–100 (default 50)') }).strict();

const recentJob = z.object({
	id: z.string().describe('gen_…'),
	key_id: z.string().describe('The key that made the job'),
	model: z.string(),
	status: z.enum(GENERATION_STATUSES),
	created: z.number().int().describe('Unix seconds'),
	finished_at: z.number().int().nullable().describe('Unix seconds, null while it runs'),
	error_code: z.string().nullable().describe('Why it failed or was canceled'),
});

const schema = {
	tags: ['Operators'],
	operationId: 'adminJobs',
	summary: "Every key's newest generation jobs",
	...ADMIN_KEY_AUTH,
	querystring: query,
	response: { 200: z.object({ object: z.literal('list'), data: z.array(recentJob) }).describe('Jobs, newest first'), ...errorResponses([400, 'A bad limit'], ...AUTH_ERRORS) },
};

function recentJobOf(job: Job): z.infer<typeof recentJob> {
	return {
		id: job.id,
		key_id: job.apiKeyId,
		model: job.model,
		status: job.status,
		created: unixSeconds(job.createdAt),
		finished_at: job.finishedAt ? unixSeconds(job.finishedAt) : null,
		error_code: job.error?.code ?? null,
	};
}

export default async function adminJobRoutes(scope: FastifyInstance): Promise<void> {
	const admin = scope.withTypeProvider<ZodTypeProvider>();
	admin.get('/jobs', { schema }, async (request) => ({ object: 'list' as const, data: (await admin.jobStore.recent(request.query.limit)).map(recentJobOf) }));
}
