/**
 * GET /metrics: Prometheus' text format for this replica (each replica reports its own
 * counters). Only the admin key may read it: counters say who is busy and what is spent. Without
 * --admin-key the route does not exist (404), as the admin API does not.
 */
import type { FastifyInstance } from 'fastify';
import { ADMIN_KEY_AUTH, AUTH_ERRORS, errorResponses } from '../schema-docs/route-schemas';

const schema = {
	tags: ['Operators'],
	operationId: 'metrics',
	summary: 'Prometheus metrics of this replica (only with --admin-key)',
	...ADMIN_KEY_AUTH,
	response: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errorResponses(...AUTH_ERRORS) },
};

export default async function metricsRoutes(fastify: FastifyInstance): Promise<void> {
	if (fastify.config.adminKey === undefined) return;
	fastify.get('/metrics', { schema, onRequest: fastify.requireAdmin }, async (_request, reply) => {
		const text = await fastify.metrics.text();
		return reply.type(fastify.metrics.contentType).header('cache-control', 'no-store').send(text);
	});
}
