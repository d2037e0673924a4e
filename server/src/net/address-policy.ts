/**
 * Which IP addresses a server-side fetch may connect to. Pure: no DNS, no sockets, so every rule
 * is testable without sending a packet. Only globally routable unicast addresses pass; every form
 * that reaches the host itself, its LAN or cloud metadata (including IPv4 embedded in IPv6) fails.
 */
import ipaddr from 'ipaddr.js';

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

const IPV6_EXTRA_REFUSED: ReadonlyArray<[string, number, string]> = [
	// Deprecated site-local: still routed inside some networks.
	['fec0::', 10, 'site-local'],
	// RFC 8215 local-use NAT64: translates to arbitrary (private) IPv4 inside the network.
	['64:ff9b:1::', 48, 'local NAT64'],
];

/** Strips the brackets WHATWG URL keeps around IPv6 hosts. */
export function unbracket(host: string): string {
	return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

export function isIpLiteral(host: string): boolean {
	return ipaddr.isValid(unbracket(host));
}

export function classifyAddress(address: string): AddressVerdict {
	const text = unbracket(address.trim());
	if (!ipaddr.isValid(text)) return { allowed: false, reason: `'${address}' is not an IP address` };
	const parsed = ipaddr.parse(text);
	if (parsed.kind() === 'ipv4') return classifyIpv4(parsed as ipaddr.IPv4);
	return classifyIpv6(parsed as ipaddr.IPv6);
}

function classifyIpv4(address: ipaddr.IPv4): AddressVerdict {
	const range = address.range();
	if (range === 'unicast') return { allowed: true };
	return { allowed: false, reason: `${address.toString()} is a ${describeRange(range)} address` };
}

function classifyIpv6(address: ipaddr.IPv6): AddressVerdict {
	if (address.isIPv4MappedAddress()) return classifyEmbedded(address, address.toIPv4Address());
	const parts = address.parts;
	// IPv4-compatible (::a.b.c.d, deprecated) still reaches the IPv4 host on dual-stack systems.
	if (parts.slice(0, 6).every((part) => part === 0) && !(parts[6] === 0 && parts[7]! <= 1)) {
		const embedded = ipaddr.fromByteArray(address.toByteArray().slice(12)) as ipaddr.IPv4;
		return classifyEmbedded(address, embedded);
	}
	for (const [network, bits, name] of IPV6_EXTRA_REFUSED) {
		if (address.match(ipaddr.IPv6.parse(network), bits)) {
			return { allowed: false, reason: `${address.toString()} is a ${name} address` };
		}
	}
	const range = address.range();
	if (range === 'unicast') return { allowed: true };
	return { allowed: false, reason: `${address.toString()} is a ${describeRange(range)} address` };
}

function classifyEmbedded(outer: ipaddr.IPv6, inner: ipaddr.IPv4): AddressVerdict {
	const verdict = classifyIpv4(inner);
	if (verdict.allowed) return verdict;
	return { allowed: false, reason: `${outer.toString()} embeds ${verdict.reason}` };
}

const RANGE_NAMES: Record<string, string> = {
	unspecified: 'unspecified',
	broadcast: 'broadcast',
	multicast: 'multicast',
	linkLocal: 'link-local (cloud metadata lives here)',
	loopback: 'loopback',
	carrierGradeNat: 'carrier-grade NAT (shared)',
	private: 'private',
	reserved: 'reserved',
	as112: 'AS112',
	uniqueLocal: 'unique-local (private)',
	ipv4Mapped: 'IPv4-mapped',
	rfc6145: 'IPv4-translated',
	rfc6052: 'NAT64',
	'6to4': '6to4',
	teredo: 'Teredo',
	discard: 'discard-only',
	benchmarking: 'benchmarking',
};

function describeRange(range: string): string {
	return `${RANGE_NAMES[range] ?? range} (not publicly routable)`;
}
