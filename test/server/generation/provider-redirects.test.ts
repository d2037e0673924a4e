/**
 * A model host's redirects (provider-http.ts, redirect-guard.ts): the configured origin is trusted
 * wherever it is, a redirect to another origin gets the address check of URL inputs unless the
 * operator allowed private addresses, and a POST's body never goes to another origin (303 and
 * 301/302 continue as a GET without it; 307/308 there are refused). The check itself with a
 * stand-in DNS; the whole call against two servers on loopback, the second standing for whatever
 * internal address a redirect might name.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ImageGenError } from '../../../core/errors';
import { providerRetryPolicy, providerJson } from '../../../server/src/generation/providers/provider-http';
import { checkedRedirect } from '../../../server/src/generation/providers/redirect-guard';
import { hostCredentials } from '../../../server/src/generation/providers/host-credentials';

interface Seen {
	method: string;
	path: string;
	headers: http.IncomingHttpHeaders;
	body: string;
}

interface Recording {
	origin: string;
	seen: Seen[];
	server: http.Server;
}

/** A server that records what reached it; `answer` says what it replies. */
async function recording(answer: (seen: Seen, res: http.ServerResponse) => void): Promise<Recording> {
	const seen: Seen[] = [];
	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on('data', (chunk: Buffer) => chunks.push(chunk));
		req.once('end', () => {
			const each = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() };
			seen.push(each);
			answer(each, res);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

let configured: Recording;
let internal: Recording;
/** Where the configured host redirects next, and with which status. */
let redirect = { status: 302, location: '/' };

beforeAll(async () => {
	internal = await recording((_seen, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"internal":true}'));
	configured = await recording((seen, res) => {
		if (seen.path === '/here') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"configured":true}');
		res.writeHead(redirect.status, { location: redirect.location }).end();
	});
});
afterAll(async () => {
	for (const each of [configured, internal]) {
		each.server.closeAllConnections();
		await new Promise((resolve) => each.server.close(resolve));
	}
});
beforeEach(() => {
	configured.seen.splice(0);
	internal.seen.splice(0);
});

const checked = providerRetryPolicy({ retryBaseDelayMs: 1 });
const allowed = providerRetryPolicy({ retryBaseDelayMs: 1, allowPrivateRedirects: true });
const credentials = () => hostCredentials(configured.origin, { authorization: 'Bearer host-key' });

async function call(method: 'GET' | 'POST', retry = checked): Promise<unknown> {
	return providerJson({ provider: 'comfyui', method, url: `${configured.origin}/start`, credentials: credentials(), ...(method === 'POST' ? { json: { prompt: 'secret prompt' } } : {}), signal: AbortSignal.timeout(5_000), retry }).catch((error: unknown) => error);
}

describe('the address check of a redirect to another origin', () => {
	const reach = (addresses: string[]) => ({ allowPrivate: false, resolve: async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })) });

	test.each([
		['cloud metadata', ['169.254.169.254'], 'link-local'],
		['a LAN address', ['10.0.0.7'], 'private'],
		['loopback', ['127.0.0.1'], 'loopback'],
		['IPv4 inside IPv6', ['::ffff:192.168.1.1'], 'private'],
		['one private among public ones', ['93.184.216.34', '192.168.0.2'], 'private'],
	])('a name resolving to %s is refused: 502 naming the host and why', async (_what, addresses, reason) => {
		const refused = await checkedRedirect('replicate', new URL('https://cdn.example/out.png'), reach(addresses)).catch((error: unknown) => error);
		expect(refused).toBeInstanceOf(ImageGenError);
		expect(refused).toMatchObject({ status: 502, code: 'upstream_invalid_output' });
		expect((refused as Error).message).toContain('The replicate provider redirected to cdn.example');
		expect((refused as Error).message).toContain(reason);
	});

	test('a name resolving only to public addresses is followed, pinned to the address checked', async () => {
		await expect(checkedRedirect('replicate', new URL('https://cdn.example/out.png'), reach(['93.184.216.34']))).resolves.toEqual({ address: '93.184.216.34', family: 4 });
	});

	test('an IP literal is checked without a lookup; a name that does not resolve is a 502 saying so', async () => {
		await expect(checkedRedirect('pruna', new URL('http://[fd00::1]:8080/x'), { allowPrivate: false, resolve: () => Promise.reject(new Error('not asked')) })).rejects.toMatchObject({ status: 502, code: 'upstream_invalid_output' });
		await expect(checkedRedirect('pruna', new URL('http://nowhere.example/x'), reach([]))).rejects.toMatchObject({ status: 502, code: 'upstream_unreachable' });
	});

	test('with --allow-private-urls nothing is checked or resolved', async () => {
		await expect(checkedRedirect('pruna', new URL('http://nowhere.example/x'), { allowPrivate: true, resolve: () => Promise.reject(new Error('not asked')) })).resolves.toBeUndefined();
	});
});

