/**
 * POST /v1/provenance/verify: an image with a real watermark (embedWatermark, its payload a
 * record the store keeps) is found in PNG and JPEG, sent as a multipart file, a data URI, base64
 * or the URL of a file the service hosts, and names its generation to the key that made it only;
 * an unmarked image is found to carry nothing; an image the service generated shows its signed
 * C2PA manifest. Not an image, too large or too many pixels: refused, naming the field.
 */
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { newProvenancePayload } from '../../../server/src/provenance/provenance-records';
import { TEST_API_KEY } from '../../helpers/server';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, download, expectApiError, postJson, uploadFile } from '../support/http';
import { startMediaHost, type MediaHost } from '../support/media-host';
import { makeImage, makeMp4 } from '../support/media';
import { markedImage, unmarkedImage, writeRecord } from '../provenance/support/marked-images';

const OTHER_KEY = 'other-key-0123456789abcdef';
const ALGORITHM = 'imagegen.dct-spread-spectrum.1';
const TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';

let server: InProcessServer;
const other = () => ({ origin: server.origin, apiKey: OTHER_KEY });
const owner = () => ({ origin: server.origin, apiKey: TEST_API_KEY });

beforeAll(async () => {
	server = await startInProcessServer({ apiKey: `${TEST_API_KEY},${OTHER_KEY}`, args: ['--log-level', 'silent'] });
});
afterAll(() => server.stop({ removeData: true }));

function verifyFile(as: { origin: string; apiKey: string }, bytes: Buffer, options: { field?: string; mimeType?: string; extra?: Record<string, string> } = {}) {
	const form = new FormData();
	form.append(options.field ?? 'file', new Blob([bytes], { type: options.mimeType ?? 'application/octet-stream' }), 'image.bin');
	for (const [name, value] of Object.entries(options.extra ?? {})) form.append(name, value);
	return call(as, '/v1/provenance/verify', { method: 'POST', body: form });
}

const verifyJson = (as: { origin: string; apiKey: string }, body: unknown) => postJson(as, '/v1/provenance/verify', body);

describe.each(['png', 'jpeg'] as const)('a %s with a watermark', (format) => {
	let image: Buffer;
	let record: Awaited<ReturnType<typeof writeRecord>>;
	beforeAll(async () => {
		record = await writeRecord(server.app.provenanceRecords, apiKeyIdOf(TEST_API_KEY), { model: 'p-image-edit' });
		image = await markedImage(record.payload, format);
	});
	const payload = () => Buffer.from(record.payload).toString('hex');

	test('sent as a file, names its generation to the key that made it', async () => {
		const answer = await verifyFile(owner(), image);
		expect(answer.status).toBe(200);
		expect(answer.body).toEqual({
			c2pa: { present: false, valid: false, signer: null, digital_source_type: null },
			watermark: { found: true, algorithm: ALGORITHM, payload: payload() },
			generation: { id: record.generationId, model: 'p-image-edit', created_at: record.createdAt.toISOString() },
		});
	});

	test('to another key, the mark is found but the generation is not named', async () => {
		const answer = await verifyFile(other(), image);
		expect(answer.status).toBe(200);
		expect(answer.body.watermark).toEqual({ found: true, algorithm: ALGORITHM, payload: payload() });
		expect(answer.body.generation).toBeNull();
	});

	test('sent as a data URI and as base64, the same answer', async () => {
		const dataUri = await verifyJson(owner(), { image: `data:image/${format};base64,${image.toString('base64')}` });
		const base64 = await verifyJson(owner(), { image: image.toString('base64') });
		for (const answer of [dataUri, base64]) {
			expect(answer.status).toBe(200);
			expect(answer.body.generation).toEqual({ id: record.generationId, model: 'p-image-edit', created_at: record.createdAt.toISOString() });
		}
	});
});

test('an image nobody marked: nothing found, no generation', async () => {
	for (const format of ['png', 'jpeg'] as const) {
		const answer = await verifyFile(owner(), await unmarkedImage(format));
		expect(answer.status).toBe(200);
		expect(answer.body).toEqual({
			c2pa: { present: false, valid: false, signer: null, digital_source_type: null },
			watermark: { found: false, algorithm: null, payload: null },
			generation: null,
		});
	}
});

test('a mark whose payload names no record this service keeps: found, no generation', async () => {
	const payload = newProvenancePayload();
	const answer = await verifyFile(owner(), await markedImage(payload, 'png'));
	expect(answer.body).toMatchObject({ watermark: { found: true, payload: Buffer.from(payload).toString('hex') }, generation: null });
});

test('the URL of a file the service hosts is read from storage (its loopback address is never fetched)', async () => {
	const record = await writeRecord(server.app.provenanceRecords, apiKeyIdOf(TEST_API_KEY));
	const uploaded = await uploadFile(owner(), await markedImage(record.payload, 'png'), {}, { mimeType: 'image/png' });
	expect(uploaded.status).toBe(200);
	const answer = await verifyJson(owner(), { image: uploaded.body.imageUrl });
	expect(answer.status).toBe(200);
	expect(answer.body.generation).toMatchObject({ id: record.generationId });
});

