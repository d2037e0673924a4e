import { classifyAddress, isIpLiteral, unbracket } from '../../../server/src/net/address-policy';

describe('address policy (pure classifier)', () => {
	const refused: Array<[string, RegExp]> = [
		['10.0.0.1', /private/],
		['10.255.255.255', /private/],
		['172.16.0.1', /private/],
		['172.31.255.254', /private/],
		['192.168.1.10', /private/],
		['169.254.169.254', /link-local/],
		['169.254.0.1', /link-local/],
		['127.0.0.1', /loopback/],
		['127.1.2.3', /loopback/],
		['100.64.0.1', /carrier-grade NAT/],
		['100.127.255.254', /carrier-grade NAT/],
		['0.0.0.0', /unspecified/],
		['255.255.255.255', /broadcast/],
		['224.0.0.1', /multicast/],
		['240.0.0.1', /reserved/],
		['192.0.2.5', /reserved/],
		['::1', /loopback/],
		['::', /unspecified/],
		['fd00::1', /unique-local/],
		['fc00::1', /unique-local/],
		['fe80::1', /link-local/],
		['ff02::1', /multicast/],
		['fec0::1', /site-local/],
		['::ffff:127.0.0.1', /embeds 127\.0\.0\.1 is a loopback/],
		['::ffff:10.1.2.3', /embeds 10\.1\.2\.3 is a private/],
		['::ffff:169.254.169.254', /embeds 169\.254\.169\.254/],
		['::ffff:7f00:1', /embeds 127\.0\.0\.1/],
		['::127.0.0.1', /embeds 127\.0\.0\.1/],
		['64:ff9b::a9fe:a9fe', /NAT64/],
		['64:ff9b:1::1', /local NAT64/],
		['2002:7f00:1::1', /6to4/],
		['2001:db8::1', /reserved/],
		['[::1]', /loopback/],
	];
	it.each(refused)('refuses %s', (address, reason) => {
		const verdict = classifyAddress(address);
		expect(verdict.allowed).toBe(false);
		if (!verdict.allowed) expect(verdict.reason).toMatch(reason);
	});

	it.each(['8.8.8.8', '1.1.1.1', '93.184.215.14', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8'])(
		'allows the public address %s',
		(address) => {
			expect(classifyAddress(address)).toEqual({ allowed: true });
		},
	);

	it('refuses things that are not addresses at all', () => {
		expect(classifyAddress('example.com').allowed).toBe(false);
		expect(classifyAddress('').allowed).toBe(false);
	});

	it('sees the addresses WHATWG URL makes of numeric host spellings', () => {
		for (const spelling of ['http://2130706433/', 'http://0x7f.1/', 'http://127.1/', 'http://0177.0.0.1/', 'http://[::ffff:127.0.0.1]/']) {
			const host = new URL(spelling).hostname;
			expect(isIpLiteral(host)).toBe(true);
			expect(classifyAddress(host).allowed).toBe(false);
		}
		expect(unbracket(new URL('http://[::1]:8080/').hostname)).toBe('::1');
	});
});
