/**
 * Bearer-key authentication. Who the caller is: the admin (`--admin-key`), a flat key
 * (`--api-keys` or the generated key) or a managed key (issued through the admin API or
 * `imagegen-server keys`). Flat and admin keys are compared as SHA-256 digests with
 * timingSafeEqual, so neither their content nor their length leaks through timing; a managed key
 * is found by the SHA-256 of the secret, the only form in which it is stored. Only the
 * Authorization header counts: a key in a query string or body never authenticates (it would end
 * up in logs and history).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import type { CatalogModelId } from '../../../core/video-models';
import type { ManagedKeyCache } from './key-cache';
import type { KeyBudget, ManagedKey } from './managed-key';

/** What a key may do; flat keys may do everything. Generation enforces it (generation/key-policy.ts). */
export interface ApiKeyPolicy {
	/** The same as request.apiKeyId. */
	id: string;
	managed: boolean;
	/** null: every model. */
	models: readonly CatalogModelId[] | null;
	/** null: the service's default. */
	rateLimitPerMinute: number | null;
	budget: KeyBudget | null;
	/**
	 * A managed key's: the hash of the secret this request presented (the current one, or the one a
	 * rotation replaced, within its grace time), which its webhook signing secret is derived from.
	 */
	secretHash?: string;
}

export type Principal = { kind: 'admin' } | { kind: 'api_key'; key: ApiKeyPolicy };

declare module 'fastify' {
	interface FastifyRequest {
		/**
		 * Non-secret, stable identifier of the caller's key: usage, file ownership, idempotency keys
		 * and rate limits are kept under it. A flat key's is the first 16 hex chars of its SHA-256;
		 * a managed key's is its `key_…` id, which survives rotation.
		 */
		apiKeyId: string;
		/** The caller's key and its limits (set with apiKeyId; null for the admin key). */
		apiKey: ApiKeyPolicy | null;
	}
}

const digest = (key: string) => createHash('sha256').update(key, 'utf8').digest();

export function apiKeyIdOf(key: string): string {
	return digest(key).toString('hex').slice(0, 16);
}

export function flatKeyPolicy(id: string): ApiKeyPolicy {
	return { id, managed: false, models: null, rateLimitPerMinute: null, budget: null };
}

function managedKeyPolicy(key: ManagedKey, presentedHash: string): ApiKeyPolicy {
	return { id: key.id, managed: true, models: key.models, rateLimitPerMinute: key.rateLimitPerMinute, budget: key.budget, secretHash: presentedHash };
}

/** The caller's key policy, set by the /v1 guard; only the admin key has none, and it never reaches these routes. */
export function keyPolicyOf(request: FastifyRequest): ApiKeyPolicy {
	if (!request.apiKey) throw new ImageGenError(403, 'This route takes an API key', { code: 'admin_key_not_accepted' });
	return request.apiKey;
}

interface AuthenticatorOptions {
	apiKeys: readonly string[];
	adminKey?: string;
	managedKeys?: ManagedKeyCache;
	/** Judges managed keys' expiry and rotation grace (the key store's clock). */
	now?: () => number | Promise<number>;
}

export type Authenticator = (request: FastifyRequest) => Promise<Principal>;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
	const now = options.now ?? Date.now;
	const flat = options.apiKeys.map((key) => ({ digest: digest(key), id: apiKeyIdOf(key) }));
	const admin = options.adminKey === undefined ? undefined : digest(options.adminKey);
	return async (request) => {
		const presented = bearerOf(request);
		const presentedDigest = digest(presented);
		let found: string | null = null;
		// Every key is compared, match or not, so the time taken does not depend on which one matched.
		for (const candidate of flat) {
			if (timingSafeEqual(presentedDigest, candidate.digest)) found = candidate.id;
		}
		const isAdmin = admin !== undefined && timingSafeEqual(presentedDigest, admin);
		if (isAdmin) return { kind: 'admin' };
		if (found !== null) return { kind: 'api_key', key: flatKeyPolicy(found) };
		if (options.managedKeys) {
			const hash = presentedDigest.toString('hex');
			const key = await options.managedKeys.lookup(hash);
			if (key) return { kind: 'api_key', key: managedKeyPolicy(admitManaged(key, hash, await now()), hash) };
		}
		throw invalidKey();
	};
}

/** The key if it may be used now; else the 401 that says why. */
function admitManaged(key: ManagedKey, hash: string, now: number): ManagedKey {
	if (key.revokedAt !== null) throw invalidKey();
	if (key.secretHash !== hash && !(key.previousSecretHash === hash && key.previousValidUntil !== null && key.previousValidUntil.getTime() > now)) {
		// The secret replaced by a rotation whose grace time has passed.
		throw invalidKey();
	}
	if (key.expiresAt !== null && key.expiresAt.getTime() <= now) {
		throw new ImageGenError(401, `This API key expired at ${key.expiresAt.toISOString()}`, { code: 'key_expired' });
	}
	if (key.blocked) throw new ImageGenError(401, 'This API key is blocked; ask the operator of this service', { code: 'key_blocked' });
	return key;
}

const INVALID_API_KEY = 'invalid_api_key';

/** A key that matched nothing (wrong, revoked, or rotated out): what guessing gets. */
export function isWrongKey(error: unknown): boolean {
	return error instanceof ImageGenError && error.code === INVALID_API_KEY;
}

function invalidKey(): ImageGenError {
	return new ImageGenError(401, 'Invalid API key', { code: INVALID_API_KEY });
}

function bearerOf(request: FastifyRequest): string {
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
	return match[1]!;
}
