/**
 * Calls to model hosts (server/src/generation/providers/provider-http.ts), against real servers on
 * loopback: an answer is read within a byte bound whether or not it declares its length, a host
 * that refuses the connection is named as such (and proves nothing was made), a body that is
 * never read does not bring the process down when the call is stopped, and connections are reused.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ImageGenError } from '../../../core/errors';
import { request } from 'undici';
import { ProviderAnswer } from '../../../server/src/generation/providers/provider-answer';
import { dataUri } from '../../../server/src/generation/providers/json-body';
import { NothingMadeError, providerBytes, providerJson } from '../../../server/src/generation/providers/provider-http';
import { closedPort } from '../support/closed-port';

let server: http.Server;
let origin: string;
const sockets = new Set<unknown>();

beforeAll(async () => {
	server = http.createServer((req, res) => {
		if (req.url === '/echo') return void echo(req, res);
		if (req.url === '/moved') return void req.resume().once('end', () => res.writeHead(307, { location: '/echo' }).end());
		req.resume();
		const size = Number(new URL(req.url!, 'http://x').searchParams.get('size') ?? 10);
		if (req.url!.startsWith('/declared')) {
			res.writeHead(200, { 'content-length': size }).end(Buffer.alloc(size, 7));
		} else if (req.url!.startsWith('/chunked')) {
			// No length: the bound must hold while the bytes arrive.
			res.writeHead(200);
			let sent = 0;
			const more = () => {
				// A client that stopped reading ends the answer: writes to a closed socket do not push back.
				while (sent < size && !res.destroyed) {
					const piece = Buffer.alloc(Math.min(16_384, size - sent), 7);
					sent += piece.length;
					if (!res.write(piece)) return void res.once('drain', more);
				}
				res.end();
			};
			more();
		} else if (req.url!.startsWith('/json')) {
			res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
		} else {
			res.writeHead(404).end();
		}
	});
	server.on('connection', (socket) => sockets.add(socket));
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
	server.closeAllConnections();
	await new Promise((resolve) => server.close(resolve));
});

/** Answers what it received: the declared and the counted length, and the JSON's images as bytes. */
function echo(req: http.IncomingMessage, res: http.ServerResponse): void {
	const chunks: Buffer[] = [];
	req.on('data', (chunk: Buffer) => chunks.push(chunk));
	req.once('end', () => {
		const body = Buffer.concat(chunks);
		const { prompt, images } = JSON.parse(body.toString()) as { prompt: string; images: string[] };
		const sha = (uri: string) => createHash('sha256').update(Buffer.from(uri.slice(uri.indexOf(',') + 1), 'base64')).digest('hex');
		res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ declared: Number(req.headers['content-length']), received: body.length, prompt, images: images.map(sha) }));
	});
}

const answerOf = async (path: string, maxBytes: number) => new ProviderAnswer('test', await request(`${origin}${path}`), maxBytes);

test('an answer within the bound is read whole, declared or chunked', async () => {
	expect((await (await answerOf('/declared?size=1000', 1000)).bytes()).length).toBe(1000);
	expect((await (await answerOf('/chunked?size=100000', 100_000)).bytes()).length).toBe(100_000);
});

test('an answer that declares more than the bound is refused before it is read: 502 upstream_invalid_output', async () => {
	const error = await (await answerOf('/declared?size=5000000', 1_000_000)).bytes().catch((caught: unknown) => caught);
	expect(error).toBeInstanceOf(ImageGenError);
	expect(error).toMatchObject({ status: 502, code: 'upstream_invalid_output' });
	expect((error as Error).message).toMatch(/answered more than/);
});

test('an answer without a length is cut off once it passes the bound', async () => {
	const error = await (await answerOf('/chunked?size=50000000', 1_000_000)).bytes().catch((caught: unknown) => caught);
	expect(error).toMatchObject({ status: 502, code: 'upstream_invalid_output' });
});

test('an answer discarded unread, or stopped by its signal, raises nothing that could crash the process', async () => {
	const uncaught: unknown[] = [];
	const record = (error: unknown) => uncaught.push(error);
	process.on('uncaughtException', record);
	try {
		// A short answer already received whole, and a long one still arriving.
		await (await answerOf('/json', 1000)).discard();
		await (await answerOf('/chunked?size=10000000', 100_000_000)).discard();
		const stop = new AbortController();
		const stopped = new ProviderAnswer('test', await request(`${origin}/chunked?size=10000000`, { signal: stop.signal }));
		stop.abort(new Error('client went away'));
		await new Promise((resolve) => setTimeout(resolve, 100));
		await expect(stopped.bytes()).rejects.toThrow();
		expect(uncaught).toEqual([]);
	} finally {
		process.off('uncaughtException', record);
	}
});

test('JSON is parsed, and connections to the host are reused', async () => {
	const before = sockets.size;
	for (let i = 0; i < 5; i++) {
		expect(await providerJson({ provider: 'test', method: 'GET', url: `${origin}/json`, signal: new AbortController().signal })).toEqual({ ok: true });
	}
	expect(sockets.size - before).toBeLessThanOrEqual(1);
});

test('a JSON body with images is written from their bytes, its length declared, and written whole again after a 307', async () => {
	const [first, second] = [randomBytes(700_000), randomBytes(5)];
	const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
	for (const path of ['/echo', '/moved']) {
		const echoed = await providerJson<{ declared: number; received: number; prompt: string; images: string[] }>({
			provider: 'test',
			method: 'POST',
			url: `${origin}${path}`,
			json: { prompt: 'a fox', images: [dataUri(first), dataUri(second)] },
			signal: new AbortController().signal,
		});
		expect(echoed).toMatchObject({ prompt: 'a fox', images: [sha(first), sha(second)] });
		expect(echoed.received).toBe(echoed.declared);
	}
});

test('a refused connection is named as such, and on a submit proves nothing was made', async () => {
	const url = `http://127.0.0.1:${await closedPort()}/v1/images/generations`;
	const error = await providerBytes({ provider: 'test', method: 'POST', url, json: {}, signal: new AbortController().signal, submit: true }).catch((caught: unknown) => caught);
	expect(error).toBeInstanceOf(NothingMadeError);
	expect(error).toMatchObject({ status: 502, code: 'upstream_unreachable' });
	expect((error as Error).message).toBe('The test provider could not be reached: connection refused');
});
