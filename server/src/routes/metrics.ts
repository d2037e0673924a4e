/**
 * GET /metrics: Prometheus' text format for this replica (each replica reports its own
 * counters). Only the admin key may read it: counters say who is busy and what is spent. Without
 * --admin-key the route does not exist (404), as the admin API does not.
 */
import type { FastifyInstance } from 'fastify';

export default async function metricsRoutes(fastify: FastifyInstance): Promise<void> {
	if (fastify.config.adminKey === undefined) return;
	fastify.get('/metrics', { onRequest: fastify.requireAdmin }, async (_request, reply) => {
		const text = await fastify.metrics.text();
		return reply.type(fastify.metrics.contentType).header('cache-control', 'no-store').send(text);
	});
}
