/**
 * The Verify operation of the ImageGen Upload node, run by n8n-core's engine against a loopback
 * stand-in of `POST /v1/provenance/verify` (support/verify-service.ts): a binary field streamed as
 * the multipart part `file`, a URL or base64 sent as JSON `image`, the answer's marks as the item's
 * JSON in camelCase, refusals mapped to the parameter behind the field, and a service without the
 * route told apart from a failed check.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeImage, makeMp4, makePdf } from '../server/support/media';
import { startMediaHost, type MediaHost } from '../server/support/media-host';
import { startBareService, type BareService } from './support/bare-service';
import { binaryBytes, IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';
import { startVerifyService, type VerifyAnswer, type VerifyService } from './support/verify-service';

const API_KEY = 'verify-test-key';
const TRAINED = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';

const MARKED: VerifyAnswer = {
	c2pa: { present: true, valid: true, signer: 'imagegen-server self-signed', digital_source_type: TRAINED },
	watermark: { found: true, algorithm: 'imagegen-dwt-dct-1', payload: '3f9c1a7e52b04d18' },
	generation: { id: 'gen_3q27wEXAMPLE', model: 'p-image', created_at: '2026-11-27T21:14:03.000Z' },
};
/** Marks without their record: a watermark this service's records do not hold, metadata stripped. */
const STRIPPED: VerifyAnswer = {
	c2pa: { present: false, valid: false, signer: null, digital_source_type: null },
	watermark: { found: true, algorithm: 'imagegen-dwt-dct-1', payload: '0011223344556677' },
	generation: null,
};

const MARKED_JSON = {
	c2pa: { present: true, valid: true, signer: 'imagegen-server self-signed', digitalSourceType: TRAINED },
	watermark: { found: true, algorithm: 'imagegen-dwt-dct-1', payload: '3f9c1a7e52b04d18' },
	generation: { id: 'gen_3q27wEXAMPLE', model: 'p-image', createdAt: '2026-11-27T21:14:03.000Z' },
};
const UNMARKED_JSON = {
	c2pa: { present: false, valid: false, signer: null, digitalSourceType: null },
	watermark: { found: false, algorithm: null, payload: null },
	generation: null,
};

let service: VerifyService;
let media: MediaHost;
let marked: Buffer;
let plain: Buffer;
let stripped: Buffer;

beforeAll(async () => {
	[service, media, marked, plain, stripped] = await Promise.all([
		startVerifyService(),
		startMediaHost(),
		makeImage('png', 96, 64),
		makeImage('jpeg', 80, 80),
		makeImage('webp', 72, 48),
	]);
	service.mark(marked, MARKED);
	service.mark(stripped, STRIPPED);
});
afterAll(async () => {
	await service?.close();
	await media?.close();
});
beforeEach(() => service.reset());

const verify = (parameters: Record<string, unknown>, extra: Partial<WorkflowNode> = {}): WorkflowNode => ({ name: 'Verify', type: IMAGE_GEN_UPLOAD, parameters: { operation: 'verify', ...parameters }, ...extra });

async function runVerify(parameters: Record<string, unknown>, seed?: SeedItem[], extra: Partial<WorkflowNode> = {}, baseUrl = service.baseUrl) {
	const result = await runWorkflow({ credentials: { apiKey: API_KEY, baseUrl }, nodes: [verify(parameters, extra)], seed });
	return { result, items: result.output('Verify'), error: result.error('Verify') };
}

