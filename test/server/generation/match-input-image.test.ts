/**
 * `aspect_ratio: match_input_image`, p-image-edit's default: the answer keeps the first input
 * image's shape (the catalog ratio nearest to it). The sandbox draws at that ratio; Replicate and
 * Pruna are sent `match_input_image` itself, and whatever they answer is brought to that ratio.
 */
import sharp from 'sharp';
import { buildTestApp, type InProcessApp } from '../support/app';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { makeImage } from '../support/media';
import { startMediaHost } from '../support/media-host';
import { providersFor } from '../support/providers';
import { TEST_API_KEY } from '../../helpers/server';
import { startRecordingProxy } from '../../nodes/support/recording-proxy';
import { generateIn } from './support/generate-in';

let sandbox: InProcessApp;
let hosted: InProcessApp;
let pruna: InProcessApp;
let fake: FakeHosts;
let wide: Buffer;
let square: Buffer;


beforeAll(async () => {
	fake = await startFakeHosts();
	[wide, square] = await Promise.all([makeImage('png', 1024, 576), makeImage('png', 512, 512)]);
	const env = { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1`, PRUNA_API_KEY: 'pruna-key', PRUNA_BASE_URL: `${fake.origin}/v1` };
	// Output URLs of the stand-in hosts are on loopback, which the address check refuses by default.
	const serving = (selection: string) => buildTestApp(['--allow-private-urls'], { providers: providersFor(selection, env) });
	[sandbox, hosted, pruna] = await Promise.all([buildTestApp(), serving('p-image-edit=replicate,p-image=pruna'), serving('p-image-edit=pruna')]);
});

afterAll(async () => {
	await Promise.all([sandbox?.close(), hosted?.close(), pruna?.close(), fake?.close()]);
});

beforeEach(() => fake.reset());

/** Inline answers, so the image's size can be read without a download. */
const generate = (app: InProcessApp, body: Record<string, unknown>) => generateIn(app, { response_format: 'b64_json', ...body });

async function sizeOf(answer: { body: any }): Promise<[number, number]> {
	const { width, height } = await sharp(Buffer.from(answer.body.data[0].b64_json, 'base64')).metadata();
	return [width!, height!];
}

const edit = (images: Buffer[], extra: Record<string, unknown> = {}) => ({ model: 'p-image-edit', prompt: 'make it blue', images: images.map((image) => image.toString('base64')), ...extra });

describe('on the sandbox', () => {
	test('a 16:9 photo edited without naming a ratio comes back 16:9, not reframed to 1:1', async () => {
		const answer = await generate(sandbox, edit([wide]));
		expect(answer.status).toBe(200);
		expect(await sizeOf(answer)).toEqual([1024, 576]);
	});

	test('match_input_image follows the first input only, at the catalog ratio nearest to it', async () => {
		// 900 × 1250 is 0.72: nearest 3:4 (0.75) of the catalog's ratios.
		const portrait = await makeImage('png', 900, 1250);
		const answer = await generate(sandbox, edit([portrait, wide], { aspect_ratio: 'match_input_image' }));
		expect(answer.status).toBe(200);
		expect(await sizeOf(answer)).toEqual([768, 1024]);
	});

	test('a JPEG turned by its EXIF orientation is matched as it is shown, not as it is stored', async () => {
		// Stored 1024 × 576, shown turned a quarter (orientation 6): a 9:16 picture.
		const turned = await sharp(wide).jpeg().withMetadata({ orientation: 6 }).toBuffer();
		const answer = await generate(sandbox, edit([turned]));
		expect(answer.status).toBe(200);
		expect(await sizeOf(answer)).toEqual([576, 1024]);
	});

	test('a named ratio still wins over the input’s shape', async () => {
		const answer = await generate(sandbox, edit([wide], { aspect_ratio: '1:1' }));
		expect(answer.status).toBe(200);
		expect(await sizeOf(answer)).toEqual([1024, 1024]);
	});

	test.each(['p-image', 'textimage-v2'])('match_input_image on %s, which takes no images: 400 naming aspect_ratio', async (model) => {
		const answer = await generate(sandbox, { model, prompt: 'x', aspect_ratio: 'match_input_image' });
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ param: 'aspect_ratio', type: 'invalid_request_error' });
		expect(answer.body.error.message).toContain('only p-image-edit take images');
	});

	test('GET /v1/models lists match_input_image as p-image-edit’s first ratio and its default, and for no other model', async () => {
		const response = await sandbox.request('/v1/models', { headers: sandbox.auth });
		const models = Object.fromEntries(((await response.json()) as { data: any[] }).data.map((model) => [model.id, model]));
		expect(models['p-image-edit'].aspect_ratios).toEqual(['match_input_image', '1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3']);
		expect(models['p-image-edit'].defaults.aspect_ratio).toBe('match_input_image');
		expect(models['p-image'].aspect_ratios).not.toContain('match_input_image');
		expect(models['p-image'].defaults.aspect_ratio).toBe('1:1');
	});
});

describe('on hosts that take match_input_image', () => {
	test.each([
		['replicate', () => hosted, '/v1/models/prunaai/p-image-edit/predictions'],
		['pruna', () => pruna, '/v1/predictions'],
	])('%s is sent match_input_image; its square answer is brought to the input’s 16:9', async (_host, app, createPath) => {
		fake.setImage(square);
		const answer = await generate(app(), edit([wide]));
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', createPath)[0]!.json.input.aspect_ratio).toBe('match_input_image');
		expect(await sizeOf(answer)).toEqual([1024, 576]);
	});

	test('replicate: an answer already at the input’s shape is kept as the host drew it', async () => {
		const portrait = await makeImage('png', 1152, 2048);
		fake.setImage(portrait);
		const answer = await generate(hosted, edit([await makeImage('png', 540, 960)], { aspect_ratio: 'match_input_image' }));
		expect(answer.status).toBe(200);
		expect(await sizeOf(answer)).toEqual([1152, 2048]);
	});

	test('an input given by URL is fetched once, though both the ratio and the host read it', async () => {
		const media = await startMediaHost();
		try {
			fake.setImage(wide);
			const answer = await generate(hosted, { model: 'p-image-edit', prompt: 'x', images: [media.put('/wide.png', wide, { 'content-type': 'image/png' })] });
			expect(answer.status).toBe(200);
			expect(media.hits()).toBe(1);
			expect(fake.callsTo('POST', '/v1/models/')[0]!.json.input).toMatchObject({ aspect_ratio: 'match_input_image', images: [`data:image/png;base64,${wide.toString('base64')}`] });
		} finally {
			await media.close();
		}
	});

	test('replicate: a named ratio is sent as named', async () => {
		fake.setImage(wide);
		const answer = await generate(hosted, edit([square], { aspect_ratio: '16:9' }));
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/models/')[0]!.json.input.aspect_ratio).toBe('16:9');
	});

	test('upstream, another server of this API, is sent the settled ratio, which any version of it takes', async () => {
		const proxy = await startRecordingProxy(sandbox.origin);
		const providers = providersFor('p-image-edit=upstream', { UPSTREAM_BASE_URL: `${proxy.baseUrl}`, UPSTREAM_API_KEY: TEST_API_KEY });
		const upstream = await buildTestApp(['--allow-private-urls'], { providers });
		try {
			const answer = await generate(upstream, edit([wide]));
			expect(answer.status).toBe(200);
			const sent = proxy.requests.find((request) => request.path === '/v1/images/generations')!;
			expect(/"aspect_ratio":"([^"]*)"/.exec(String(sent.json))?.[1]).toBe('16:9');
			expect(String(sent.json)).not.toContain('matchInputImage');
			expect(await sizeOf(answer)).toEqual([1024, 576]);
		} finally {
			await Promise.all([upstream.close(), proxy.close()]);
		}
	});

	test('a model without images sends its own default ratio, never match_input_image', async () => {
		fake.setImage(square);
		const answer = await generate(hosted, { model: 'p-image', prompt: 'a lighthouse' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/predictions')[0]!.json.input.aspect_ratio).toBe('1:1');
	});
});
