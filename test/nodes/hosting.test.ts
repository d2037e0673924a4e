/**
 * The nodes with the service's hosting features (docs/api.md, "Hosted files"): lifetime, Fit For,
 * file info and delete, richer upload answers, seeds and idempotent replays. Run through n8n-core
 * against the real server on loopback; these need a service that has those features.
 */
import sharp from 'sharp';

import { makeImage, makeMp4, pictureDistance } from '../server/support/media';
import { binaryBytes, IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();

const node = (type: string, name: string, parameters: Record<string, unknown>): WorkflowNode => ({ name, type, parameters });
const run = (nodes: WorkflowNode[], seed?: SeedItem[]) => runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes, seed });
const binaryItem = (bytes: Buffer, fileName: string, mimeType: string): SeedItem[] => [{ binary: { data: { bytes, fileName, mimeType } } }];

async function runUpload(parameters: Record<string, unknown>, seed?: SeedItem[]) {
	const result = await run([node(IMAGE_GEN_UPLOAD, 'Upload', parameters)], seed);
	expect(result.error('Upload')).toBeUndefined();
	return result.output('Upload')[0]!.json;
}

async function download(url: unknown) {
	const response = await fetch(String(url));
	return { status: response.status, contentType: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('Upload: what an agent can use as it is', () => {
	test('id, mimeType and sizeBytes describe the stored file; Lifetime 1 hour sets expiresAt', async () => {
		const png = await makeImage('png', 80, 60);
		const json = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', options: { expiresIn: 3600 } }, binaryItem(png, 'in.png', 'image/png'));
		const hosted = await download(json.url);
		expect(json).toEqual({
			imageUrl: json.url,
			url: expect.stringMatching(/\.png$/),
			mediaType: 'image',
			expiresAt: expect.any(String),
			id: String(json.url).split('/').pop()!.replace(/\.png$/, ''),
			mimeType: 'image/png',
			sizeBytes: png.length,
			provenance: { c2pa: 'none', digital_source_type: null },
		});
		expect(hosted.bytes.equals(png)).toBe(true);
		const expiresIn = Date.parse(String(json.expiresAt)) - Date.now();
		expect(expiresIn).toBeGreaterThan(3500_000);
		expect(expiresIn).toBeLessThanOrEqual(3600_000);
	});
});

describe('Upload: Fit For', () => {
	test('Instagram feed: a large PNG becomes a JPEG with its long side at most 1440 px, within 8 MB, ratio kept', async () => {
		const png = await makeImage('png', 3000, 2000);
		const json = await runUpload({ inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'original', options: { fitFor: 'instagramFeed' } }, binaryItem(png, 'big.png', 'image/png'));
		const hosted = await download(json.url);
		const meta = await sharp(hosted.bytes).metadata();
		expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: 'jpeg', width: 1440, height: 960 });
		expect(json).toMatchObject({ mimeType: 'image/jpeg', sizeBytes: hosted.bytes.length });
		expect(hosted.bytes.length).toBeLessThanOrEqual(8_000_000);
	});

	test('custom: max side and max size (MB) are both met', async () => {
		const png = await makeImage('png', 900, 300);
		const json = await runUpload(
			{ inputType: 'base64', base64: png.toString('base64'), mediaType: 'image', outputFormat: 'jpg', options: { fitFor: 'custom', maxSide: 300, maxSizeMb: 0.02 } },
		);
		const hosted = await download(json.url);
		const meta = await sharp(hosted.bytes).metadata();
		expect(Math.max(meta.width!, meta.height!)).toBeLessThanOrEqual(300);
		expect(hosted.bytes.length).toBeLessThanOrEqual(20_000);
	});

	test('a video (auto, by URL) is hosted as given even with Fit For set', async () => {
		const video = makeMp4(4000);
		const url = env.media.put('/fit-for-video', video);
		const json = await runUpload({ inputType: 'url', url, mediaType: 'auto', options: { fitFor: 'x' } });
		expect(json.mediaType).toBe('video');
		expect((await download(json.url)).bytes.equals(video)).toBe(true);
	});

	test('an image that cannot fit: the service names the option', async () => {
		// Noise does not compress: no PNG encoding of it comes near 11 kB.
		const png = await sharp({ create: { width: 400, height: 400, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).png().toBuffer();
		const result = await run([node(IMAGE_GEN_UPLOAD, 'Upload', { inputType: 'base64', base64: png.toString('base64'), mediaType: 'image', outputFormat: 'png', options: { fitFor: 'custom', maxSizeMb: 0.011 } })]);
		expect(result.error('Upload')?.httpCode).toBe('400');
		expect(result.error('Upload')?.description).toMatch(/field 'max_bytes'/);
		expect(result.error('Upload')?.description).not.toMatch(/unknown_field/);
	});
});

describe('Get Info and Delete', () => {
	test('Get Info by id and by URL; Delete by URL takes the file offline; then both answer 404', async () => {
		const png = await makeImage('png', 40, 30);
		const uploaded = await runUpload({ inputType: 'base64', base64: png.toString('base64'), mediaType: 'auto' });

		for (const fileId of [uploaded.id, uploaded.url]) {
			const info = await run([node(IMAGE_GEN_UPLOAD, 'Info', { operation: 'getInfo', fileId })]);
			expect(info.error()).toBeUndefined();
			expect(info.output('Info')[0]!.json).toEqual({
				id: uploaded.id,
				url: uploaded.url,
				mediaType: 'image',
				mimeType: 'image/png',
				sizeBytes: png.length,
				createdAt: expect.any(String),
				expiresAt: uploaded.expiresAt,
				provenance: { c2pa: 'none', digital_source_type: null },
			});
		}

		const removed = await run([node(IMAGE_GEN_UPLOAD, 'Delete', { operation: 'delete', fileId: uploaded.url })]);
		expect(removed.error()).toBeUndefined();
		expect(removed.output('Delete')[0]!.json).toEqual({ id: uploaded.id, deleted: true });
		expect((await download(uploaded.url)).status).toBe(404);

		const gone = await run([node(IMAGE_GEN_UPLOAD, 'Info', { operation: 'getInfo', fileId: uploaded.id })]);
		expect(gone.error('Info')?.name).toBe('NodeApiError');
		expect(gone.error('Info')?.httpCode).toBe('404');
	});

	test('Delete retries a 503 storage_unavailable after its Retry-After and then deletes', async () => {
		const uploaded = await runUpload({ inputType: 'base64', base64: (await makeImage('png', 12, 12)).toString('base64'), mediaType: 'auto' });
		env.proxy.reset();
		const unavailable = {
			error: { message: 'The file storage cannot be reached right now; nothing was changed, retry in a few seconds', type: 'server_error', param: null, code: 'storage_unavailable' },
		};
		env.proxy.failNext({ status: 503, body: unavailable, headers: { 'retry-after': '1' } });
		const started = Date.now();
		const removed = await run([node(IMAGE_GEN_UPLOAD, 'Delete', { operation: 'delete', fileId: uploaded.id })]);
		expect(removed.error()).toBeUndefined();
		expect(removed.output('Delete')[0]!.json).toEqual({ id: uploaded.id, deleted: true });
		expect(Date.now() - started).toBeGreaterThanOrEqual(900);
		expect(env.proxy.requests.filter((request) => request.method === 'DELETE')).toHaveLength(2);
		expect((await download(uploaded.url)).status).toBe(404);
	});

	test('an invalid request after an upload leaves nothing hosted: the uploaded image is deleted', async () => {
		const big = await makeImage('png', 300, 200);
		const parameters = { model: 'p-image-edit', prompt: 'x', aspectRatio: '5:1', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] }, options: { inlineLimitMb: 0 } };
		await run([node(IMAGE_GEN, 'ImageGen', parameters)], binaryItem(big, 'big.png', 'image/png'));
		const removal = env.proxy.requests.find((request) => request.method === 'DELETE');
		expect(removal?.response?.status).toBe(204);
	});
});

