/**
 * Bearer auth and the per-key rate limit, as an onRequest hook of the scope it is registered in
 * (/v1): public routes (/files, /healthz) never see it, and unknown /v1 routes pass it first.
 */
import fp from 'fastify-plugin';
import { ImageGenError } from '../../../core/errors';
import { createAuthenticator } from '../auth';

export default fp(
	async (fastify) => {
		const authenticate = createAuthenticator(fastify.config.apiKeys);
		const limiter = fastify.rateLimiter;
		fastify.addHook('onRequest', async (request) => {
			authenticate(request);
			const decision = await limiter.take(request.apiKeyId);
			if (!decision.allowed) {
				throw new ImageGenError(
					429,
					`Rate limit of ${limiter.perMinute} requests per minute reached for this API key; retry in ${decision.retryAfterSeconds} s`,
					{ retryAfterSeconds: decision.retryAfterSeconds },
				);
			}
		});
	},
	{ name: 'api-guard', dependencies: ['config', 'backends'] },
);
