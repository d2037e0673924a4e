/**
 * GET /v1/webhooks/secret: the secret the calling key's webhook deliveries are signed with
 * (Standard Webhooks, `whsec_…`). Derived from the service secret, the key's id and, for a managed
 * key, the secret presented, so it is the same on every replica and after restarts, a key sees only
 * its own, and a rotated key has a new one (its old secret, within the grace time, gets the old).
 */
import type { FastifyInstance } from 'fastify';
import { webhookSecretResponseSchema } from '../../../core/api';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, type ZodTypeProvider } from '../schema-docs/route-schemas';

const schema = {
	// Webhooks report generations: the secret sits with them.
	tags: ['Images'],
	operationId: 'webhookSecret',
	summary: "The secret this key's webhook deliveries are signed with",
	...API_KEY_AUTH,
	response: { 200: webhookSecretResponseSchema, ...errorResponses(...AUTH_ERRORS) },
};

export default async function webhookRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	v1.get('/webhooks/secret', { schema }, async (request, reply) => {
		// A secret: never kept by a cache on the way.
		reply.header('cache-control', 'no-store');
		return { secret: await v1.webhooks.outbox.secretFor(request.apiKeyId, request.apiKey?.secretHash ?? null) };
	});
}
