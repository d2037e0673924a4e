/** The service wired in process: auth scoped to /v1, the rate limit, the catalog, uploads and their files. */
import { MODEL_IDS } from '../../../core/models';
import { buildTestApp, type InProcessApp } from '../support/app';
import { makeImage, makeMp4 } from '../support/media';

let subject: InProcessApp;
beforeAll(async () => {
	subject = await buildTestApp();
});
afterAll(async () => {
	await subject?.close();
});

const bytesOf = async (response: Response) => Buffer.from(await response.arrayBuffer());
const jsonOf = async (response: Response): Promise<any> => response.json();

describe('auth is a hook of the /v1 scope only', () => {
	it('public routes answer without a key', async () => {
		const health = await subject.request('/healthz');
		expect(health.status).toBe(200);
		expect(await health.json()).toEqual({ status: 'ok' });
		const file = await subject.request('/files/AAAAAAAAAAAAAAAAAAAAAAAA.png');
		expect(file.status).toBe(404);
		expect((await jsonOf(file)).error.code).toBe('file_not_found');
	});

	it('/v1 routes, unknown ones included, need a valid key first', async () => {
		for (const path of ['/v1/models', '/v1/no-such-route']) {
			const missing = await subject.request(path);
			expect(missing.status).toBe(401);
			expect((await jsonOf(missing)).error.code).toBe('missing_api_key');
		}
		const wrong = await subject.request('/v1/models', { headers: { authorization: 'Bearer wrong-key-000000' } });
		expect((await jsonOf(wrong)).error.code).toBe('invalid_api_key');
		const unknown = await subject.request('/v1/no-such-route', { headers: subject.auth });
		expect(unknown.status).toBe(404);
	});
});

describe('routes on the decorated instance', () => {
	it('GET /v1/models lists the core catalog', async () => {
		const answer = await subject.request('/v1/models', { headers: subject.auth });
		expect(answer.status).toBe(200);
		expect(await answer.text()).toContain(MODEL_IDS[0]);
	});

	it('a multipart upload is stored and its file served with ETag and Range', async () => {
		const png = await makeImage('png', 64, 48);
		const form = new FormData();
		form.append('file', new Blob([png]), 'a.png');
		const upload = await subject.request('/v1/uploads', { method: 'POST', headers: subject.auth, body: form });
		expect(upload.status).toBe(200);
		const { imageUrl, expiresAt } = (await upload.json()) as { imageUrl: string; expiresAt: string };
		expect(imageUrl).toMatch(new RegExp(`^${subject.origin}/files/[A-Za-z0-9_-]{22,}\\.png$`));
		expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());

		const whole = await subject.request(imageUrl);
		expect(whole.status).toBe(200);
		expect(whole.headers.get('content-type')).toBe('image/png');
		expect((await bytesOf(whole)).equals(png)).toBe(true);
		const etag = whole.headers.get('etag')!;

		const part = await subject.request(imageUrl, { headers: { range: 'bytes=1-3' } });
		expect(part.status).toBe(206);
		expect((await bytesOf(part)).equals(png.subarray(1, 4))).toBe(true);
		const unchanged = await subject.request(imageUrl, { headers: { 'if-none-match': etag } });
		expect(unchanged.status).toBe(304);
	});

	it('a JSON upload with output_format is converted on the way into storage, and a damaged image is a 400', async () => {
		const png = await makeImage('png', 40, 40);
		const post = (body: unknown) =>
			subject.request('/v1/uploads', { method: 'POST', headers: { ...subject.auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
		const upload = await post({ image: png.toString('base64'), output_format: 'webp' });
		expect(upload.status).toBe(200);
		const file = await subject.request(((await upload.json()) as { imageUrl: string }).imageUrl);
		expect(file.headers.get('content-type')).toBe('image/webp');
		expect((await bytesOf(file)).subarray(8, 12).toString('latin1')).toBe('WEBP');

		const damaged = Buffer.concat([png.subarray(0, 64), Buffer.alloc(400, 0x55)]);
		const refused = await post({ image: damaged.toString('base64'), output_format: 'jpg' });
		expect(refused.status).toBe(400);
		expect((await jsonOf(refused)).error).toMatchObject({ param: 'image', code: 'undecodable_image' });
	});

	it('multipart output_format before the file converts as it streams in, after it from storage; never a video', async () => {
		const png = await makeImage('png', 48, 32);
		const send = async (order: 'format-first' | 'file-first', bytes: Buffer, name: string) => {
			const form = new FormData();
			if (order === 'format-first') form.append('output_format', 'jpg');
			form.append('file', new Blob([bytes]), name);
			if (order === 'file-first') form.append('output_format', 'jpg');
			return subject.request('/v1/uploads', { method: 'POST', headers: subject.auth, body: form });
		};
		for (const order of ['format-first', 'file-first'] as const) {
			const upload = await send(order, png, 'a.png');
			expect(upload.status).toBe(200);
			const file = await subject.request(((await jsonOf(upload)) as { imageUrl: string }).imageUrl);
			expect(file.headers.get('content-type')).toBe('image/jpeg');
			expect((await bytesOf(file)).subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))).toBe(true);
		}
		const video = await send('format-first', makeMp4(4096), 'a.mp4');
		expect(video.status).toBe(400);
		expect((await jsonOf(video)).error).toMatchObject({ param: 'output_format', code: 'field_not_supported' });
	});

	it('the rate limit of the key applies to /v1 and answers 429 with Retry-After, not to /healthz', async () => {
		const limited = await buildTestApp(['--rate-limit-per-minute', '2']);
		try {
			const statuses: number[] = [];
			let retryAfter: string | null = null;
			for (let i = 0; i < 3; i++) {
				const answer = await limited.request('/v1/models', { headers: limited.auth });
				statuses.push(answer.status);
				if (answer.status === 429) retryAfter = answer.headers.get('retry-after');
				await answer.arrayBuffer();
			}
			expect(statuses).toEqual([200, 200, 429]);
			expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
			expect((await limited.request('/healthz')).status).toBe(200);
		} finally {
			await limited.close();
		}
	});
});
