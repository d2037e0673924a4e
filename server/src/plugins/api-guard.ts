/**
 * Bearer auth and the per-key rate limit, as an onRequest hook of the scope it is registered in
 * (/v1): public routes (/files, /healthz) never see it, and unknown /v1 routes pass it first.
 * The admin key is taken only by /v1/admin/* (and GET /metrics, outside this scope); API keys
 * everywhere else. Sets request.apiKeyId and request.apiKey for the routes.
 */
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ImageGenError } from '../../../core/errors';
import { adminKeyNotAccepted, adminOnly } from './auth';

export const ADMIN_PREFIX = '/v1/admin';

/** By the matched route's pattern (so no spelling of the path can slip past); by the path for unknown routes. */
function isAdminRoute(request: FastifyRequest): boolean {
	const path = request.routeOptions.url ?? request.url.split('?')[0]!;
	return path === ADMIN_PREFIX || path.startsWith(`${ADMIN_PREFIX}/`);
}

export default fp(
	async (fastify) => {
		const limiter = fastify.rateLimiter;
		const adminEnabled = fastify.config.adminKey !== undefined;
		fastify.addHook('onRequest', async (request) => {
			const principal = await fastify.authenticate(request);
			const adminRoute = adminEnabled && isAdminRoute(request);
			if (principal.kind === 'admin') {
				if (!adminRoute) throw adminKeyNotAccepted();
				return;
			}
			if (adminRoute) throw adminOnly();
			request.apiKey = principal.key;
			request.apiKeyId = principal.key.id;
			const perMinute = principal.key.rateLimitPerMinute ?? limiter.perMinute;
			const decision = await limiter.take(request.apiKeyId, perMinute);
			if (!decision.allowed) {
				throw new ImageGenError(
					429,
					`Rate limit of ${perMinute} requests per minute reached for this API key; retry in ${decision.retryAfterSeconds} s`,
					{ retryAfterSeconds: decision.retryAfterSeconds },
				);
			}
		});
	},
	{ name: 'api-guard', dependencies: ['config', 'backends', 'auth'] },
);
