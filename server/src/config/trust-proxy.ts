/**
 * `--trust-proxy`: the proxies that may tell us the client's address, by their own addresses.
 * Neither "trust every hop" nor a hop count is offered: with either, a client that reaches the
 * service directly (or writes its own X-Forwarded-For in front of the proxy's) could name any
 * address and get a fresh allowance of failed authentications with each. Only a connection from a
 * listed proxy is believed, and the address counted is the first one no listed proxy owns.
 */
import { z } from 'zod/v3';
import { listOf, NO } from './value-types';

/** false: the connection's own address counts. */
export type TrustProxy = false | string[];

/** An address, a network (CIDR), or a name proxy-addr (Fastify's) knows for a whole range. */
const proxyAddress = z.union([z.enum(['loopback', 'linklocal', 'uniquelocal']), z.string().ip(), z.string().cidr()]);

/** Throws an Error whose message follows the flag's name. */
export function parseTrustProxy(text: string): TrustProxy {
	if (NO.includes(text.toLowerCase())) return false;
	const entries = listOf(text);
	const wrong = entries.find((entry) => !proxyAddress.safeParse(entry).success);
	if (wrong !== undefined) throw new Error(`must be the addresses of the proxies in front (e.g. 10.0.0.0/8,127.0.0.1 or loopback); got '${wrong}'`);
	return entries;
}
