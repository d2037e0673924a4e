/**
 * Replicate: input images whose data URIs together would exceed 1 MiB go through Replicate's files
 * API (`POST /v1/files`, multipart part `content`, answered with `urls.get`) and are passed by URL;
 * models named in `REPLICATE_MODEL_VERSIONS` run as `POST /v1/predictions` with that `version`;
 * every create carries a `Cancel-After` deadline, and an `aborted` prediction (its deadline passed
 * before it started: nothing made, nothing charged) lets a fallback chain try its next host.
 * Against the loopback stand-in of Replicate (support/fake-hosts.ts).
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { buildTestApp, type InProcessApp } from '../support/app';
import { fakeHostsEnv, startFakeHosts, type FakeHosts, type RecordedCall } from '../support/fake-hosts';
import { makeImage } from '../support/media';
import { providersFor } from '../support/providers';
import { generateIn } from './support/generate-in';

const VERSION = 'acme/p-image-fork:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa';

let fake: FakeHosts;
let app: InProcessApp;
let versioned: InProcessApp;
let chained: InProcessApp;
let small: Buffer;
/** Noise does not compress: a PNG of about 3 MB. */
let large: Buffer;

const replicateEnv = (extra: Record<string, string> = {}) => ({ REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1`, ...extra });

beforeAll(async () => {
	fake = await startFakeHosts();
	small = await makeImage('png', 64, 48);
	large = await sharp(randomBytes(1000 * 1000 * 3), { raw: { width: 1000, height: 1000, channels: 3 } }).png().toBuffer();
	const serving = (env: Record<string, string>) =>
		buildTestApp(['--allow-private-urls'], { providers: providersFor('p-image=replicate,p-image-edit=replicate', env) });
	[app, versioned] = await Promise.all([serving(replicateEnv()), serving(replicateEnv({ REPLICATE_MODEL_VERSIONS: `p-image=${VERSION}` }))]);
	chained = await buildTestApp(['--allow-private-urls', '--generation-timeout-seconds', '60'], { providers: providersFor('p-image=replicate|pruna', fakeHostsEnv(fake.origin)) });
});

afterAll(async () => {
	await Promise.all([app?.close(), versioned?.close(), chained?.close(), fake?.close()]);
});

beforeEach(() => {
	fake.reset();
	fake.setImage(small);
});

const generate = (target: InProcessApp, body: Record<string, unknown>) => generateIn(target, { response_format: 'b64_json', ...body });

const edit = (images: Buffer[]) => ({ model: 'p-image-edit', prompt: 'make it blue', aspect_ratio: '4:3', images: images.map((image) => image.toString('base64')) });
const predictionInput = () => fake.callsTo('POST', '/v1/models/prunaai/p-image-edit/predictions')[0]!.json.input as { images: string[] };

/** The multipart body of a files API call, read as a browser would. */
async function uploadedFile(call: RecordedCall): Promise<File> {
	const form = await new Response(new Uint8Array(call.body), { headers: { 'content-type': String(call.headers['content-type']) } }).formData();
	return form.get('content') as File;
}

describe('input images and Replicate’s files API', () => {
	test('a 3 MB input is uploaded first and passed by its files API URL, not inline', async () => {
		const answer = await generate(app, edit([large]));
		expect(answer.status).toBe(200);
		const uploads = fake.callsTo('POST', '/v1/files');
		expect(uploads).toHaveLength(1);
		expect(uploads[0]!.headers.authorization).toBe('Bearer r8_test_token');
		const file = await uploadedFile(uploads[0]!);
		expect(file.type).toBe('image/png');
		expect(Buffer.from(await file.arrayBuffer()).equals(large)).toBe(true);
		expect(predictionInput().images).toEqual([`${fake.origin}/v1/files/rf1`]);
	});

	test('small inputs that fit together in 1 MiB stay inline as data URIs, with no upload', async () => {
		const answer = await generate(app, edit([small, small]));
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/files')).toHaveLength(0);
		expect(predictionInput().images).toEqual([`data:image/png;base64,${small.toString('base64')}`, `data:image/png;base64,${small.toString('base64')}`]);
	});

	test('inputs each small but together over 1 MiB are all uploaded, in order', async () => {
		// Three noise PNGs of about 430 KB: 1.7 MB as data URIs.
		const parts = await Promise.all([0, 1, 2].map(() => sharp(randomBytes(380 * 380 * 3), { raw: { width: 380, height: 380, channels: 3 } }).png().toBuffer()));
		const answer = await generate(app, edit(parts));
		expect(answer.status).toBe(200);
		const uploads = fake.callsTo('POST', '/v1/files');
		expect(uploads).toHaveLength(3);
		const sent = await Promise.all(uploads.map(async (call) => Buffer.from(await (await uploadedFile(call)).arrayBuffer())));
		const urls = predictionInput().images;
		expect(urls).toHaveLength(3);
		// Uploads run side by side: file rfN is the Nth to arrive; each URL must lead to its own input.
		parts.forEach((part, index) => expect(sent[Number(/\/v1\/files\/rf(\d+)$/.exec(urls[index]!)![1]) - 1]!.equals(part)).toBe(true));
	});

	test('an upload Replicate refuses: 502 naming the provider, and no prediction is created', async () => {
		fake.script('POST', '/v1/files', { status: 413, body: { title: 'Request Entity Too Large', detail: 'File exceeds the maximum size', status: 413 } });
		const answer = await generate(app, edit([large]));
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'upstream_rejected' });
		expect(answer.body.error.message).toContain('replicate');
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(0);
	});

	test('an upload answered without urls.get: 502 upstream_invalid_output, no prediction', async () => {
		fake.script('POST', '/v1/files', { status: 201, body: { id: 'f1', name: 'input-0.png', urls: {} } });
		const answer = await generate(app, edit([large]));
		expect(answer.status).toBe(502);
		expect(answer.body.error.code).toBe('upstream_invalid_output');
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(0);
	});
});

describe('REPLICATE_MODEL_VERSIONS', () => {
	test('a model with a version runs as POST /v1/predictions with that version', async () => {
		const answer = await generate(versioned, { model: 'p-image', prompt: 'a lighthouse', aspect_ratio: '4:3', seed: 5 });
		expect(answer.status).toBe(200);
		const created = fake.callsTo('POST', '/v1/predictions');
		expect(created).toHaveLength(1);
		expect(created[0]!.json).toEqual({ version: VERSION, input: { prompt: 'a lighthouse', aspect_ratio: '4:3', seed: 5 } });
		expect(created[0]!.headers.prefer).toBe('wait=5');
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(0);
	});

	test('a model without one keeps its official-model route', async () => {
		const answer = await generate(versioned, edit([small]));
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/models/prunaai/p-image-edit/predictions')).toHaveLength(1);
		expect(fake.callsTo('POST', '/v1/predictions')).toHaveLength(0);
	});

	test.each([
		['p-imag=acme/x:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa', /REPLICATE_MODEL_VERSIONS.*'p-imag'.*p-image, p-image-edit, textimage-v2/],
		['p-image=acme/x', /REPLICATE_MODEL_VERSIONS.*p-image.*owner\/name:version/],
		['p-image', /REPLICATE_MODEL_VERSIONS.*'p-image'.*<model>=owner\/name:version/],
	])('%s is refused at start-up, naming the variable', (value, message) => {
		expect(() => providersFor('p-image=replicate', replicateEnv({ REPLICATE_MODEL_VERSIONS: value }))).toThrow(message);
	});
});

describe('Replicate’s prediction deadline (`Cancel-After`) and `aborted` predictions', () => {
	/** An `aborted` prediction as Replicate answers it: its deadline passed before it started (https://replicate.com/docs/topics/predictions/lifecycle). */
	const aborted = (id: string) => ({
		id,
		status: 'aborted',
		output: null,
		error: null,
		urls: { get: `${fake.origin}/v1/predictions/${id}`, cancel: `${fake.origin}/v1/predictions/${id}/cancel` },
	});
	const seconds = (call: RecordedCall) => /^(\d+)s$/.exec(String(call.headers['cancel-after']))?.[1];

	test('every create carries Cancel-After: what is left of the time limit plus a margin, in seconds', async () => {
		expect((await generate(app, { model: 'p-image', prompt: 'a lighthouse', aspect_ratio: '4:3' })).status).toBe(200);
		expect((await generate(chained, { model: 'p-image', prompt: 'a lighthouse', aspect_ratio: '4:3' })).status).toBe(200);
		const [withDefaultLimit, withShortLimit] = fake.callsTo('POST', '/v1/models/prunaai/p-image/predictions');
		// The default limit is 120 s, the chained app's 60 s; the margin is 15 s.
		expect(Number(seconds(withDefaultLimit!))).toBeGreaterThan(120);
		expect(Number(seconds(withDefaultLimit!))).toBeLessThanOrEqual(135);
		expect(Number(seconds(withShortLimit!))).toBeGreaterThan(60);
		expect(Number(seconds(withShortLimit!))).toBeLessThanOrEqual(75);
	});

	test('an aborted prediction is answered as one that made nothing, not as a generic failure', async () => {
		fake.setPendingPolls(1);
		fake.script('GET', '/v1/predictions/r', { status: 200, body: aborted('r1') });
		const answer = await generate(app, { model: 'p-image', prompt: 'a lighthouse', aspect_ratio: '4:3' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.message).toBe('The replicate provider failed: the prediction was aborted, its deadline passed before it started (nothing was made or charged)');
	});

	test('after an aborted prediction a fallback chain tries its next host: Replicate made and charged nothing', async () => {
		fake.setPendingPolls(1);
		fake.script('GET', '/v1/predictions/r', { status: 200, body: aborted('r1') });
		const answer = await generate(chained, { model: 'p-image', prompt: 'a lighthouse', aspect_ratio: '4:3' });
		expect(answer.status).toBe(200);
		expect(fake.predictionsMade().map((id) => id[0])).toEqual(['r', 'p']);
	});
});
