/**
 * The connection level: a request refused before its body was read leaves its keep-alive
 * connection usable, a body cut short is a 400 (also while PostgreSQL answers the rate limiter),
 * a stalled body is ended by the idle time-out, deep JSON is a 4xx with or without an
 * Idempotency-Key, and malformed HTTP is answered in the API's error shape.
 */
import { Agent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { buildTestApp, type InProcessApp } from '../support/app';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { makeImage } from '../support/media';
import { TEST_API_KEY } from '../../helpers/server';

const AUTH = `Bearer ${TEST_API_KEY}`;
const ANSWER_WITHIN_MS = 15_000;

interface Answer {
	status: number;
	body: string;
}

/** One request through `agent`; rejects when no answer arrives in time (a poisoned connection). */
function send(agent: Agent, origin: string, method: string, path: string, headers: OutgoingHttpHeaders, body?: Buffer): Promise<Answer> {
	return new Promise((resolve, reject) => {
		const request = httpRequest(`${origin}${path}`, { agent, method, headers }, (response) => {
			const chunks: Buffer[] = [];
			response.on('data', (chunk: Buffer) => chunks.push(chunk));
			response.on('end', () => resolve({ status: response.statusCode!, body: Buffer.concat(chunks).toString() }));
			response.on('error', reject);
		});
		request.setTimeout(ANSWER_WITHIN_MS, () => request.destroy(new Error(`${method} ${path}: no answer in ${ANSWER_WITHIN_MS} ms`)));
		request.on('error', reject);
		request.end(body);
	});
}

/** Writes raw bytes, optionally half-closes, and collects what comes back until the server closes. */
function raw(origin: string, bytes: Buffer | string, options: { end?: boolean; waitMs?: number } = {}): Promise<string> {
	const { port } = new URL(origin);
	return new Promise((resolve) => {
		const socket = connect(Number(port), '127.0.0.1');
		let received = '';
		const timer = setTimeout(() => {
			socket.destroy();
			resolve(received);
		}, options.waitMs ?? ANSWER_WITHIN_MS);
		socket.on('data', (chunk) => (received += chunk.toString('latin1')));
		socket.on('error', () => undefined);
		socket.on('close', () => {
			clearTimeout(timer);
			resolve(received);
		});
		socket.write(bytes);
		if (options.end) socket.end();
	});
}

function statusOf(response: string): number {
	return Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);
}

function expectErrorShape(response: string, status: number, code?: string): void {
	expect(statusOf(response)).toBe(status);
	const body = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as { error: Record<string, unknown> };
	expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
	expect(typeof body.error.message).toBe('string');
	if (code) expect(body.error.code).toBe(code);
}

function multipart(parts: Array<{ name: string; value: string | Buffer; filename?: string }>, boundary = 'imagegen-boundary'): Buffer {
	const pieces: Buffer[] = [];
	for (const part of parts) {
		const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
		const type = part.filename ? 'Content-Type: application/octet-stream\r\n' : '';
		pieces.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(part.value), Buffer.from('\r\n'));
	}
	pieces.push(Buffer.from(`--${boundary}--\r\n`));
	return Buffer.concat(pieces);
}

function rawMultipart(body: Buffer, contentLength = body.length, boundary = 'imagegen-boundary'): Buffer {
	return Buffer.concat([
		Buffer.from(
			`POST /v1/uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: ${AUTH}\r\n` +
				`Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${contentLength}\r\n\r\n`,
		),
		body,
	]);
}

function nested(depth: number): string {
	return '['.repeat(depth) + ']'.repeat(depth);
}

