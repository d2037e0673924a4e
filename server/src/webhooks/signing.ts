/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` is
 * `v1,<base64 of HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the
 * bytes of the receiver's secret, which it is given as `whsec_<base64>`.
 *
 * Each API key has its own secret, derived from the service secret (kept in the engines, the same
 * for every replica) by HMAC over the key's id: stable across restarts and replicas, never stored,
 * and a key's secret says nothing of another's, so a tenant can never sign for another. A managed
 * key's is derived over the hash of its secret too, so rotating the key gives it a new one: whoever
 * held the old key learns nothing of it. A flat key's id is made from the key itself already.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** The service secret's row name, and its size: 32 bytes, HMAC-SHA256's own block of entropy. */
export const SERVICE_SECRET_NAME = 'webhook-signing';
const SERVICE_SECRET_BYTES = 32;

export const newServiceSecret = (): Buffer => randomBytes(SERVICE_SECRET_BYTES);

/**
 * The 32 signing bytes of one API key (the spec asks for 24 to 64); `secretHash`: a managed key's
 * (`ManagedKey.secretHash`), null for a flat key.
 */
export function keySigningSecret(serviceSecret: Buffer, apiKeyId: string, secretHash: string | null): Buffer {
	const subject = secretHash === null ? apiKeyId : `${apiKeyId}:${secretHash}`;
	return createHmac('sha256', serviceSecret).update(`webhook-signing-key:${subject}`).digest();
}

/** What `GET /v1/webhooks/secret` hands the key's owner. */
export function formatSecret(secret: Buffer): string {
	return `whsec_${secret.toString('base64')}`;
}

export interface SignedHeaders {
	'webhook-id': string;
	'webhook-timestamp': string;
	'webhook-signature'?: string;
}

/** The three headers of one attempt; `secret` null: the id and timestamp only. */
export function signedHeaders(id: string, timestampSeconds: number, body: string, secret: Buffer | null): SignedHeaders {
	const timestamp = String(timestampSeconds);
	const headers: SignedHeaders = { 'webhook-id': id, 'webhook-timestamp': timestamp };
	if (secret) headers['webhook-signature'] = `v1,${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
	return headers;
}
