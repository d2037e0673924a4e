/** GET/HEAD /files/<id>.<ext>: headers, validators, ranges, and what is not a file. */
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { download, expectApiError, postJson } from '../support/http';
import { makeMp4 } from '../support/media';

let server: ServiceUnderTest;
let url: string;
const video = makeMp4(10_000);

beforeAll(async () => {
	server = await startInProcessServer();
	url = (await postJson(server, '/v1/uploads', { video: video.toString('base64') })).body.videoUrl;
});
afterAll(() => server?.stop({ removeData: true }));

describe('hosted files', () => {
	it('serves the bytes publicly with type, length, ETag, nosniff and a cache lifetime within the expiry', async () => {
		const file = await download(url);
		expect(file.status).toBe(200);
		expect(file.bytes.equals(video)).toBe(true);
		expect(file.headers.get('content-type')).toBe('video/mp4');
		expect(file.headers.get('content-length')).toBe(String(video.length));
		expect(file.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]+"$/);
		expect(file.headers.get('accept-ranges')).toBe('bytes');
		expect(file.headers.get('x-content-type-options')).toBe('nosniff');
		// A cache keeps it at most an hour (a delete cannot reach caches), never past the expiry.
		expect(file.headers.get('cache-control')).toBe('public, max-age=3600, must-revalidate');
		expect(file.headers.get('x-robots-tag')).toBe('noindex');
		expect(file.headers.get('access-control-allow-origin')).toBe('*');
	});

	it('answers HEAD with the headers and no body', async () => {
		const response = await fetch(url, { method: 'HEAD' });
		expect(response.status).toBe(200);
		expect(response.headers.get('content-length')).toBe(String(video.length));
		expect(response.headers.get('content-type')).toBe('video/mp4');
		expect((await response.arrayBuffer()).byteLength).toBe(0);
	});

	it('answers 304 for a matching If-None-Match', async () => {
		const etag = (await download(url)).headers.get('etag')!;
		const response = await fetch(url, { headers: { 'if-none-match': etag } });
		expect(response.status).toBe(304);
		expect(response.headers.get('etag')).toBe(etag);
		const other = await fetch(url, { headers: { 'if-none-match': '"something-else"' } });
		expect(other.status).toBe(200);
	});

	it.each([
		['bytes=0-99', 0, 99],
		['bytes=100-', 100, video.length - 1],
		['bytes=-500', video.length - 500, video.length - 1],
		['bytes=9990-20000', 9990, video.length - 1],
	])('serves Range %s as 206 with the right slice', async (range, start, end) => {
		const file = await download(url, { headers: { range } });
		expect(file.status).toBe(206);
		expect(file.headers.get('content-range')).toBe(`bytes ${start}-${end}/${video.length}`);
		expect(file.headers.get('content-length')).toBe(String(end - start + 1));
		expect(file.bytes.equals(video.subarray(start, end + 1))).toBe(true);
	});

	it('answers 416 for a range beyond the end, and ignores a stale If-Range', async () => {
		const beyond = await fetch(url, { headers: { range: `bytes=${video.length}-` } });
		expect(beyond.status).toBe(416);
		expect(beyond.headers.get('content-range')).toBe(`bytes */${video.length}`);
		expect(((await beyond.json()) as { error: { code: string } }).error.code).toBe('range_not_satisfiable');
		const stale = await download(url, { headers: { range: 'bytes=0-9', 'if-range': '"old"' } });
		expect(stale.status).toBe(200);
		expect(stale.bytes.length).toBe(video.length);
	});

	it('404 JSON for unknown, malformed and traversal names, without auth', async () => {
		for (const path of ['/files/AAAAAAAAAAAAAAAAAAAAAAAA.png', '/files/nope', '/files/..%2Fapi-key', '/files/%2e%2e%2f%2e%2e%2fetc%2fpasswd', '/files/']) {
			const response = await fetch(`${server.origin}${path}`);
			expect(response.status).toBe(404);
			expect(response.headers.get('content-type')).toMatch(/application\/json/);
			expect(((await response.json()) as any).error.type).toBe('not_found_error');
		}
		// The right id with the wrong extension is not the file either.
		const wrongExtension = url.replace(/\.mp4$/, '.png');
		expect((await fetch(wrongExtension)).status).toBe(404);
	});
});

describe('service basics', () => {
	it('GET /healthz is 200 without auth', async () => {
		const response = await fetch(`${server.origin}/healthz`);
		expect(response.status).toBe(200);
		expect(await response.json()).toEqual({ status: 'ok' });
	});

	it('unknown routes are JSON 404s', async () => {
		const response = await fetch(`${server.origin}/v2/whatever`);
		expect(response.status).toBe(404);
		const body = (await response.json()) as any;
		expect(body.error).toEqual({ message: 'Unknown route: GET /v2/whatever', type: 'not_found_error', param: null, code: 'unknown_route' });
	});

	it('a JSON body above --max-json-mb is a 413', async () => {
		const small = await startInProcessServer({ args: ['--max-json-mb', '0.01'] });
		try {
			const answer = await postJson(small, '/v1/uploads', { image: Buffer.alloc(20_000).toString('base64') });
			expectApiError(answer, 413, null, /JSON limit/);
		} finally {
			await small.stop({ removeData: true });
		}
	});
});

describe('malformed requests', () => {
	it('a malformed percent-encoding in the URL is a JSON 400', async () => {
		const response = await fetch(`${server.origin}/files/%ZZ`);
		expect(response.status).toBe(400);
		const body = (await response.json()) as any;
		expect(body.error.type).toBe('invalid_request_error');
		expect(body.error.message).toMatch(/URL is malformed/);
	});

	it('a repeated or __proto__ multipart field is a 400', async () => {
		const twice = new FormData();
		twice.append('output_format', 'webp');
		twice.append('output_format', 'png');
		twice.append('file', new Blob([Buffer.from('GIF89a')]), 'a.gif');
		const answer = await fetch(`${server.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` }, body: twice });
		expect(answer.status).toBe(400);
		expect(((await answer.json()) as any).error.param).toBe('output_format');

		const proto = new FormData();
		proto.append('__proto__', 'x');
		const protoAnswer = await fetch(`${server.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${server.apiKey}` }, body: proto });
		expect(protoAnswer.status).toBe(400);
		expect(((await protoAnswer.json()) as any).error.message).toMatch(/__proto__/);
	});
});
