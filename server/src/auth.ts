/**
 * Bearer-key authentication for /v1. Keys are compared as SHA-256 digests with timingSafeEqual, so
 * neither the key's content nor its length leaks through timing. Only the Authorization header
 * counts: a key in a query string or body never authenticates (it would end up in logs and history).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ImageGenError } from '../../core/errors';

declare module 'fastify' {
	interface FastifyRequest {
		/** Non-secret identifier of the caller's key (first 16 hex chars of its SHA-256). */
		apiKeyId: string;
	}
}

const digest = (key: string) => createHash('sha256').update(key, 'utf8').digest();

export function apiKeyIdOf(key: string): string {
	return digest(key).toString('hex').slice(0, 16);
}

export type Authenticator = (request: FastifyRequest) => void;

export function createAuthenticator(keys: readonly string[]): Authenticator {
	const known = keys.map((key) => ({ digest: digest(key), id: apiKeyIdOf(key) }));
	return (request) => {
		const header = request.headers.authorization;
		if (header === undefined || header.trim() === '') {
			throw new ImageGenError(401, 'Missing API key: send the header Authorization: Bearer <API_KEY>', {
				code: 'missing_api_key',
			});
		}
		const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
		if (!match) {
			throw new ImageGenError(401, 'Unsupported Authorization scheme: send Authorization: Bearer <API_KEY>', {
				code: 'invalid_authorization_scheme',
			});
		}
		const presented = digest(match[1]!);
		let found: string | null = null;
		// Every key is compared, match or not, so the time taken does not depend on which one matched.
		for (const candidate of known) {
			if (timingSafeEqual(presented, candidate.digest)) found = candidate.id;
		}
		if (found === null) throw new ImageGenError(401, 'Invalid API key', { code: 'invalid_api_key' });
		request.apiKeyId = found;
	};
}