const binaryItem = (bytes: Buffer, fileName: string, mimeType: string): SeedItem => ({ binary: { data: { bytes, fileName, mimeType } } });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('a binary field: streamed as the multipart part file', () => {
	test('a marked image: the answer as camelCase JSON, one part file with the very bytes, the key sent', async () => {
		const { items, error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'data' }, [binaryItem(marked, 'kite.png', 'image/png')]);
		expect(error).toBeUndefined();
		expect(items).toHaveLength(1);
		expect(items[0]!.json).toEqual(MARKED_JSON);
		expect(items[0]!.pairedItem).toEqual({ item: 0 });
		expect(items[0]!.binary).toBeUndefined();
		const [call] = service.calls;
		expect(call!.path).toBe('/v1/provenance/verify');
		expect(call!.headers.authorization).toBe(`Bearer ${API_KEY}`);
		expect(call!.form).toEqual([['file', { fileName: 'kite.png', type: 'image/png', size: marked.length }]]);
		expect(call!.imageSha256).toBe(sha256(marked));
		// A Blob of known size: n8n's client streams it with its length instead of buffering it to count.
		expect(Number(call!.headers['content-length'])).toBe(call!.body.length);
		expect(call!.headers['transfer-encoding']).toBeUndefined();
	});

	test('an image nobody marked: found false, generation null', async () => {
		const { items, error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'photo' }, [{ binary: { photo: { bytes: plain, fileName: 'photo.jpg', mimeType: 'image/jpeg' } } }]);
		expect(error).toBeUndefined();
		expect(items[0]!.json).toEqual(UNMARKED_JSON);
	});

	test('several items: one output each, in input order, each paired with its input', async () => {
		const seed = [binaryItem(stripped, 'a.webp', 'image/webp'), binaryItem(marked, 'b.png', 'image/png'), binaryItem(plain, 'c.jpg', 'image/jpeg')];
		const { items, error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'data', options: { concurrency: 3 } }, seed);
		expect(error).toBeUndefined();
		expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(items.map((item) => (item.json.watermark as { payload: unknown }).payload)).toEqual(['0011223344556677', '3f9c1a7e52b04d18', null]);
		expect(items[0]!.json.c2pa).toEqual(UNMARKED_JSON.c2pa);
		expect(items[0]!.json.generation).toBeNull();
		expect(service.calls).toHaveLength(3);
	});

	test('a 503 is repeated with the file sent whole again', async () => {
		service.failNext(503, { error: { message: 'Busy', type: 'server_error', param: null, code: 'overloaded' } });
		const { items, error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'data', options: { maxRetries: 1 } }, [binaryItem(marked, 'kite.png', 'image/png')]);
		expect(error).toBeUndefined();
		expect(service.calls).toHaveLength(2);
		expect(service.calls[1]!.imageSha256).toBe(sha256(marked));
		expect(items[0]!.json).toEqual(MARKED_JSON);
	});

	test("bytes that look like a PNG but do not decode: the service's 400 naming file points at Input Binary Field", async () => {
		const broken = Buffer.concat([marked.subarray(0, 40), Buffer.alloc(400, 7)]);
		const { error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'data' }, [binaryItem(broken, 'broken.png', 'image/png')]);
		expect(error?.name).toBe('NodeApiError');
		expect(error?.message).toBe("'file' could not be read as an image");
		expect(error?.description).toMatch(/Check the parameter 'binaryPropertyName' \(HTTP 400, code undecodable_image, field 'file'\)/);
		expect(service.calls).toHaveLength(1);
	});

	test.each([
		['a video', makeMp4(), 'clip.mp4', 'video/mp4', /^Parameter 'binaryPropertyName' of item 0: the binary field 'data' holds video\/mp4, not an image/],
		['a PDF', makePdf(), 'doc.pdf', 'application/pdf', /^Parameter 'binaryPropertyName' of item 0: the binary field 'data' holds no supported image \(png, jpeg, webp, gif, avif\); it is declared as application\/pdf/],
	])('%s fails before any request, naming the parameter', async (_case, bytes, fileName, mimeType, message) => {
		const { error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'data' }, [binaryItem(bytes, fileName, mimeType)]);
		expect(error?.name).toBe('NodeOperationError');
		expect(error?.message).toMatch(message);
		expect(service.calls).toHaveLength(0);
	});

	test('a missing binary field is named before any request', async () => {
		const { error } = await runVerify({ inputType: 'binary', binaryPropertyName: 'image' }, [{ json: {} }]);
		expect(error?.message).toMatch(/'image'/);
		expect(service.calls).toHaveLength(0);
	});
});

