/**
 * Where a model host's redirect may send us. The configured base URL's origin is the operator's
 * choice and trusted wherever it is (ComfyUI or a WebUI on 127.0.0.1); a redirect to any other
 * origin is named by the host's answer, so it gets the check URL inputs get (net/address-policy.ts):
 * every address its name resolves to must be public, unless the operator lifted that check with
 * --allow-private-urls, and the connection is pinned to the address checked. Without it a host, or
 * whoever controls its answers, could point our server at cloud metadata or the LAN.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent, type Dispatcher } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { classifyAddress, isIpLiteral, unbracket } from '../../net/address-policy';
import { pinnedLookup, type HostResolver, type ResolvedAddress } from '../../net/safe-fetch';

export interface RedirectReach {
	/** --allow-private-urls: a redirect may lead to any address. */
	allowPrivate: boolean;
	/** Resolves a redirect's host name for the check; the system's resolver otherwise. */
	resolve?: HostResolver;
}

/** No operator choice known: redirects to other origins are checked. */
export const CHECKED_REDIRECTS: RedirectReach = { allowPrivate: false };

const systemResolver: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * The address a redirect to another origin may be connected to, after the check; undefined when
 * the operator lifted the check (connect as usual). A refused one is a 502 naming the host and why.
 */
export async function checkedRedirect(provider: string, url: URL, reach: RedirectReach): Promise<ResolvedAddress | undefined> {
	if (reach.allowPrivate) return undefined;
	const host = unbracket(url.hostname);
	const addresses = isIpLiteral(host) ? [{ address: host, family: host.includes(':') ? 6 : 4 }] : await resolved(provider, host, reach.resolve ?? systemResolver);
	for (const { address } of addresses) {
		const verdict = classifyAddress(address);
		if (!verdict.allowed) {
			throw new ImageGenError(502, `The ${provider} provider redirected to ${url.host}, which is not followed: ${verdict.reason}. Redirects to other hosts reach only public addresses (--allow-private-urls lifts this)`, {
				code: 'upstream_invalid_output',
			});
		}
	}
	return addresses[0];
}

async function resolved(provider: string, host: string, resolve: HostResolver): Promise<ResolvedAddress[]> {
	const addresses = await resolve(host).catch(() => []);
	if (addresses.length === 0) {
		throw new ImageGenError(502, `The ${provider} provider redirected to ${host}, whose name did not resolve`, { code: 'upstream_unreachable' });
	}
	return addresses;
}

/**
 * A dispatcher for one call that connects only to the checked address, whatever the name resolves
 * to by then. It closes once its one call is done.
 */
export function pinnedDispatcher(address: ResolvedAddress): Dispatcher {
	return new Agent({ connect: { lookup: pinnedLookup(address) } });
}
