/**
 * Bearer auth and the per-key rate limit, as an onRequest hook of the scope it is registered in
 * (/v1): public routes (/files, /healthz) never see it, and unknown /v1 routes pass it first.
 * The admin key is taken only by /v1/admin/* (and GET /metrics, outside this scope); API keys
 * everywhere else, through `fastify.requireApiKey` (plugins/auth.ts), which sets
 * request.apiKeyId and request.apiKey for the routes.
 */
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

const ADMIN_PREFIX = '/v1/admin';

/** By the matched route's pattern (so no spelling of the path can slip past); by the path for unknown routes. */
function isAdminRoute(request: FastifyRequest): boolean {
	const path = request.routeOptions.url ?? request.url.split('?')[0]!;
	return path === ADMIN_PREFIX || path.startsWith(`${ADMIN_PREFIX}/`);
}

export default fp(
	async (fastify) => {
		const adminEnabled = fastify.config.adminKey !== undefined;
		fastify.addHook('onRequest', async (request) => {
			if (adminEnabled && isAdminRoute(request)) await fastify.requireAdmin(request);
			else await fastify.requireApiKey(request);
		});
	},
	{ name: 'api-guard', dependencies: ['config', 'engines', 'auth'] },
);