describe('connections (embedded engines)', () => {
	let service: InProcessApp;

	beforeAll(async () => {
		service = await buildTestApp(['--max-json-mb', '1', '--idle-timeout-seconds', '2']);
	});
	afterAll(() => service?.close());

	it('answers the next request on a keep-alive connection after refusals that left the body unread', async () => {
		const agent = new Agent({ keepAlive: true, maxSockets: 1 });
		const big = Buffer.alloc(512 * 1024, 7);
		const form = multipart([
			{ name: 'colour', value: 'blue' },
			{ name: 'file', value: big, filename: 'big.bin' },
		]);
		try {
			const formHeaders = { authorization: AUTH, 'content-type': 'multipart/form-data; boundary=imagegen-boundary', 'content-length': form.length };
			for (let round = 0; round < 3; round += 1) {
				const refusedForm = await send(agent, service.origin, 'POST', '/v1/uploads', formHeaders, form);
				expect(refusedForm.status).toBe(400);
				expect(JSON.parse(refusedForm.body).error.param).toBe('colour');
				const refusedType = await send(agent, service.origin, 'POST', '/v1/uploads', { authorization: AUTH, 'content-type': 'text/plain' }, big);
				expect(refusedType.status).toBe(415);
				const unauthorised = await send(agent, service.origin, 'POST', '/v1/uploads', { 'content-type': 'application/json' }, big);
				expect(unauthorised.status).toBe(401);
				const tooLarge = await send(agent, service.origin, 'POST', '/v1/uploads', { authorization: AUTH, 'content-type': 'application/json' }, Buffer.alloc(1100 * 1024, 0x20));
				expect(tooLarge.status).toBe(413);
				const models = await send(agent, service.origin, 'GET', '/v1/models', { authorization: AUTH });
				expect(models.status).toBe(200);
			}
		} finally {
			agent.destroy();
		}
	});

	it.each([
		['/v1/uploads', nested(50_000)],
		['/v1/uploads', `{"file":${nested(50_000)}}`],
		['/v1/uploads', `{"file":"x","file":${nested(50_000)}}`],
		['/v1/images/generations', `{"model":"p-image","prompt":"a cat","extra":${nested(50_000)}}`],
	])('deep JSON on %s is a 4xx with and without an Idempotency-Key', async (path, body) => {
		for (const key of [undefined, 'deep-json-key']) {
			const response = await service.request(path, {
				method: 'POST',
				headers: { ...service.auth, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
				body,
			});
			expect(response.status).toBeGreaterThanOrEqual(400);
			expect(response.status).toBeLessThan(500);
		}
	});

	it('a multipart body cut off before its closing boundary is a 400', async () => {
		const form = multipart([{ name: 'file', value: await makeImage('png', 64, 64), filename: 'a.png' }]);
		const half = form.subarray(0, Math.floor(form.length / 2));
		// The body is whole by its Content-Length; the client keeps its side open for the answer.
		const response = await raw(service.origin, rawMultipart(half, half.length), { waitMs: 5_000 });
		expect(statusOf(response)).toBe(400);
	});

	it('a stalled body is ended by the idle time-out', async () => {
		const form = multipart([{ name: 'file', value: await makeImage('png', 64, 64), filename: 'a.png' }]);
		const started = Date.now();
		const response = await raw(service.origin, rawMultipart(form.subarray(0, 100), form.length));
		expect(Date.now() - started).toBeLessThan(ANSWER_WITHIN_MS - 1000);
		expectErrorShape(response, 408, 'request_timeout');
	});

	it.each([
		['an Expect other than 100-continue', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nExpect: 100-continued\r\n\r\n', 417],
		['an unknown Expect', 'POST /v1/uploads HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}', 417],
		['two different Content-Lengths', 'POST /v1/uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400],
		['a bad chunk size', 'POST /v1/uploads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400],
		['2,000 headers', `GET /v1/models HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 2000 }, (_, index) => `X-Filler-${index}: ${'v'.repeat(8)}\r\n`).join('')}\r\n`, 431],
	])('%s is refused in the error shape', async (_name, request, status) => {
		expectErrorShape(await raw(service.origin, request), status);
	});
});

describe('connections (PostgreSQL)', () => {
	let postgres: TestPostgres;
	let service: InProcessApp;

	beforeAll(async () => {
		postgres = await startTestPostgres();
		service = await buildTestApp(['--database-url', await postgres.createDatabase(), '--idle-timeout-seconds', '2']);
	});
	afterAll(async () => {
		await service?.close();
		await postgres?.stop();
	});

	it('a multipart body cut off before its closing boundary is a 400 while the rate limiter asks the database', async () => {
		const form = multipart([{ name: 'file', value: await makeImage('png', 64, 64), filename: 'a.png' }]);
		for (const cut of [0.3, 0.6, 0.9]) {
			const part = form.subarray(0, Math.floor(form.length * cut));
			// Complete as HTTP, cut short as a form: the client waits for its answer.
			expect(statusOf(await raw(service.origin, rawMultipart(part, part.length)))).toBe(400);
			// Cut short as HTTP too, and the client leaves: nothing to answer, but nothing may hang.
			const started = Date.now();
			await raw(service.origin, rawMultipart(part, form.length), { end: true });
			expect(Date.now() - started).toBeLessThan(ANSWER_WITHIN_MS - 1000);
		}
		expect((await service.request('/v1/models', { headers: service.auth })).status).toBe(200);
	});

	it('a stalled body is ended by the idle time-out', async () => {
		const form = multipart([{ name: 'file', value: await makeImage('png', 64, 64), filename: 'a.png' }]);
		expectErrorShape(await raw(service.origin, rawMultipart(form.subarray(0, 100), form.length)), 408, 'request_timeout');
	});
});
