/**
 * POST /v1/images/generations. Receives the /v1-scoped instance: Bearer auth and rate limiting
 * have run and request.apiKeyId / request.apiKey are set. Validation and defaults come from core;
 * the run itself (key policy, provider, re-hosting, usage) is the shared `fastify.runGeneration`
 * (plugins/generation.ts). With an `Idempotency-Key` it runs at most once per key
 * (plugins/idempotency.ts).
 */
import type { FastifyInstance } from 'fastify';
import { generationResponseSchema } from '../../../core/api';
import { parseGenerationRequest } from '../../../core/schemas';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, IDEMPOTENCY_KEY_HEADER, type ZodTypeProvider } from '../schema-docs/route-schemas';
import { keyPolicyOf } from '../keys/authenticate';
import { fingerprintJson } from '../idempotency/idempotency';
import { clientGoneSignal } from '../http/client-gone';

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
	headers: IDEMPOTENCY_KEY_HEADER,
	body: { $ref: 'GenerationRequest#' },
	response: {
		200: generationResponseSchema,
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

export default async function generationRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	v1.post('/images/generations', { schema }, async (request, reply) => {
		const key = v1.idempotency.keyOf(request);
		const generation = parseGenerationRequest(request.body);
		const apiKey = keyPolicyOf(request);
		const clientGone = clientGoneSignal(reply);
		// With a key, a client that gave up will retry: the run goes on so the retry gets its answer.
		const stopWhen = key === undefined ? clientGone : new AbortController().signal;
		// Usage and budget are charged inside the run: a replayed answer is never charged again.
		return v1.idempotency.send(request, reply, {
			key,
			fingerprint: () => fingerprintJson(request.method, ROUTE, request.body),
			run: () => v1.runGeneration(generation, { apiKeyId: request.apiKeyId, apiKey, clientGone: stopWhen, keepsInlineImages: key !== undefined }),
			signal: clientGone,
		});
	});
}
