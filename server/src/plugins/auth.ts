/**
 * `fastify.authenticate` (who is calling: admin, flat key or managed key), `fastify.keyAdmin`
 * (managing keys on the configured engine) and `fastify.requireAdmin`, an onRequest hook for
 * routes outside /v1 that only the admin key may use (GET /metrics). The /v1 scope applies its
 * own rules in plugins/api-guard.ts.
 */
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ImageGenError } from '../../../core/errors';
import { createAuthenticator, type Authenticator } from '../auth';
import { KeyAdmin } from '../keys/key-admin';
import { ManagedKeyCache } from '../keys/key-cache';

declare module 'fastify' {
	interface FastifyInstance {
		authenticate: Authenticator;
		keyAdmin: KeyAdmin;
		/** Refuses every caller but the admin key: 403 `admin_only` for an API key, 401 for no key. */
		requireAdmin: (request: FastifyRequest) => Promise<void>;
	}
}

export function adminOnly(): ImageGenError {
	return new ImageGenError(403, 'This route takes the admin key (--admin-key), not an API key', { code: 'admin_only' });
}

export function adminKeyNotAccepted(): ImageGenError {
	return new ImageGenError(403, 'The admin key manages the service; send an API key to use it (create one with POST /v1/admin/keys)', {
		code: 'admin_key_not_accepted',
	});
}

export default fp(
	async (fastify) => {
		const managedKeys = new ManagedKeyCache(fastify.keyStore);
		const authenticate = createAuthenticator({ apiKeys: fastify.config.apiKeys, adminKey: fastify.config.adminKey, managedKeys });
		fastify.decorateRequest('apiKey', null);
		fastify.decorate('authenticate', authenticate);
		fastify.decorate('keyAdmin', new KeyAdmin(fastify.keyStore, { onChange: () => managedKeys.clear() }));
		fastify.decorate('requireAdmin', async (request: FastifyRequest) => {
			const principal = await authenticate(request);
			if (principal.kind !== 'admin') throw adminOnly();
		});
	},
	{ name: 'auth', dependencies: ['config', 'backends'] },
);
