/**
 * POST /v1/images/generations. Receives the /v1-scoped instance: Bearer auth and rate limiting
 * have run and request.apiKeyId is set. Validation and defaults come from core; the run itself
 * (provider, re-hosting, usage) is generation/run-generation.ts.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { parseGenerationRequest } from '../../../core/schemas';
import type { ServiceContext } from '../context';
import { createGenerationRunner } from '../generation/run-generation';

export async function registerGenerationRoutes(v1: FastifyInstance, context: ServiceContext): Promise<void> {
	const runGeneration = createGenerationRunner(context);

	v1.post('/images/generations', async (request, reply) => {
		const generation = parseGenerationRequest(request.body);
		const body = await runGeneration(generation, { apiKeyId: request.apiKeyId, clientGone: clientGoneSignal(reply) });
		return reply.send(body);
	});
}

/** Aborts when our client goes away before the answer is written. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
	const client = new AbortController();
	reply.raw.once('close', () => {
		if (!reply.raw.writableFinished) client.abort(new Error('client closed the connection'));
	});
	return client.signal;
}
