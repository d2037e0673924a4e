/**
 * `fastify.authenticate` (who is calling: admin, flat key or managed key), `fastify.keyAdmin`
 * (managing keys on the configured engine), and two onRequest hooks: `fastify.requireAdmin` for
 * routes only the admin key may use (GET /metrics) and `fastify.requireApiKey` for routes of API
 * keys (the /v1 scope through plugins/api-guard.ts, the MCP endpoint).
 */
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ImageGenError } from '../../../core/errors';
import { createAuthenticator, isWrongKey, type Authenticator } from '../keys/authenticate';
import { AuthFailureThrottle } from '../limits/auth-failure-throttle';
import { KeyAdmin } from '../keys/key-admin';
import { ManagedKeyCache } from '../keys/key-cache';
import { StoreClock } from '../keys/store-clock';

declare module 'fastify' {
	interface FastifyInstance {
		authenticate: Authenticator;
		keyAdmin: KeyAdmin;
		/** Refuses every caller but the admin key: 403 `admin_only` for an API key, 401 for no key. */
		requireAdmin: (request: FastifyRequest) => Promise<void>;
		/**
		 * What every API-key route does first (the /v1 scope, and any other way in such as /mcp):
		 * authenticates, refuses the admin key (403 `admin_key_not_accepted`), sets request.apiKeyId
		 * and request.apiKey, and applies the key's rate limit (429).
		 */
		requireApiKey: (request: FastifyRequest) => Promise<void>;
	}
}

function adminOnly(): ImageGenError {
	return new ImageGenError(403, 'This route takes the admin key (--admin-key), not an API key', { code: 'admin_only' });
}

function adminKeyNotAccepted(): ImageGenError {
	return new ImageGenError(403, 'The admin key manages the service; send an API key to use it (create one with POST /v1/admin/keys)', {
		code: 'admin_key_not_accepted',
	});
}

export default fp(
	async (fastify) => {
		const managedKeys = new ManagedKeyCache(fastify.keyStore);
		const clock = new StoreClock(fastify.keyStore);
		// Every way to authenticate (admin, API keys, /mcp) answers by the client's failure count.
		const throttle = new AuthFailureThrottle(fastify.rateLimiter, fastify.config.authFailuresPerMinute, isWrongKey);
		const authenticate = throttle.guard(
			createAuthenticator({ apiKeys: fastify.config.apiKeys, adminKey: fastify.config.adminKey, managedKeys, now: async () => (await clock.now()).getTime() }),
		);
		fastify.decorateRequest('apiKey', null);
		fastify.decorate('authenticate', authenticate);
		fastify.decorate('keyAdmin', new KeyAdmin(fastify.keyStore, { onChange: () => managedKeys.clear(), now: () => clock.now() }));
		fastify.decorate('requireAdmin', async (request: FastifyRequest) => {
			const principal = await authenticate(request);
			if (principal.kind !== 'admin') throw adminOnly();
		});
		const limiter = fastify.rateLimiter;
		fastify.decorate('requireApiKey', async (request: FastifyRequest) => {
			const principal = await authenticate(request);
			if (principal.kind === 'admin') throw adminKeyNotAccepted();
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
	{ name: 'auth', dependencies: ['config', 'engines'] },
);