describe('a URL or base64: sent as JSON image', () => {
	test('a URL: only { image } is sent and the service fetches it', async () => {
		const url = media.put('/marked.png', marked, { 'content-type': 'image/png' });
		const hits = media.hits();
		const { items, error } = await runVerify({ inputType: 'url', url: `  ${url} ` });
		expect(error).toBeUndefined();
		expect(service.calls[0]!.json).toEqual({ image: url });
		expect(service.calls[0]!.headers['content-type']).toMatch(/^application\/json/);
		expect(media.hits() - hits).toBe(1);
		expect(items[0]!.json).toEqual(MARKED_JSON);
		expect(items[0]!.pairedItem).toEqual({ item: 0 });
	});

	test("a URL to something that is not an image: the service's 400 naming image points at URL", async () => {
		const url = media.put('/notes.txt', Buffer.from('plain words, no pixels'), { 'content-type': 'text/plain' });
		const { error } = await runVerify({ inputType: 'url', url });
		expect(error?.name).toBe('NodeApiError');
		expect(error?.message).toBe("'image' could not be read as an image");
		expect(error?.description).toMatch(/Check the parameter 'url' \(HTTP 400, code undecodable_image, field 'image'\)/);
	});

	test.each([
		['raw base64', (bytes: Buffer) => bytes.toString('base64')],
		['a data URI', (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`],
	])('%s: sent as it is', async (_case, encode) => {
		const base64 = encode(marked);
		const { items, error } = await runVerify({ inputType: 'base64', base64 });
		expect(error).toBeUndefined();
		expect(service.calls[0]!.json).toEqual({ image: base64 });
		expect(items[0]!.json).toEqual(MARKED_JSON);
	});

	test("base64 of bytes that do not decode: the service's 400 naming image points at Base64", async () => {
		const { error } = await runVerify({ inputType: 'base64', base64: Buffer.concat([marked.subarray(0, 40), Buffer.alloc(64, 1)]).toString('base64') });
		expect(error?.description).toMatch(/Check the parameter 'base64' \(HTTP 400, code undecodable_image, field 'image'\)/);
	});

	test.each([
		['an empty URL', { inputType: 'url', url: '={{ "" }}' }, /^Parameter 'url' of item 0: 'url' is empty/],
		['an ftp URL', { inputType: 'url', url: 'ftp://example.com/a.png' }, /^Parameter 'url' of item 0: .*unsupported URL scheme 'ftp:'/],
		['base64 as the URL', { inputType: 'url', url: 'aGVsbG8=' }, /^Parameter 'url' of item 0: 'url' must be an http\(s\) URL/],
		['text that is not base64', { inputType: 'base64', base64: 'not base64 at all!' }, /^Parameter 'base64' of item 0: /],
		['a URL as base64', { inputType: 'base64', base64: 'https://example.com/a.png' }, /^Parameter 'base64' of item 0: 'base64' holds a URL/],
		['a video as base64', { inputType: 'base64', base64: makeMp4().toString('base64') }, /^Parameter 'base64' of item 0: the base64 content holds video\/mp4, not an image/],
		['an unknown input type', { inputType: 'file' }, /^Parameter 'inputType' of item 0: unknown input type "file"; use one of binary, url, base64/],
	])('%s fails before any request', async (_case, parameters, message) => {
		const { error } = await runVerify(parameters);
		expect(error?.message).toMatch(message);
		expect(service.calls).toHaveLength(0);
	});
});

test('continue on fail: the bad item becomes an error item, the others are checked, order kept', async () => {
	const seed = [{ json: { image: marked.toString('base64') } }, { json: { image: 'bad!' } }, { json: { image: plain.toString('base64') } }];
	const { items, result } = await runVerify({ inputType: 'base64', base64: '={{ $json.image }}' }, seed, { onError: 'continueRegularOutput' });
	expect(result.error()).toBeUndefined();
	expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
	expect(items[0]!.json).toEqual(MARKED_JSON);
	expect(String(items[1]!.json.error)).toMatch(/Parameter 'base64' of item 1/);
	expect(items[2]!.json.watermark).toEqual({ found: false, algorithm: null, payload: null });
});

describe('services that cannot check', () => {
	let bare: BareService;
	beforeAll(async () => (bare = await startBareService()));
	afterAll(async () => await bare?.close());

	test('a service without the route (404): an error that says the service has no provenance check', async () => {
		const { error } = await runVerify({ inputType: 'base64', base64: marked.toString('base64') }, undefined, {}, bare.baseUrl);
		expect(error?.name).toBe('NodeApiError');
		expect(error?.message).toMatch(/^The ImageGen API at this Base URL has no provenance check: POST \/provenance\/verify answered HTTP 404/);
		expect(error?.description).toMatch(/imagegen-server/);
		expect(bare.requests.map((request) => `${request.method} ${request.path}`)).toEqual(['POST /v1/provenance/verify']);
	});

	test('an answer without c2pa.present or watermark.found is an error that says what is missing', async () => {
		service.failNext(200, { c2pa: { present: true }, watermark: {} });
		const { error } = await runVerify({ inputType: 'base64', base64: marked.toString('base64') });
		expect(error?.message).toMatch(/answered without a result: a verify answer needs c2pa\.present and watermark\.found/);
	});

	test('fields of a well-formed answer that are absent or of another type are left out, nothing made up', async () => {
		service.failNext(200, { c2pa: { present: true, valid: 'yes', signer: 'Someone' }, watermark: { found: false, payload: 7 }, generation: { model: 'p-image' }, extra: 1 });
		const { items, error } = await runVerify({ inputType: 'base64', base64: marked.toString('base64') });
		expect(error).toBeUndefined();
		expect(items[0]!.json).toEqual({ c2pa: { present: true, signer: 'Someone' }, watermark: { found: false }, generation: { model: 'p-image' } });
	});
});

describe('examples/imagegen-upload-verify.json', () => {
	test('its Verify node, as saved, checks the URL it is given', async () => {
		const saved = JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', 'imagegen-upload-verify.json'), 'utf8')) as {
			nodes: Array<{ name: string; type: string; typeVersion: number; parameters: Record<string, unknown> }>;
		};
		const node = saved.nodes.find((entry) => entry.type === IMAGE_GEN_UPLOAD && entry.parameters.operation === 'verify');
		expect(node?.typeVersion).toBe(1);
		const url = media.put('/example.png', marked, { 'content-type': 'image/png' });
		const parameters = structuredClone(node!.parameters);
		const result = await runWorkflow({ credentials: { apiKey: API_KEY, baseUrl: service.baseUrl }, nodes: [{ name: node!.name, type: node!.type, parameters }], seed: [{ json: { imageUrl: url } }] });
		expect(result.error()).toBeUndefined();
		expect(service.calls[0]!.json).toEqual({ image: url });
		expect(result.output(node!.name)[0]!.json).toEqual(MARKED_JSON);
	});
});

describe('against the service itself (POST /v1/provenance/verify in process)', () => {
	const env = useNodeTestEnvironment();

	test("an image the ImageGen node generated, checked from its binary: both marks, the service's answer field for field in camelCase", async () => {
		const result = await runWorkflow({
			credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl },
			nodes: [
				{ name: 'Generate', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: 'A red kite over dunes', aspectRatio: '1:1', outputFormat: 'png', responseFormat: 'url' } },
				verify({ inputType: 'binary', binaryPropertyName: 'data' }),
			],
		});
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Verify');
		expect(item!.json).toMatchObject({
			c2pa: { present: true, valid: true, signer: expect.any(String), digitalSourceType: TRAINED },
			watermark: { found: true, algorithm: expect.any(String), payload: expect.stringMatching(/^[0-9a-f]+$/) },
		});
		const [sent] = env.proxy.requests.filter((request) => request.path === '/v1/provenance/verify');
		expect(sent!.contentType).toMatch(/^multipart\/form-data; boundary=/);
		// The same bytes asked directly: the item carries exactly what the service answered, generation included.
		const image = await binaryBytes(result.output('Generate')[0]!);
		const form = new FormData();
		form.append('file', new Blob([image], { type: 'image/png' }), 'kite.png');
		const direct = await fetch(`${env.server.origin}/v1/provenance/verify`, { method: 'POST', headers: { authorization: `Bearer ${env.server.apiKey}` }, body: form });
		expect(direct.status).toBe(200);
		const answer = (await direct.json()) as VerifyAnswer;
		expect(item!.json).toEqual({
			c2pa: { present: answer.c2pa.present, valid: answer.c2pa.valid, signer: answer.c2pa.signer, digitalSourceType: answer.c2pa.digital_source_type },
			watermark: answer.watermark,
			generation: answer.generation && { id: answer.generation.id, model: answer.generation.model, createdAt: answer.generation.created_at },
		});
	});

	test("a damaged PNG: the service's own 400 naming file points at Input Binary Field", async () => {
		const broken = Buffer.concat([marked.subarray(0, 24), Buffer.alloc(200, 9)]);
		const result = await runWorkflow({
			credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl },
			nodes: [verify({ inputType: 'binary', binaryPropertyName: 'data' })],
			seed: [binaryItem(broken, 'broken.png', 'image/png')],
		});
		const error = result.error('Verify');
		expect(error?.name).toBe('NodeApiError');
		expect(error?.httpCode).toBe('400');
		expect(error?.description).toMatch(/Check the parameter 'binaryPropertyName' \(HTTP 400, .*field 'file'\)/);
	});
});
