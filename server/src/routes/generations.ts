/**
 * POST /v1/images/generations. Receives the /v1-scoped instance: Bearer auth and rate limiting
 * have run and request.apiKeyId / request.apiKey are set. Validation and defaults come from core;
 * the run itself (key policy, provider, re-hosting, usage) is the shared `fastify.runGeneration`
 * (plugins/generation.ts), as a durable job (plugins/jobs.ts). With an `Idempotency-Key` it runs at
 * most once per key (plugins/idempotency.ts). With `Prefer: respond-async` (RFC 7240) it answers
 * 202 and the job as soon as the job is written, and the job runs on without its client. A
 * generated answer says where its time went in `Server-Timing` (host, mark, total).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { generationObjectSchema, generationResponseSchema } from '../../../core/api';
import { parseGenerationRequest } from '../../../core/schemas';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, EXAMPLE_PNG_DATA_URI, IDEMPOTENCY_KEY_HEADER, type BodyExamples, type ZodTypeProvider } from '../schema-docs/route-schemas';
import { keyPolicyOf } from '../keys/authenticate';
import { fingerprintJson } from '../idempotency/idempotency';
import { clientGoneSignal } from '../http/client-gone';
import { generationAnswer } from '../jobs/generation-object';
import { resolveModelAlias } from '../generation/model-aliases';
import { GenerationTimings } from '../generation/generation-timings';
import { serverTimingHeader } from '../http/server-timing';

const ROUTE = '/v1/images/generations';

/**
 * The body documents only (the shared `GenerationRequest`, one shape per model): core's parser
 * checks it in the handler, after the Idempotency-Key, with its own wording for each refusal.
 */
const schema = {
	tags: ['Images'],
	operationId: 'generateImage',
	summary: 'Generate an image; the fields accepted depend on the model',
	...API_KEY_AUTH,
	headers: {
		...IDEMPOTENCY_KEY_HEADER,
		properties: {
			...IDEMPOTENCY_KEY_HEADER.properties,
			prefer: { type: 'string', description: 'respond-async: answer 202 with the generation job at once, and fetch it at its Location' },
		},
	},
	body: { $ref: 'GenerationRequest#' },
	bodyExamples: {
		'p-image': { summary: 'p-image: an image from a prompt', value: { model: 'p-image', prompt: 'A lighthouse on a cliff at dusk, watercolour', aspect_ratio: '16:9' } },
		'p-image-edit': {
			summary: 'p-image-edit: an input image changed as the prompt says',
			value: { model: 'p-image-edit', prompt: 'Turn it into a sunset sky with a few clouds', images: [EXAMPLE_PNG_DATA_URI] },
		},
		'textimage-v2': {
			summary: 'textimage-v2: lettering and design',
			value: { model: 'textimage-v2', prompt: 'A poster that reads "Open late" in bold letters', style_type: 'DESIGN', aspect_ratio: '3:4' },
		},
	} satisfies BodyExamples,
	response: {
		200: generationResponseSchema,
		202: generationObjectSchema.describe('The job, accepted (Prefer: respond-async); fetch it at Location'),
		...errorResponses(
			[400, 'A field is wrong (param names it)'],
			...AUTH_ERRORS,
			[402, "The key's budget is spent"],
			[409, 'Idempotency-Key reused with another body, or still running'],
			[413, 'Body too large'],
			[502, 'The provider failed'],
			[503, 'No provider available; see Retry-After'],
			[504, 'The provider took too long'],
		),
	},
};

/** `Prefer: respond-async` among the request's preferences (RFC 7240: tokens are case-insensitive, may carry a value). */
function prefersAsync(request: FastifyRequest): boolean {
	const header = request.headers.prefer;
	const preferences = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
	return preferences.some((preference) => preference.split(';')[0]!.split('=')[0]!.trim().toLowerCase() === 'respond-async');
}

/**
 * The host's share, the marking (absent with `--provenance off`: nothing is marked) and the total,
 * from the request's arrival to its answer being ready to send.
 */
function generationServerTiming(timings: GenerationTimings, totalMs: number): string {
	const marked = timings.markMs === undefined ? [] : [{ name: 'mark', durationMs: timings.markMs }];
	return serverTimingHeader([{ name: 'host', durationMs: timings.hostMs }, ...marked, { name: 'total', durationMs: totalMs }]);
}

export default async function generationRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	v1.post('/images/generations', { schema }, async (request, reply) => {
		const key = v1.idempotency.keyOf(request);
		const generation = parseGenerationRequest(resolveModelAlias(request.body, v1.config.modelAliases));
		const apiKey = keyPolicyOf(request);
		const clientGone = clientGoneSignal(reply);
		const caller = { apiKeyId: request.apiKeyId, apiKey };
		if (prefersAsync(request)) {
			// Another answer than the synchronous one: a key used for both is a different request.
			const sent = await v1.idempotency.answer(request, {
				key,
				fingerprint: () => fingerprintJson(request.method, `${ROUTE} respond-async`, request.body),
				run: async () => {
					const { job, answer } = await v1.jobs.start(generation, caller);
					void answer.catch(() => undefined);
					return JSON.parse(generationAnswer(job).body) as unknown;
				},
				signal: clientGone,
			});
			const { id } = JSON.parse(sent.body) as { id: string };
			reply.header('location', `/v1/generations/${id}`).header('preference-applied', 'respond-async');
			return v1.idempotency.reply(reply, { ...sent, status: 202 });
		}
		// With a key, a client that gave up will retry: the job goes on so the retry gets its answer.
		const stopWhen = key === undefined ? clientGone : undefined;
		// Inline images are kept for whoever can ask for them again: a replay, or a webhook's receiver.
		const keepsInlineImages = key !== undefined || generation.webhook_url !== undefined;
		const timings = new GenerationTimings();
		// Usage and budget are charged inside the run: a replayed answer is never charged again.
		return v1.idempotency.send(request, reply, {
			key,
			fingerprint: () => fingerprintJson(request.method, ROUTE, request.body),
			run: async () => {
				const answer = await (await v1.jobs.start(generation, { ...caller, keepsInlineImages, timings, ...(stopWhen ? { clientGone: stopWhen } : {}) })).answer;
				// Only an answer generated now has timings: a replay made nothing.
				reply.header('server-timing', generationServerTiming(timings, reply.elapsedTime));
				return answer;
			},
			signal: clientGone,
		});
	});
}
