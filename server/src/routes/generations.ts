/**
 * POST /v1/images/generations. Receives the /v1-scoped instance: Bearer auth and rate limiting
 * have run and request.apiKeyId / request.apiKey are set. Validation and defaults come from core;
 * the run itself (key policy, provider, re-hosting, usage) is the shared `fastify.runGeneration`
 * (plugins/generation.ts). With an `Idempotency-Key` it runs at most once per key
 * (plugins/idempotency.ts).
 */
import type { FastifyInstance } from 'fastify';
import { parseGenerationRequest } from '../../../core/schemas';
import { keyPolicyOf } from '../keys/authenticate';
import { fingerprintJson } from '../idempotency/idempotency';
import { clientGoneSignal } from '../http/client-gone';

const ROUTE = '/v1/images/generations';

export default async function generationRoutes(v1: FastifyInstance): Promise<void> {
	v1.post('/images/generations', async (request, reply) => {
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
			run: () => v1.runGeneration(generation, { apiKeyId: request.apiKeyId, apiKey, clientGone: stopWhen }),
			signal: clientGone,
		});
	});
}
