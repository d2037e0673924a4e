/**
 * GET / DELETE /v1/files/<id> and the public file headers over real HTTP: only the key that stored
 * a file (upload or generation) sees or deletes it; unknown, expired and deleted files are 404;
 * a delete removes the bytes; HEAD, X-Robots-Tag, CORS and a Cache-Control bounded by the expiry.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { useFakeClock } from '../support/clock';
import { call, download, expectApiError, postJson } from '../support/http';
import { makeImage } from '../support/media';

const OWNER = 'owner-key-0123456789';
const OTHER = 'other-key-0123456789';
let server: ServiceUnderTest;

beforeAll(async () => {
	server = await startInProcessServer({ apiKey: `${OWNER},${OTHER}` });
});
afterAll(() => server?.stop({ removeData: true }));

const as = (key: string) => ({ ...server, apiKey: key });
const upload = async (key = OWNER, extra: Record<string, unknown> = {}) => {
	const answer = await postJson(as(key), '/v1/uploads', { file: (await makeImage('png', 24, 16)).toString('base64'), ...extra });
	expect(answer.status).toBe(200);
	return answer.body as { imageUrl: string; id: string; expiresAt: string; mimeType: string; sizeBytes: number };
};
const bytesPath = (url: string) => join(server.dataDir, 'files', url.split('/').pop()!);

describe('GET /v1/files/<id>', () => {
	test('the owner gets id, url, mimeType, sizeBytes, createdAt and expiresAt', async () => {
		const before = Date.now();
		const file = await upload();
		const info = await call(as(OWNER), `/v1/files/${file.id}`);
		expect(info.status).toBe(200);
		expect(info.body).toEqual({
			id: file.id,
			url: file.imageUrl,
			mimeType: 'image/png',
			sizeBytes: file.sizeBytes,
			createdAt: expect.any(String),
			expiresAt: file.expiresAt,
			provenance: { c2pa: 'none', digital_source_type: null },
		});
		expect(Date.parse(info.body.createdAt)).toBeGreaterThanOrEqual(before - 1000);
	});

	test('another key, an unknown id, a malformed id and no key: 404 / 404 / 404 / 401', async () => {
		const file = await upload();
		expectApiError(await call(as(OTHER), `/v1/files/${file.id}`), 404, 'id');
		expectApiError(await call(as(OWNER), '/v1/files/AAAAAAAAAAAAAAAAAAAAAAAA'), 404, 'id');
		expectApiError(await call(as(OWNER), '/v1/files/..%2F..%2Fapi-key'), 404, 'id');
		expect((await call(server, `/v1/files/${file.id}`, { auth: null })).status).toBe(401);
	});

	test('a generated image belongs to the key that generated it', async () => {
		const generated = await postJson(as(OWNER), '/v1/images/generations', { model: 'p-image', prompt: 'a kite', response_format: 'url' });
		expect(generated.status).toBe(200);
		const url: string = generated.body.data[0].url;
		const id = url.split('/').pop()!.replace(/\.\w+$/, '');
		expect((await call(as(OWNER), `/v1/files/${id}`)).body.url).toBe(url);
		expect((await call(as(OTHER), `/v1/files/${id}`)).status).toBe(404);
		expect((await call(as(OTHER), `/v1/files/${id}`, { method: 'DELETE' })).status).toBe(404);
		expect((await call(as(OWNER), `/v1/files/${id}`, { method: 'DELETE' })).status).toBe(204);
		expect((await download(url)).status).toBe(404);
	});
});

describe('DELETE /v1/files/<id>', () => {
	test('204 for the owner; then the URL, the info and a second delete are 404, and the bytes are gone', async () => {
		const file = await upload();
		expect(existsSync(bytesPath(file.imageUrl))).toBe(true);
		const removed = await call(as(OWNER), `/v1/files/${file.id}`, { method: 'DELETE' });
		expect(removed.status).toBe(204);
		expect(removed.body).toBe('');
		const gone = await download(file.imageUrl);
		expect(gone.status).toBe(404);
		expect(gone.headers.get('cache-control')).toBe('no-store');
		expect((await call(as(OWNER), `/v1/files/${file.id}`)).status).toBe(404);
		expect((await call(as(OWNER), `/v1/files/${file.id}`, { method: 'DELETE' })).status).toBe(404);
		expect(existsSync(bytesPath(file.imageUrl))).toBe(false);
	});

	test('another key cannot delete it: 404, and the file stays online', async () => {
		const file = await upload();
		expectApiError(await call(as(OTHER), `/v1/files/${file.id}`, { method: 'DELETE' }), 404, 'id');
		expect((await download(file.imageUrl)).status).toBe(200);
	});
});

describe('expired files', () => {
	test('info and delete answer 404 once the file expired', async () => {
		useFakeClock();
		const short = await startInProcessServer({ args: ['--retention-seconds', '60'], apiKey: OWNER });
		try {
			const answer = await postJson(short, '/v1/uploads', { file: (await makeImage('png', 8, 8)).toString('base64') });
			jest.advanceTimersByTime(59_999);
			expect((await call(short, `/v1/files/${answer.body.id}`)).status).toBe(200);
			jest.advanceTimersByTime(1);
			expect((await call(short, `/v1/files/${answer.body.id}`)).status).toBe(404);
			expect((await call(short, `/v1/files/${answer.body.id}`, { method: 'DELETE' })).status).toBe(404);
			expect((await download(answer.body.imageUrl)).status).toBe(404);
		} finally {
			await short.stop({ removeData: true });
			jest.useRealTimers();
		}
	});
});

describe('public file headers', () => {
	test('GET and HEAD: noindex, any origin, a cache lifetime that ends no later than the file', async () => {
		const file = await upload(OWNER, { expires_in: 90 });
		for (const method of ['GET', 'HEAD']) {
			const answer = await download(file.imageUrl, { method });
			expect(answer.status).toBe(200);
			expect(answer.headers.get('x-robots-tag')).toBe('noindex');
			expect(answer.headers.get('access-control-allow-origin')).toBe('*');
			expect(answer.headers.get('content-length')).toBe(String(file.sizeBytes));
			const maxAge = Number(/max-age=(\d+)/.exec(answer.headers.get('cache-control') ?? '')?.[1]);
			expect(maxAge).toBeGreaterThan(80);
			expect(maxAge).toBeLessThanOrEqual(90);
			expect(Date.parse(answer.headers.get('expires')!)).toBeLessThanOrEqual(Date.parse(file.expiresAt) + 1000);
			expect(answer.bytes.length).toBe(method === 'HEAD' ? 0 : file.sizeBytes);
		}
	});

	test('a 304 carries the same headers; a 404 is never cached', async () => {
		const file = await upload();
		const first = await download(file.imageUrl);
		const revalidated = await download(file.imageUrl, { headers: { 'if-none-match': first.headers.get('etag')! } });
		expect(revalidated.status).toBe(304);
		expect(revalidated.headers.get('access-control-allow-origin')).toBe('*');
		expect(revalidated.headers.get('x-robots-tag')).toBe('noindex');
		const missing = await download(`${server.origin}/files/AAAAAAAAAAAAAAAAAAAAAAAA.png`, { method: 'HEAD' });
		expect(missing.status).toBe(404);
		expect(missing.headers.get('cache-control')).toBe('no-store');
	});
});