describe('a redirect followed by a provider call', () => {
	test('within the configured origin (on loopback) it is followed, with the key', async () => {
		redirect = { status: 302, location: '/here' };
		await expect(call('GET')).resolves.toEqual({ configured: true });
		expect(configured.seen.map((each) => [each.path, each.headers.authorization])).toEqual([
			['/start', 'Bearer host-key'],
			['/here', 'Bearer host-key'],
		]);
	});

	test('to another origin on a private address: refused with a 502 naming it, nothing sent there', async () => {
		redirect = { status: 302, location: `${internal.origin}/latest/meta-data` };
		const refused = await call('GET');
		expect(refused).toMatchObject({ status: 502, code: 'upstream_invalid_output' });
		expect((refused as Error).message).toContain(`The comfyui provider redirected to ${new URL(internal.origin).host}, which is not followed: 127.0.0.1 is a loopback`);
		expect(internal.seen).toHaveLength(0);
	});

	test('to another origin by a name that resolves to a private address: refused by what the name resolves to', async () => {
		redirect = { status: 302, location: `http://metadata.test:${new URL(internal.origin).port}/latest` };
		const resolving = providerRetryPolicy({ retryBaseDelayMs: 1, resolveRedirectHost: async () => [{ address: '10.1.2.3', family: 4 }] });
		const refused = await call('GET', resolving);
		expect(refused).toMatchObject({ status: 502, code: 'upstream_invalid_output' });
		expect((refused as Error).message).toContain('redirected to metadata.test');
		expect((refused as Error).message).toContain('10.1.2.3 is a private');
		expect(internal.seen).toHaveLength(0);
	});

	test('with --allow-private-urls it is followed, without the key', async () => {
		redirect = { status: 302, location: `${internal.origin}/out` };
		await expect(call('GET', allowed)).resolves.toEqual({ internal: true });
		expect(internal.seen.map((each) => [each.method, each.headers.authorization])).toEqual([['GET', undefined]]);
	});

	test('a POST redirected with 303 to another origin continues as a GET without the body', async () => {
		redirect = { status: 303, location: `${internal.origin}/result` };
		await expect(call('POST', allowed)).resolves.toEqual({ internal: true });
		expect(internal.seen.map((each) => [each.method, each.body, each.headers['content-type']])).toEqual([['GET', '', undefined]]);
	});

	test.each([307, 308])('a POST redirected with %i to another origin is refused: its body goes nowhere but the configured host', async (status) => {
		redirect = { status, location: `${internal.origin}/elsewhere` };
		const refused = await call('POST', allowed);
		expect(refused).toMatchObject({ status: 502, code: 'upstream_invalid_output' });
		expect((refused as Error).message).toContain(`The comfyui provider redirected a POST with ${status} to ${new URL(internal.origin).host}`);
		expect(internal.seen).toHaveLength(0);
	});

	test('a POST redirected with 307 within the configured origin is sent again there, body and all', async () => {
		redirect = { status: 307, location: '/here' };
		await expect(call('POST')).resolves.toEqual({ configured: true });
		expect(configured.seen.map((each) => [each.method, each.path, each.body])).toEqual([
			['POST', '/start', '{"prompt":"secret prompt"}'],
			['POST', '/here', '{"prompt":"secret prompt"}'],
		]);
	});
});
