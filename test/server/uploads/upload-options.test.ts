/**
 * Upload options over real HTTP (docs/api.md, "Hosted files"): `expires_in` sets the file's
 * lifetime, `max_side` / `max_bytes` fit images, and the answer describes the stored file. Both
 * the JSON and the multipart form, with bad values refused naming the field.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { call, download, expectApiError, postJson, uploadFile } from '../support/http';
import { makeImage, makeMp4 } from '../support/media';

const RETENTION = 7200;
let server: ServiceUnderTest;

beforeAll(async () => {
	server = await startInProcessServer({ args: ['--retention-seconds', String(RETENTION)] });
});
afterAll(() => server?.stop({ removeData: true }));

/** Bytes and metadata in the data dir: the same set before and after a refused upload. */
const storedEntries = () => readdirSync(join(server.dataDir, 'files')).filter((name) => !name.startsWith('.')).sort();
const secondsUntil = (iso: string) => (Date.parse(iso) - Date.now()) / 1000;
const noise = (width: number, height: number) =>
	sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
		.png()
		.toBuffer();

describe('expires_in', () => {
	test('JSON: the answer and the file info expire after expires_in seconds', async () => {
		const png = await makeImage('png', 20, 20);
		const answer = await postJson(server, '/v1/uploads', { file: png.toString('base64'), expires_in: 120 });
		expect(answer.status).toBe(200);
		expect(secondsUntil(answer.body.expiresAt)).toBeGreaterThan(110);
		expect(secondsUntil(answer.body.expiresAt)).toBeLessThanOrEqual(120);
		const info = await call(server, `/v1/files/${answer.body.id}`);
		expect(info.body.expiresAt).toBe(answer.body.expiresAt);
		// The cache lifetime ends with the file.
		const file = await download(answer.body.imageUrl);
		expect(Number(/max-age=(\d+)/.exec(file.headers.get('cache-control') ?? '')?.[1])).toBeLessThanOrEqual(120);
	});

	test('multipart: a text field, before or after the file', async () => {
		const png = await makeImage('png', 20, 20);
		for (const fieldsFirst of [true, false]) {
			const answer = await uploadFile(server, png, { expires_in: '600' }, { fieldsFirst });
			expect(answer.status).toBe(200);
			expect(secondsUntil(answer.body.expiresAt)).toBeGreaterThan(590);
			expect(secondsUntil(answer.body.expiresAt)).toBeLessThanOrEqual(600);
		}
	});

	test('without it the file lives as long as the retention; expires_in equal to the retention is allowed', async () => {
		const png = await makeImage('png', 20, 20);
		for (const body of [{ file: png.toString('base64') }, { file: png.toString('base64'), expires_in: RETENTION }]) {
			const answer = await postJson(server, '/v1/uploads', body);
			expect(answer.status).toBe(200);
			expect(secondsUntil(answer.body.expiresAt)).toBeGreaterThan(RETENTION - 10);
		}
	});

	test.each([59, 0, -5, 'abc', '1.5', 1.5, RETENTION + 1, true])('expires_in %p → 400 naming expires_in (JSON and multipart)', async (value) => {
		const png = await makeImage('png', 20, 20);
		expectApiError(await postJson(server, '/v1/uploads', { file: png.toString('base64'), expires_in: value }), 400, 'expires_in');
		expectApiError(await uploadFile(server, png, { expires_in: String(value) }), 400, 'expires_in');
	});
});

describe('the answer describes the stored file', () => {
	test('image: id, mimeType and sizeBytes are those of the file served under imageUrl', async () => {
		const png = await makeImage('png', 30, 20);
		const answer = await uploadFile(server, png, {}, { fileName: 'a.png' });
		expect(Object.keys(answer.body).sort()).toEqual(['expiresAt', 'id', 'imageUrl', 'mimeType', 'provenance', 'sizeBytes']);
		expect(answer.body.imageUrl).toMatch(new RegExp(`/files/${answer.body.id}\\.png$`));
		const file = await download(answer.body.imageUrl);
		expect({ mimeType: answer.body.mimeType, sizeBytes: answer.body.sizeBytes }).toEqual({ mimeType: 'image/png', sizeBytes: file.bytes.length });
	});

	test('converted image: the stored JPEG, not the PNG sent', async () => {
		const png = await makeImage('png', 30, 20);
		const answer = await postJson(server, '/v1/uploads', { image: png.toString('base64'), output_format: 'jpeg' });
		const file = await download(answer.body.imageUrl);
		expect(answer.body).toMatchObject({ mimeType: 'image/jpeg', sizeBytes: file.bytes.length });
	});

	test('video: videoUrl with the same fields', async () => {
		const mp4 = makeMp4(3000);
		const answer = await postJson(server, '/v1/uploads', { video: mp4.toString('base64') });
		expect(answer.body).toEqual({
			videoUrl: expect.stringMatching(/\.mp4$/),
			expiresAt: expect.any(String),
			id: expect.any(String),
			mimeType: 'video/mp4',
			sizeBytes: mp4.length,
			provenance: { c2pa: 'none', digital_source_type: null },
		});
	});
});

