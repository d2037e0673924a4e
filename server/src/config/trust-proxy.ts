/**
 * `--trust-proxy`: the proxies that may tell us the client's address, by their own addresses.
 * Neither "trust every hop" nor a hop count is offered: with either, a client that reaches the
 * service directly (or writes its own X-Forwarded-For in front of the proxy's) could name any
 * address and get a fresh allowance of failed authentications with each. Only a connection from a
 * listed proxy is believed, and the address counted is the first one no listed proxy owns.
 */
import { isIP } from 'node:net';
import { listOf } from './value-types';

/** false: the connection's own address counts. */
export type TrustProxy = false | string[];

const OFF = new Set(['off', 'false', 'no', '0']);
/** Names proxy-addr (Fastify's) knows for whole ranges. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Throws an Error whose message follows the flag's name. */
export function parseTrustProxy(text: string): TrustProxy {
	if (OFF.has(text.toLowerCase())) return false;
	const entries = listOf(text);
	for (const entry of entries) {
		if (!isProxyAddress(entry)) {
			throw new Error(`must be the addresses of the proxies in front (e.g. 10.0.0.0/8,127.0.0.1 or loopback); got '${entry}'`);
		}
	}
	return entries;
}

function isProxyAddress(entry: string): boolean {
	if (RANGE_NAMES.has(entry)) return true;
	const [address, prefix, ...rest] = entry.split('/');
	const family = isIP(address ?? '');
	if (family === 0 || rest.length > 0) return false;
	if (prefix === undefined) return true;
	return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
