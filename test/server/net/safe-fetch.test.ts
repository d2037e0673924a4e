/**
 * The SSRF-checked fetcher, in process, against HTTP servers on 127.0.0.1 only. Host names resolve
 * through a stubbed lookup, so the tests decide what "DNS" answers without asking any real resolver.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { rejectedImageGenError } from '../../helpers/image-gen-error';
import { createSafeFetcher, type HostResolver } from '../../../server/src/net/safe-fetch';

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

let server: http.Server;
let port: number;
let handler: Handler;
let hits: string[];

beforeAll(async () => {
	server = http.createServer((request, response) => {
		hits.push(`${request.headers.host}${request.url}`);
		handler(request, response);
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
	await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
	hits = [];
	handler = (_request, response) => response.end('hello');
});
afterEach(() => jest.restoreAllMocks());

function stubResolver(table: Record<string, string[]>): HostResolver & jest.Mock {
	return jest.fn(async (hostname: string) => {
		const addresses = table[hostname];
		if (!addresses) throw Object.assign(new Error(`stub: no such host ${hostname}`), { code: 'ENOTFOUND' });
		return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
	}) as unknown as HostResolver & jest.Mock;
}

const failure = (promise: Promise<unknown>) => rejectedImageGenError(promise, 'the fetch');

const options = { field: 'image', maxBytes: 1024 };

describe('safe fetcher', () => {
	it('refuses a host whose DNS answer is private, before any connection is attempted', async () => {
		const connect = jest.spyOn(net.Socket.prototype, 'connect');
		const resolve = stubResolver({ 'files.example.test': ['10.0.0.1'] });
		const { fetchRemote } = createSafeFetcher({ allowPrivate: false, timeoutMs: 5_000, resolve });
		const error = await failure(fetchRemote(new URL('http://files.example.test/cat.png'), options));
		expect(error.status).toBe(400);
		expect(error.param).toBe('image');
		expect(error.code).toBe('refused_address');
		expect(error.message).toMatch(/10\.0\.0\.1 is a private/);
		expect(resolve).toHaveBeenCalledWith('files.example.test');
		expect(connect).not.toHaveBeenCalled();
	});

	it('refuses when ANY of several resolved addresses is refused (no connection either)', async () => {
		const connect = jest.spyOn(net.Socket.prototype, 'connect');
		const resolve = stubResolver({ 'mixed.example.test': ['93.184.215.14', '169.254.169.254'] });
		const { fetchRemote } = createSafeFetcher({ allowPrivate: false, timeoutMs: 5_000, resolve });
		const error = await failure(fetchRemote(new URL('https://mixed.example.test/'), options));
		expect(error.message).toMatch(/169\.254\.169\.254/);
		expect(connect).not.toHaveBeenCalled();
	});

	it('refuses metadata, IPv6-mapped and numeric loopback literals without resolving or connecting', async () => {
		const connect = jest.spyOn(net.Socket.prototype, 'connect');
		const resolve = stubResolver({});
		const { fetchRemote } = createSafeFetcher({ allowPrivate: false, timeoutMs: 5_000, resolve });
		for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:a9fe:a9fe]/', 'http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://[fd00::1]/', 'http://100.64.0.1/']) {
			const error = await failure(fetchRemote(new URL(url), options));
			expect(error.code).toBe('refused_address');
		}
		expect(resolve).not.toHaveBeenCalled();
		expect(connect).not.toHaveBeenCalled();
	});

	it('connects to the address it checked (pinned), not to a second resolution', async () => {
		const resolve = stubResolver({ 'pinned.example.test': ['127.0.0.1'] });
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000, resolve });
		const bytes = await fetchRemote(new URL(`http://pinned.example.test:${port}/a`), options);
		expect(bytes.toString()).toBe('hello');
		expect(resolve).toHaveBeenCalledTimes(1);
		expect(hits).toEqual([`pinned.example.test:${port}/a`]);
	});

	it('checks every redirect hop: an allowed first hop redirecting to a refused address is stopped', async () => {
		handler = (request, response) => {
			if (request.url === '/start') response.writeHead(302, { location: `http://127.0.0.2:${port}/secret` }).end();
			else response.end('secret');
		};
		// Only 127.0.0.1 counts as allowed here, so the first hop connects and the second must not.
		const classify = (address: string) =>
			address === '127.0.0.1' ? ({ allowed: true } as const) : ({ allowed: false, reason: `${address} is refused by this test` } as const);
		const { fetchRemote } = createSafeFetcher({ allowPrivate: false, timeoutMs: 5_000, resolve: stubResolver({}), classify });
		const error = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/start`), options));
		expect(error.code).toBe('refused_address');
		expect(error.message).toMatch(/127\.0\.0\.2/);
		expect(hits).toEqual([`127.0.0.1:${port}/start`]);

		// The same chain, allowed: the redirect is followed and its target resolved and fetched.
		hits = [];
		handler = (request, response) => {
			if (request.url === '/start') response.writeHead(302, { location: `http://inner.example.test:${port}/secret` }).end();
			else response.end('secret');
		};
		const permissive = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000, resolve: stubResolver({ 'inner.example.test': ['127.0.0.1'] }) });
		expect((await permissive.fetchRemote(new URL(`http://127.0.0.1:${port}/start`), options)).toString()).toBe('secret');
		expect(hits).toEqual([`127.0.0.1:${port}/start`, `inner.example.test:${port}/secret`]);
	});

	it('follows at most 5 redirects', async () => {
		handler = (request, response) => {
			const n = Number(request.url!.slice(1));
			response.writeHead(302, { location: `/${n + 1}` }).end();
		};
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000 });
		const error = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/0`), options));
		expect(error.code).toBe('too_many_redirects');
		expect(hits).toHaveLength(6);
	});

	it('refuses a redirect to a non-http scheme', async () => {
		handler = (_request, response) => response.writeHead(302, { location: 'file:///etc/passwd' }).end();
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000 });
		const error = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/`), options));
		expect(error.code).toBe('unsupported_url_scheme');
		expect(error.param).toBe('image');
	});

	it('turns non-2xx answers into a 400 naming the field', async () => {
		handler = (_request, response) => response.writeHead(404).end('nope');
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000 });
		const error = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/missing`), { field: 'images[2]', maxBytes: 1024 }));
		expect(error.status).toBe(400);
		expect(error.param).toBe('images[2]');
		expect(error.message).toMatch(/HTTP 404/);
	});

	it('enforces the size limit from Content-Length and while streaming', async () => {
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000 });
		handler = (_request, response) => response.end(Buffer.alloc(5000));
		const declared = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/big`), options));
		expect(declared.code).toBe('input_too_large');
		expect(declared.status).toBe(400);

		handler = (_request, response) => {
			response.writeHead(200); // chunked: no Content-Length to judge by
			response.write(Buffer.alloc(800));
			response.write(Buffer.alloc(800));
			response.end();
		};
		const streamed = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/chunked`), options));
		expect(streamed.code).toBe('input_too_large');
	});

	it('enforces the time limit', async () => {
		handler = () => undefined; // never answers
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 300 });
		const started = Date.now();
		const error = await failure(fetchRemote(new URL(`http://127.0.0.1:${port}/slow`), options));
		expect(error.code).toBe('fetch_timeout');
		expect(Date.now() - started).toBeLessThan(3_000);
	});

	it('reports DNS failures and refused connections as 400s naming the field', async () => {
		const { fetchRemote } = createSafeFetcher({ allowPrivate: true, timeoutMs: 5_000, resolve: stubResolver({}) });
		expect((await failure(fetchRemote(new URL('http://nowhere.example.test/'), options))).code).toBe('dns_failed');
		const closed = net.createServer();
		await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
		const closedPort = (closed.address() as AddressInfo).port;
		await new Promise((resolve) => closed.close(resolve));
		const refused = await failure(fetchRemote(new URL(`http://127.0.0.1:${closedPort}/`), options));
		expect(refused.code).toBe('fetch_failed');
		expect(refused.message).toMatch(/ECONNREFUSED/);
	});
});