describe('max_side and max_bytes', () => {
	test('max_side scales the image down with its ratio kept (multipart, fields after the file)', async () => {
		const png = await makeImage('png', 1200, 600);
		const answer = await uploadFile(server, png, { max_side: '300' });
		expect(answer.status).toBe(200);
		const meta = await sharp((await download(answer.body.imageUrl)).bytes).metadata();
		expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: 'png', width: 300, height: 150 });
	});

	test('max_side never scales up; an image that already fits is re-encoded at its size (its metadata goes)', async () => {
		const png = await makeImage('png', 100, 50);
		const answer = await postJson(server, '/v1/uploads', { file: png.toString('base64'), max_side: 4000 });
		const meta = await sharp((await download(answer.body.imageUrl)).bytes).metadata();
		expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: 'png', width: 100, height: 50 });
	});

	test('max_bytes with output_format jpeg: a noisy image is re-encoded below the limit', async () => {
		const png = await noise(800, 800);
		const answer = await uploadFile(server, png, { output_format: 'jpeg', max_bytes: '60000', max_side: '700' }, { fieldsFirst: true });
		expect(answer.status).toBe(200);
		const file = await download(answer.body.imageUrl);
		const meta = await sharp(file.bytes).metadata();
		expect(meta.format).toBe('jpeg');
		expect(Math.max(meta.width!, meta.height!)).toBeLessThanOrEqual(700);
		expect(file.bytes.length).toBeLessThanOrEqual(60_000);
		expect(answer.body).toMatchObject({ mimeType: 'image/jpeg', sizeBytes: file.bytes.length });
	});

	test('an image that cannot fit → 400 naming max_bytes, and nothing is stored', async () => {
		const png = await noise(300, 300);
		const before = storedEntries();
		const answer = await postJson(server, '/v1/uploads', { image: png.toString('base64'), max_bytes: 10_240 });
		expectApiError(answer, 400, 'max_bytes');
		expect(storedEntries()).toEqual(before);
	});

	test.each([
		['max_side', 15],
		['max_side', 8193],
		['max_side', 'big'],
		['max_bytes', 10_239],
		['max_bytes', 0],
	])('%s %p → 400 naming it (JSON and multipart)', async (field, value) => {
		const png = await makeImage('png', 20, 20);
		expectApiError(await postJson(server, '/v1/uploads', { file: png.toString('base64'), [field]: value }), 400, field);
		expectApiError(await uploadFile(server, png, { [field]: String(value) }, { fieldsFirst: true }), 400, field);
	});

	test.each(['max_side', 'max_bytes'])('%s with a video → 400 field_not_supported, whatever the form', async (field) => {
		const mp4 = makeMp4(3000);
		const value = field === 'max_side' ? 512 : 100_000;
		for (const answer of [
			await postJson(server, '/v1/uploads', { video: mp4.toString('base64'), [field]: value }),
			await postJson(server, '/v1/uploads', { file: mp4.toString('base64'), [field]: value }),
			await uploadFile(server, mp4, { [field]: String(value) }, { fieldsFirst: true }),
			await uploadFile(server, mp4, { [field]: String(value) }),
		]) {
			expectApiError(answer, 400, field);
			expect(answer.body.error.code).toBe('field_not_supported');
		}
	});

	test('expires_in with a video is fine', async () => {
		const mp4 = makeMp4(3000);
		const answer = await uploadFile(server, mp4, { expires_in: '300' });
		expect(answer.status).toBe(200);
		expect(secondsUntil(answer.body.expiresAt)).toBeLessThanOrEqual(300);
	});

	test('a field sent twice → 400 naming it', async () => {
		const form = new FormData();
		form.append('max_side', '100');
		form.append('max_side', '200');
		form.append('file', new Blob([await makeImage('png', 20, 20)]), 'a.png');
		expectApiError(await call(server, '/v1/uploads', { method: 'POST', body: form }), 400, 'max_side');
	});
});