describe('ImageGen: seeds and retry safety', () => {
	const generate = (options: Record<string, unknown>) => node(IMAGE_GEN, 'ImageGen', { model: 'p-image', prompt: 'A lighthouse', responseFormat: 'b64_json', options });

	test('the seed is sent, echoed in the output, and the same seed gives the same image', async () => {
		const first = await run([generate({ seed: 1234 })]);
		const second = await run([generate({ seed: 1234 })]);
		const other = await run([generate({ seed: 99 })]);
		for (const result of [first, second, other]) expect(result.error()).toBeUndefined();
		const sent = env.proxy.requests.filter((request) => request.path === '/v1/images/generations').map((request) => JSON.parse(request.json!).seed);
		expect(sent).toEqual([1234, 1234, 99]);
		const [a, b, c] = [first, second, other].map((result) => result.output('ImageGen')[0]!);
		expect(a!.json.seed).toBe(1234);
		expect(c!.json.seed).toBe(99);
		expect(a!.json.provenance).toEqual({ c2pa: 'signed', digital_source_type: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia' });
		const [bytesA, bytesB, bytesC] = await Promise.all([a!, b!, c!].map((item) => binaryBytes(item)));
		// The same picture twice, each with a watermark of its own; another seed is another picture.
		expect(await pictureDistance(bytesA!, bytesB!)).toBeGreaterThan(30);
		expect(await pictureDistance(bytesA!, bytesC!)).toBeLessThan(20);
	});

	test('an answer lost on the way: the retry is replayed by the service, not generated again', async () => {
		env.proxy.loseNextAnswers(1);
		const result = await run([node(IMAGE_GEN, 'ImageGen', { model: 'p-image', prompt: 'Only once', responseFormat: 'url', options: { download: false } })]);
		expect(result.error()).toBeUndefined();
		const attempts = env.proxy.requests.filter((request) => request.path === '/v1/images/generations');
		expect(attempts).toHaveLength(2);
		expect(attempts[1]!.idempotencyKey).toBe(attempts[0]!.idempotencyKey);
		expect(attempts[0]!.response?.headers['idempotent-replayed']).toBeUndefined();
		expect(attempts[1]!.response?.headers['idempotent-replayed']).toBe('true');
	});
});
