/**
 * A provider's secret travels only to the origin it was configured for. Hosts answer with URLs
 * (status, cancel, delivery) and redirect; any of them may name another origin (a CDN, or a
 * compromised or misconfigured host), and a key sent there is a key given away.
 */
import { ImageGenError } from '../../../../core/errors';

export interface HostCredentials {
	/** Origin of the configured base URL, e.g. `https://api.pruna.ai`. */
	readonly origin: string;
	/** Headers carrying the secret (`authorization`, `apikey`, …). */
	readonly headers: Readonly<Record<string, string>>;
}

export function hostCredentials(baseUrl: string, headers: Record<string, string>): HostCredentials {
	return { origin: new URL(baseUrl).origin, headers };
}

export function isOwnOrigin(url: string | URL, credentials: HostCredentials): boolean {
	return new URL(url).origin === credentials.origin;
}

/**
 * A URL the host answered with that we must call with the key (status polling). One on another
 * origin is refused rather than called without the key: the host's own status endpoint needs
 * the key, so a keyless call could not succeed, and provider calls do not go through the
 * address policy, so following foreign URLs would let whoever shapes the answer point our
 * server at any address.
 */
export function ownUrl(url: string, credentials: HostCredentials, provider: string, what: string): string {
	const resolved = new URL(url, `${credentials.origin}/`);
	if (resolved.origin !== credentials.origin) {
		throw new ImageGenError(502, `The ${provider} provider answered with a ${what} on another host (${resolved.host}); refused, its key goes only to ${new URL(credentials.origin).host}`, {
			code: 'upstream_invalid_output',
		});
	}
	return resolved.toString();
}