describe('URLs elsewhere go through the address check', () => {
	let host: MediaHost;
	beforeAll(async () => {
		host = await startMediaHost();
	});
	afterAll(() => host.close());

	test('a loopback address is refused, naming image', async () => {
		const url = host.put('/marked.png', await unmarkedImage('png'));
		expectApiError(await verifyJson(owner(), { image: url }), 400, 'image');
		expect(host.hits()).toBe(0);
	});

	test('with --allow-private-urls it is fetched and checked', async () => {
		const open = await startInProcessServer({ args: ['--log-level', 'silent', '--allow-private-urls'] });
		try {
			const record = await writeRecord(open.app.provenanceRecords, apiKeyIdOf(TEST_API_KEY));
			const url = host.put('/fetched.jpg', await markedImage(record.payload, 'jpeg'));
			const answer = await verifyJson(open, { image: url });
			expect(answer.status).toBe(200);
			expect(answer.body.generation).toMatchObject({ id: record.generationId });
		} finally {
			await open.stop({ removeData: true });
		}
	});
});

test('an image the service generated shows its signed C2PA manifest', async () => {
	const generated = await postJson(owner(), '/v1/images/generations', { model: 'p-image', prompt: 'a red kite over a beach' });
	expect(generated.status).toBe(200);
	const { bytes } = await download(generated.body.data[0].url);
	const answer = await verifyFile(owner(), bytes);
	expect(answer.status).toBe(200);
	expect(answer.body.c2pa).toEqual({ present: true, valid: true, signer: 'imagegen-server content credentials', digital_source_type: TRAINED_ALGORITHMIC_MEDIA });
	// The same file with bytes added after signing: still a manifest, no longer valid, and no source type believed.
	const tampered = await verifyFile(owner(), Buffer.concat([bytes, Buffer.from('added after signing')]));
	expect(tampered.status).toBe(200);
	expect(tampered.body.c2pa).toMatchObject({ present: true, valid: false, digital_source_type: null });
});

describe('refusals name the field', () => {
	test('not an image: text, a video, an empty part, a damaged image', async () => {
		expectApiError(await verifyJson(owner(), { image: Buffer.from('just some words, not pixels').toString('base64') }), 400, 'image', /not an image/);
		expectApiError(await verifyFile(owner(), Buffer.from('just some words, not pixels')), 400, 'file', /not an image/);
		expectApiError(await verifyFile(owner(), makeMp4()), 400, 'file', /video/);
		const png = await unmarkedImage('png');
		expectApiError(await verifyFile(owner(), png.subarray(0, 200)), 400, 'file');
	});

	test('a body without the image, or with another field', async () => {
		expectApiError(await verifyJson(owner(), {}), 400, 'image');
		expectApiError(await verifyJson(owner(), { image: 42 }), 400, 'image');
		expectApiError(await verifyJson(owner(), { image: 'ftp://example.com/a.png' }), 400, 'image');
		expectApiError(await verifyJson(owner(), { image: (await unmarkedImage('png')).toString('base64'), output_format: 'png' }), 400, 'output_format');
		expectApiError(await verifyFile(owner(), await unmarkedImage('png'), { extra: { note: 'x' } }), 400, 'note');
		expectApiError(await verifyFile(owner(), await unmarkedImage('png'), { field: 'image' }), 400, 'image');
		const empty = await call(owner(), '/v1/provenance/verify', { method: 'POST', body: new FormData() });
		expectApiError(empty, 400, 'file');
	});

	test('without a key: 401', async () => {
		const answer = await call(owner(), '/v1/provenance/verify', { method: 'POST', auth: null, headers: { 'content-type': 'application/json' }, body: '{}' });
		expect(answer.status).toBe(401);
	});
});

describe('bounded as uploads are', () => {
	let small: InProcessServer;
	beforeAll(async () => {
		// 16 KiB of upload, 100 000 pixels: a 640 × 480 PNG is over both.
		small = await startInProcessServer({ args: ['--log-level', 'silent', '--max-upload-mb', String(16 / 1024), '--max-image-pixels', '100000'] });
	});
	afterAll(() => small.stop({ removeData: true }));

	test('a file over the upload limit: 413 naming it, in every form', async () => {
		const large = await unmarkedImage('png');
		expectApiError(await verifyFile(small, large), 413, 'file');
		expectApiError(await verifyJson(small, { image: large.toString('base64') }), 413, 'image');
	});

	test('a picture over --max-image-pixels: 400 naming it, before it is decoded', async () => {
		const wide = await makeImage('png', 400, 300);
		expect(wide.length).toBeLessThan(16 * 1024);
		expectApiError(await verifyFile(small, wide), 400, 'file', /100000 px.*--max-image-pixels/);
	});
});

test('the OpenAPI document describes the route, with a request example', async () => {
	const document = (await call(owner(), '/v1/openapi.json')).body;
	const operation = document.paths['/v1/provenance/verify'].post;
	expect(operation.operationId).toBe('verifyImage');
	expect(Object.keys(operation.requestBody.content).sort()).toEqual(['application/json', 'multipart/form-data']);
	expect(Object.keys(operation.requestBody.content['application/json'].examples).length).toBeGreaterThan(0);
	expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '413']));
});
