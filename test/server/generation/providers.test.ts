/**
 * Real providers against loopback stand-ins of their hosts (test/server/support/fake-hosts.ts,
 * built from each host's documented shapes) and, for `upstream`, against a second real
 * imagegen-server. Checked: the exact request we send, that the bytes behind our URL are the
 * host's image, failures in our error shape, bounded retries, the time limit and cancellation.
 */
import { flatKeyPolicy } from '../../../server/src/keys/authenticate';
import sharp from 'sharp';
import { parseGenerationRequest } from '../../../core/schemas';
import { createGenerationRunner, type GenerationServices } from '../../../server/src/generation/run-generation';
import { ImageBytes } from '../../../server/src/media/image-bytes';
import { ImageWork } from '../../../server/src/media/image-work';
import { createSafeFetcher } from '../../../server/src/net/safe-fetch';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { startRecordingProxy, type RecordingProxy } from '../../nodes/support/recording-proxy';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { eventually, postJson } from '../support/http';
import { makeImage, pictureDistance, samePixels } from '../support/media';
import { FAST_HOSTS, providersFor } from '../support/providers';

let fake: FakeHosts;
/** Another origin, standing for whatever host an answer might name: it must never see a key. */
let other: FakeHosts;
let replicate: ServiceUnderTest;
/** Replicate behind a time limit of half a second, for the runs that must reach it. */
let hurried: ServiceUnderTest;
let pruna: ServiceUnderTest;
let ideogram: ServiceUnderTest;
let sandbox: ServiceUnderTest;
let sandboxProxy: RecordingProxy;
let upstream: ServiceUnderTest;
let wide: Buffer;
let square: Buffer;

/** Retries and polls at the stand-ins' pace. */
const FAST = { providerTiming: FAST_HOSTS };
// Output URLs of the stand-in hosts are on loopback, which the address check refuses by default.
// The hosts are the subject: marking (which re-encodes what they answer) is the provenance suites'.
const ARGS = ['--allow-private-urls', '--generation-timeout-seconds', '3', '--provenance', 'off'];
const REPLICATE = { REPLICATE_API_TOKEN: 'r8_test_token' };

beforeAll(async () => {
	[fake, other] = await Promise.all([startFakeHosts(), startFakeHosts()]);
	[wide, square] = await Promise.all([makeImage('png', 1024, 576), makeImage('png', 1024, 1024)]);
	sandbox = await startInProcessServer();
	sandboxProxy = await startRecordingProxy(sandbox.origin);
	const onReplicate = ['--providers', 'p-image=replicate,p-image-edit=replicate,textimage-v2=replicate'];
	[replicate, hurried, pruna, ideogram, upstream] = await Promise.all([
		startInProcessServer({ args: [...ARGS, ...onReplicate], env: { ...REPLICATE, REPLICATE_BASE_URL: `${fake.origin}/v1` }, parts: FAST }),
		startInProcessServer({ args: [...ARGS, ...onReplicate, '--generation-timeout-seconds', '0.5'], env: { ...REPLICATE, REPLICATE_BASE_URL: `${fake.origin}/v1` }, parts: FAST }),
		startInProcessServer({
			args: [...ARGS, '--providers', 'p-image=pruna,p-image-edit=pruna'],
			env: { PRUNA_API_KEY: 'pruna-test-key', PRUNA_BASE_URL: `${fake.origin}/v1` },
			parts: FAST,
		}),
		startInProcessServer({ args: [...ARGS, '--providers', 'textimage-v2=ideogram'], env: { IDEOGRAM_API_KEY: 'ideogram-key', IDEOGRAM_BASE_URL: fake.origin }, parts: FAST }),
		startInProcessServer({
			// Its host is a whole service that renders, marks and signs: more than the stand-ins' 3 s on a busy machine.
			args: [...ARGS, '--generation-timeout-seconds', '30', '--providers', 'p-image=upstream,p-image-edit=upstream,textimage-v2=upstream'],
			env: { UPSTREAM_BASE_URL: sandboxProxy.baseUrl, UPSTREAM_API_KEY: sandbox.apiKey },
			parts: FAST,
		}),
	]);
});

afterAll(async () => {
	await Promise.all([replicate, hurried, pruna, ideogram, upstream, sandbox].map((server) => server?.stop({ removeData: true })));
	await Promise.all([fake?.close(), other?.close(), sandboxProxy?.close()]);
});

beforeEach(() => {
	fake.reset();
	other.reset();
	fake.setImage(wide);
	other.setImage(wide);
	sandboxProxy.reset();
});

const generate = (server: ServiceUnderTest, body: Record<string, unknown>, init: RequestInit = {}) => postJson(server, '/v1/images/generations', body, init);

async function hostedBytes(url: string): Promise<Buffer> {
	const response = await fetch(url);
	expect(response.status).toBe(200);
	return Buffer.from(await response.arrayBuffer());
}

describe('replicate', () => {
	test('p-image: model path, bearer token, a sync wait of at most 5 s, input mapping; our URL serves the host’s bytes', async () => {
		const answer = await generate(replicate, { model: 'p-image', prompt: 'A red bicycle', aspect_ratio: '16:9', seed: 42 });
		expect(answer.status).toBe(200);
		const [call] = fake.callsTo('POST', '/v1/models/');
		expect(call!.path).toBe('/v1/models/prunaai/p-image/predictions');
		expect(call!.headers.authorization).toBe('Bearer r8_test_token');
		expect(call!.headers.prefer).toBe('wait=5');
		expect(call!.json).toEqual({ input: { prompt: 'A red bicycle', aspect_ratio: '16:9', seed: 42 } });
		expect(answer.body.data[0].seed).toBe(42);
		expect(answer.body.data[0].url.startsWith(`${replicate.origin}/files/`)).toBe(true);
		expect(await samePixels(await hostedBytes(answer.body.data[0].url), wide)).toBe(true);
	});

	test('p-image-edit: input images handed over as data URIs', async () => {
		const input = await makeImage('jpeg', 40, 30);
		const answer = await generate(replicate, { model: 'p-image-edit', prompt: 'Blue', images: [input.toString('base64')], aspect_ratio: '16:9', response_format: 'b64_json', seed: 0 });
		expect(answer.status).toBe(200);
		const [call] = fake.callsTo('POST', '/v1/models/');
		expect(call!.path).toBe('/v1/models/prunaai/p-image-edit/predictions');
		expect(call!.json.input).toEqual({ prompt: 'Blue', aspect_ratio: '16:9', seed: 0, images: [`data:image/jpeg;base64,${input.toString('base64')}`] });
		expect(await samePixels(Buffer.from(answer.body.data[0].b64_json, 'base64'), wide)).toBe(true);
	});

	test('textimage-v2: ideogram-v2 on Replicate with its spelling of style and magic prompt', async () => {
		const answer = await generate(replicate, { model: 'textimage-v2', prompt: 'Poster', negative_prompt: 'blur', style_type: 'RENDER_3D', magic_prompt_option: 'OFF', aspect_ratio: '16:9', seed: 2_147_483_647 });
		expect(answer.status).toBe(200);
		const [call] = fake.callsTo('POST', '/v1/models/');
		expect(call!.path).toBe('/v1/models/ideogram-ai/ideogram-v2/predictions');
		expect(call!.json.input).toEqual({ prompt: 'Poster', aspect_ratio: '16:9', seed: 2_147_483_647, negative_prompt: 'blur', style_type: 'Render 3D', magic_prompt_option: 'Off' });
	});

	test('an unfinished prediction is polled at urls.get until it succeeds', async () => {
		fake.setPendingPolls(3);
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('GET', '/v1/predictions/r')).toHaveLength(3);
	});

	test('a failed prediction becomes a 502 carrying the host’s reason', async () => {
		fake.script('POST', '/v1/models/', { status: 201, body: { id: 'rx', status: 'failed', error: 'NSFW content detected', output: null, urls: {} } });
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ type: 'upstream_error', code: 'upstream_failed' });
		expect(answer.body.error.message).toMatch(/replicate.*NSFW content detected/);
	});

	test('429 then success: retried, one generation', async () => {
		fake.script('POST', '/v1/models/', { status: 429, body: { detail: 'Request was throttled.' }, headers: { 'retry-after': '0' } });
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(2);
	});

	test('a host that keeps rate limiting: retries stop, our client gets 429 with Retry-After', async () => {
		fake.script('POST', '/v1/models/', { status: 429, body: { detail: 'Request was throttled. Expected available in 7 seconds.' }, headers: { 'retry-after': '0' } }, 10);
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(429);
		expect(answer.headers.get('retry-after')).toBe('1');
		expect(answer.body.error.message).toMatch(/throttled/);
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(4);
	});

	test('a 5xx to the create: not repeated (the prediction may exist), a 502 with the host’s message', async () => {
		fake.script('POST', '/v1/models/', { status: 503, body: { detail: 'Service Unavailable' } }, 10);
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.message).toMatch(/HTTP 503: Service Unavailable/);
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(1);
	});

	test('a 5xx to a status poll is retried', async () => {
		fake.setPendingPolls(2);
		fake.script('GET', '/v1/predictions/r', { status: 503, body: { detail: 'Service Unavailable' } }, 3);
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(1);
		expect(fake.callsTo('GET', '/v1/predictions/r')).toHaveLength(5);
	});

	test('a rejected token: 502 upstream_auth_failed, not retried', async () => {
		fake.script('POST', '/v1/models/', { status: 401, body: { title: 'Unauthenticated', detail: 'You did not pass a valid authentication token' } });
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.code).toBe('upstream_auth_failed');
		expect(fake.callsTo('POST', '/v1/models/')).toHaveLength(1);
	});

	test('a prediction that never finishes hits our time limit (504) and is cancelled', async () => {
		fake.setPendingPolls(1_000_000);
		const started = Date.now();
		const answer = await generate(hurried, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(504);
		expect(answer.body.error.code).toBe('generation_timeout');
		expect(Date.now() - started).toBeLessThan(3_000);
		expect(await eventually(() => fake.callsTo('POST', '/v1/predictions/').some((call) => call.path.endsWith('/cancel')))).toBe(true);
	});

	test('an output whose download outlasts our time limit: 504 generation_timeout, not a broken download', async () => {
		fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r950', status: 'succeeded', output: [`${fake.origin}/drip/r950.png`], urls: {} } });
		const started = Date.now();
		const answer = await generate(hurried, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(504);
		expect(answer.body.error).toMatchObject({ type: 'upstream_error', code: 'generation_timeout' });
		expect(fake.callsTo('GET', '/drip/')).toHaveLength(1);
		expect(Date.now() - started).toBeLessThan(3_000);
	});

	test('our client going away cancels the prediction', async () => {
		fake.setPendingPolls(1_000_000);
		const controller = new AbortController();
		const request = generate(replicate, { model: 'p-image', prompt: 'x' }, { signal: controller.signal }).catch(() => undefined);
		await eventually(() => fake.callsTo('GET', '/v1/predictions/r').length > 0);
		controller.abort();
		await request;
		expect(await eventually(() => fake.callsTo('POST', '/v1/predictions/').some((call) => call.path.endsWith('/cancel')))).toBe(true);
	});
});

describe('pruna', () => {
	test('p-image: apikey and Model headers, no Try-Sync, input mapping; the delivery is fetched with the key', async () => {
		const answer = await generate(pruna, { model: 'p-image', prompt: 'A lighthouse', aspect_ratio: '16:9', seed: 7 });
		expect(answer.status).toBe(200);
		const [call] = fake.callsTo('POST', '/v1/predictions');
		expect(call!.headers).toMatchObject({ apikey: 'pruna-test-key', model: 'p-image' });
		// A generation is a job: its create is answered at once with the id to follow, never held by Try-Sync.
		expect(call!.headers['try-sync']).toBeUndefined();
		expect(call!.json).toEqual({ input: { prompt: 'A lighthouse', aspect_ratio: '16:9', seed: 7 } });
		expect(answer.body.data[0].seed).toBe(7);
		expect(fake.callsTo('GET', '/v1/predictions/delivery/')[0]!.headers.apikey).toBe('pruna-test-key');
		expect(await samePixels(await hostedBytes(answer.body.data[0].url), wide)).toBe(true);
	});

	test('p-image-edit: each input image uploaded as multipart `content`, its URL passed in input.images', async () => {
		const first = await makeImage('png', 30, 30);
		const second = await makeImage('webp', 20, 20);
		const answer = await generate(pruna, { model: 'p-image-edit', prompt: 'Merge', images: [first.toString('base64'), `data:image/webp;base64,${second.toString('base64')}`], aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		const uploads = fake.callsTo('POST', '/v1/files');
		expect(uploads).toHaveLength(2);
		for (const upload of uploads) {
			expect(upload.headers.apikey).toBe('pruna-test-key');
			expect(upload.headers['content-type']).toMatch(/^multipart\/form-data/);
			expect(upload.body.toString('latin1')).toMatch(/name="content"; filename="input-\d\.(png|webp)"/);
		}
		const bodies = uploads.map((upload) => upload.body);
		expect(bodies.some((body) => body.includes(first))).toBe(true);
		expect(bodies.some((body) => body.includes(second))).toBe(true);
		const [prediction] = fake.callsTo('POST', '/v1/predictions');
		expect(prediction!.headers.model).toBe('p-image-edit');
		expect(prediction!.json.input.images).toHaveLength(2);
		expect(prediction!.json.input.images.every((url: string) => url.startsWith('https://files.pruna.example/'))).toBe(true);
	});

	test('without a seed, one is drawn, sent to the host and echoed', async () => {
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		const sent = fake.callsTo('POST', '/v1/predictions')[0]!.json.input.seed;
		expect(Number.isInteger(sent) && sent >= 0 && sent <= 2_147_483_647).toBe(true);
		expect(answer.body.data[0].seed).toBe(sent);
	});

	test('asynchronous: polled at get_url until it succeeds', async () => {
		fake.setPendingPolls(2);
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('GET', '/v1/predictions/status/').length).toBe(2);
	});

	test('a failed prediction: 502 with Pruna’s error', async () => {
		fake.script('POST', '/v1/predictions', { status: 200, body: { status: 'failed', error: 'Number of samples, -5, must be non-negative.' } });
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.message).toMatch(/pruna.*must be non-negative/);
	});

	test('an invalid-input answer keeps Pruna’s message, and is not retried', async () => {
		fake.script('POST', '/v1/predictions', { status: 400, body: { error: { code: 'INVALID_INPUT', message: 'Invalid prompt: prompt too long' }, request_id: 'req_1' } });
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'upstream_rejected' });
		expect(answer.body.error.message).toMatch(/Invalid prompt: prompt too long/);
		expect(fake.callsTo('POST', '/v1/predictions')).toHaveLength(1);
	});

	test('QUOTA 429 twice then success', async () => {
		fake.script('POST', '/v1/predictions', { status: 429, body: { error: { code: 'QUOTA_EXCEEDED', message: 'Too many requests' } }, headers: { 'retry-after': '0' } }, 2);
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/v1/predictions')).toHaveLength(3);
	});
});

describe('ideogram', () => {
	test('textimage-v2: Api-Key header and image_request with V_2, ASPECT_ ratios and our enum spellings', async () => {
		fake.setImage(square);
		const answer = await generate(ideogram, { model: 'textimage-v2', prompt: 'A poster', negative_prompt: 'blur', style_type: 'ANIME', magic_prompt_option: 'ON', aspect_ratio: '1:1', seed: 12345 });
		expect(answer.status).toBe(200);
		const [call] = fake.callsTo('POST', '/generate');
		expect(call!.headers['api-key']).toBe('ideogram-key');
		expect(call!.json).toEqual({
			image_request: { prompt: 'A poster', model: 'V_2', aspect_ratio: 'ASPECT_1_1', style_type: 'ANIME', magic_prompt_option: 'ON', negative_prompt: 'blur', seed: 12345 },
		});
		expect(await samePixels(await hostedBytes(answer.body.data[0].url), square)).toBe(true);
	});

	test.each([
		['10:16', 'ASPECT_10_16'],
		['3:1', 'ASPECT_3_1'],
		['16:10', 'ASPECT_16_10'],
	])('aspect ratio %s is sent as %s, and the image comes back at that ratio', async (ratio, theirs) => {
		const answer = await generate(ideogram, { model: 'textimage-v2', prompt: 'x', aspect_ratio: ratio, response_format: 'b64_json' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('POST', '/generate')[0]!.json.image_request.aspect_ratio).toBe(theirs);
		const { width, height } = await sharp(Buffer.from(answer.body.data[0].b64_json, 'base64')).metadata();
		const [w, h] = ratio.split(':').map(Number) as [number, number];
		expect(Math.abs(width! / height! / (w / h) - 1)).toBeLessThan(0.02);
	});

	test('an image withheld as unsafe: 502 that says so', async () => {
		fake.script('POST', '/generate', { status: 200, body: { created: '2026-01-01T00:00:00Z', data: [{ is_image_safe: false, prompt: 'x' }] } });
		const answer = await generate(ideogram, { model: 'textimage-v2', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'upstream_content_filtered' });
	});

	// Ideogram's ImageObject: `url` is nullable, and an image that fails its safety check comes back
	// with is_image_safe false and an empty URL (its generate reference); nothing to download.
	test.each([
		['an empty URL', ''],
		['a null URL', null],
	])('an unsafe image answered with %s: content filtered, nothing downloaded', async (_what, url) => {
		fake.script('POST', '/generate', { status: 200, body: { created: '2026-01-01T00:00:00Z', data: [{ url, is_image_safe: false, prompt: 'x', resolution: '1024x1024', seed: 1 }] } });
		const answer = await generate(ideogram, { model: 'textimage-v2', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'upstream_content_filtered', message: 'The ideogram provider withheld the image as unsafe' });
	});

	test('an image marked unsafe is not delivered even with a URL; an empty URL marked safe is no image', async () => {
		fake.script('POST', '/generate', { status: 200, body: { data: [{ url: `${fake.origin}/out/ideogram.png`, is_image_safe: false }] } });
		const unsafe = await generate(ideogram, { model: 'textimage-v2', prompt: 'x' });
		expect(unsafe.body.error).toMatchObject({ code: 'upstream_content_filtered' });
		expect(fake.callsTo('GET', '/out/')).toHaveLength(0);
		fake.script('POST', '/generate', { status: 200, body: { data: [{ url: '', is_image_safe: true }] } });
		const empty = await generate(ideogram, { model: 'textimage-v2', prompt: 'x' });
		expect(empty.status).toBe(502);
		expect(empty.body.error).toMatchObject({ code: 'upstream_no_output' });
	});

	test('a 422 keeps Ideogram’s detail', async () => {
		fake.script('POST', '/generate', { status: 422, body: { detail: 'Prompt failed the safety check' } });
		const answer = await generate(ideogram, { model: 'textimage-v2', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.message).toMatch(/Prompt failed the safety check/);
	});
});

describe('each host’s documented limits, applied before any call to it', () => {
	const images = async (count: number) => Array<string>(count).fill((await makeImage('png', 16, 16)).toString('base64'));
	const serverNamed = (name: string) => (name === 'pruna' ? pruna : replicate);

	test.each(['pruna', 'replicate'])('%s: p-image-edit with 6 images is a 400 naming images and the host’s 5; the host gets no request', async (name) => {
		const answer = await generate(serverNamed(name), { model: 'p-image-edit', prompt: 'x', images: await images(6) });
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param: 'images', code: 'provider_limit' });
		expect(answer.body.error.message).toMatch(new RegExp(`at most 5 images on the ${name} host .*got 6`));
		expect(fake.calls).toHaveLength(0);
	});

	test.each(['pruna', 'replicate'])('%s: p-image-edit with 5 images reaches the host', async (name) => {
		const answer = await generate(serverNamed(name), { model: 'p-image-edit', prompt: 'x', images: await images(5), aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.calls.length).toBeGreaterThan(0);
	});

	test('ideogram: a prompt over its 10,000 characters never reaches it', async () => {
		const answer = await generate(ideogram, { model: 'textimage-v2', prompt: 'x'.repeat(10_001) });
		expect(answer.status).toBe(400);
		expect(answer.body.error.param).toBe('prompt');
		expect(fake.calls).toHaveLength(0);
	});

	test('GET /v1/models shows the limits in force for the configured hosts', async () => {
		const limits = async (server: ServiceUnderTest) => {
			const response = await fetch(`${server.baseUrl}/models`, { headers: { authorization: `Bearer ${server.apiKey}` } });
			const catalog = (await response.json()) as { data: Array<{ id: string; limits: Record<string, number> }> };
			return Object.fromEntries(catalog.data.map((model) => [model.id, model.limits]));
		};
		type Limits = Record<string, Record<string, number>>;
		const [ofPruna, ofReplicate, ofIdeogram, ofSandbox, ofUpstream] = (await Promise.all([pruna, replicate, ideogram, sandbox, upstream].map(limits))) as [Limits, Limits, Limits, Limits, Limits];
		expect(ofPruna['p-image-edit']!.max_input_images).toBe(5);
		expect(ofReplicate['p-image-edit']!.max_input_images).toBe(5);
		expect(ofSandbox['p-image-edit']!.max_input_images).toBe(10);
		expect(ofUpstream['p-image-edit']!.max_input_images).toBe(10);
		expect(ofIdeogram['textimage-v2']!.prompt_max_length).toBe(10_000);
		expect(ofPruna['p-image']).toEqual(ofSandbox['p-image']);
	});
});

describe('the run tells our time limit from a client that went away, also while downloading', () => {
	const runner = (timeoutMs: number, services: Partial<GenerationServices> = {}) =>
		createGenerationRunner({
			providers: providersFor('p-image=replicate', { REPLICATE_API_TOKEN: 't', REPLICATE_BASE_URL: `${fake.origin}/v1` }),
			prices: {},
			timeoutMs,
			inputs: { fetchRemote: createSafeFetcher({ allowPrivate: true, timeoutMs: 30_000 }).fetchRemote, maxInputImageBytes: 10 * 1_048_576 },
			log: console,
			// Neither is reached: every run here ends before anything is stored or charged.
			hostedFiles: undefined,
			usageLedger: undefined,
			budgets: { reserve: async () => null },
			...services,
		} as unknown as GenerationServices);
	const dripping = () => fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r960', status: 'succeeded', output: [`${fake.origin}/drip/r960.png`], urls: {} } });

	test('the client leaves mid-download: cancelled, not a time-out', async () => {
		dripping();
		const client = new AbortController();
		const run = runner(30_000)(parseGenerationRequest({ model: 'p-image', prompt: 'x' }), { apiKeyId: 'k', apiKey: flatKeyPolicy('k'), clientGone: client.signal });
		const settled = run.catch((error: unknown) => error);
		expect(await eventually(() => fake.callsTo('GET', '/drip/').length === 1)).toBe(true);
		client.abort(new Error('client closed the connection'));
		expect(await settled).toMatchObject({ status: 502, code: 'cancelled' });
	});

	test('the time limit passes while the image waits for the image queue: 504, never a 500', async () => {
		// The queue's one pipeline is busy for longer than the generation may take.
		const imageWork = new ImageWork({ maxPixels: 100_000_000, concurrency: 1, budgetMs: 10_000 });
		let free!: () => void;
		const busy = imageWork.run(() => new Promise<void>((resolve) => (free = resolve)));
		const prompt = { name: 'prompt', generate: async () => [ImageBytes.lent(wide)] };
		const run = runner(300, { providers: { 'p-image': prompt, 'p-image-edit': prompt, 'textimage-v2': prompt }, imageWork })(parseGenerationRequest({ model: 'p-image', prompt: 'x', response_format: 'b64_json' }), {
			apiKeyId: 'k',
			apiKey: flatKeyPolicy('k'),
			clientGone: new AbortController().signal,
		});
		const outcome = await run.catch((error: unknown) => error);
		free();
		await busy;
		expect(outcome).toMatchObject({ status: 504, code: 'generation_timeout' });
	});

	test('the time limit passes mid-download: 504 generation_timeout', async () => {
		dripping();
		const run = runner(500)(parseGenerationRequest({ model: 'p-image', prompt: 'x' }), { apiKeyId: 'k', apiKey: flatKeyPolicy('k'), clientGone: new AbortController().signal });
		expect(await run.catch((error: unknown) => error)).toMatchObject({ status: 504, code: 'generation_timeout' });
		expect(fake.callsTo('GET', '/drip/')).toHaveLength(1);
	});
});

describe('a provider’s key goes only to its configured origin', () => {
	const secrets = ['pruna-test-key', 'r8_test_token', 'ideogram-key'];
	const leaked = () => other.calls.filter((call) => secrets.some((secret) => JSON.stringify(call.headers).includes(secret)));

	test('pruna: a status URL on another host is refused with a 502 naming it, and never called', async () => {
		fake.script('POST', '/v1/predictions', { status: 200, body: { id: 'p900', get_url: `${other.origin}/v1/predictions/status/p900` } });
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.code).toBe('upstream_invalid_output');
		expect(answer.body.error.message).toContain(new URL(other.origin).host);
		expect(other.calls).toHaveLength(0);
	});

	test('pruna: a delivery URL on another host is downloaded without the key', async () => {
		fake.script('POST', '/v1/predictions', { status: 200, body: { status: 'succeeded', generation_url: `${other.origin}/out/elsewhere.png` } });
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(other.callsTo('GET', '/out/')).toHaveLength(1);
		expect(leaked()).toEqual([]);
		expect(await samePixels(await hostedBytes(answer.body.data[0].url), wide)).toBe(true);
	});

	test('pruna: a delivery that redirects to another host keeps the key at home', async () => {
		fake.script('GET', '/v1/predictions/delivery/', { status: 302, headers: { location: `${other.origin}/out/cdn.png` } });
		const answer = await generate(pruna, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(fake.callsTo('GET', '/v1/predictions/delivery/')[0]!.headers.apikey).toBe('pruna-test-key');
		expect(other.callsTo('GET', '/out/cdn.png')).toHaveLength(1);
		expect(leaked()).toEqual([]);
	});

	test('pruna: input uploads and polling carry the key on the configured origin', async () => {
		fake.setPendingPolls(2);
		const input = await makeImage('png', 20, 20);
		const answer = await generate(pruna, { model: 'p-image-edit', prompt: 'x', images: [input.toString('base64')], aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		const own = [...fake.callsTo('POST', '/v1/files'), ...fake.callsTo('GET', '/v1/predictions/status/')];
		expect(own.length).toBe(3);
		expect(own.every((call) => call.headers.apikey === 'pruna-test-key')).toBe(true);
	});

	test('replicate: urls.get on another host is refused and never called', async () => {
		fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r900', status: 'starting', urls: { get: `${other.origin}/v1/predictions/r900`, cancel: `${fake.origin}/v1/predictions/r900/cancel` } } });
		const answer = await generate(replicate, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error.message).toContain(new URL(other.origin).host);
		expect(other.calls).toHaveLength(0);
	});

	test('replicate: a cancel URL on another host is replaced by ours', async () => {
		fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r901', status: 'starting', urls: { get: `${fake.origin}/v1/predictions/r901`, cancel: `${other.origin}/v1/predictions/r901/cancel` } } });
		fake.script('GET', '/v1/predictions/r901', { status: 200, hang: true });
		const answer = await generate(hurried, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(504);
		expect(await eventually(() => fake.callsTo('POST', '/v1/predictions/r901/cancel').length === 1)).toBe(true);
		expect(fake.callsTo('POST', '/v1/predictions/r901/cancel')[0]!.headers.authorization).toBe('Bearer r8_test_token');
		expect(other.calls).toHaveLength(0);
	});

	test('replicate and ideogram: output URLs on another host are downloaded without the token', async () => {
		fake.script('POST', '/v1/models/', { status: 201, body: { id: 'r902', status: 'succeeded', output: [`${other.origin}/out/r902.png`], urls: {} } });
		fake.script('POST', '/generate', { status: 200, body: { data: [{ url: `${other.origin}/out/ideogram.png`, is_image_safe: true }] } });
		const [fromReplicate, fromIdeogram] = await Promise.all([
			generate(replicate, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' }),
			generate(ideogram, { model: 'textimage-v2', prompt: 'x', aspect_ratio: '16:9' }),
		]);
		expect([fromReplicate.status, fromIdeogram.status]).toEqual([200, 200]);
		expect(other.callsTo('GET', '/out/')).toHaveLength(2);
		expect(leaked()).toEqual([]);
	});
});

describe('upstream (another imagegen-server)', () => {
	test('the validated request is forwarded with the upstream’s key; the upstream’s image is what we host', async () => {
		// No seed given: the one we draw is what the upstream draws with, so the sandbox repeats it.
		const request = { model: 'p-image', prompt: 'Same picture twice', aspect_ratio: '4:3', output_format: 'webp' };
		const ours = await generate(upstream, request);
		expect(ours.status).toBe(200);
		const seed = ours.body.data[0].seed;
		expect(Number.isInteger(seed)).toBe(true);
		const theirs = await generate(sandbox, { ...request, response_format: 'b64_json', seed });
		// The same picture: the upstream marks each of its images with a watermark of its own.
		expect(await pictureDistance(await hostedBytes(ours.body.data[0].url), Buffer.from(theirs.body.data[0].b64_json, 'base64'))).toBeGreaterThan(30);
		expect(sandboxProxy.requests.map((call) => call.path)).toEqual(['/v1/images/generations']);
	});

	test('input images reach the upstream inlined, so it never needs to reach our sources', async () => {
		const input = await makeImage('png', 50, 50);
		const answer = await generate(upstream, { model: 'p-image-edit', prompt: 'x', images: [`data:image/png;base64,${input.toString('base64')}`] });
		expect(answer.status).toBe(200);
		expect(sandboxProxy.requests[0]!.bodyBytes).toBeGreaterThan(input.length);
	});

	test('the upstream’s 503 to a generation is not repeated (it may have made the image); its 429 is, and a lasting one reaches our client as 429', async () => {
		sandboxProxy.failNext({ status: 503, body: { error: { message: 'busy', type: 'server_error', param: null, code: 'busy' } } });
		const failed = await generate(upstream, { model: 'p-image', prompt: 'x' });
		expect(failed.status).toBe(502);
		expect(failed.body.error.message).toMatch(/HTTP 503: busy/);
		expect(sandboxProxy.requests).toHaveLength(1);
		sandboxProxy.reset();
		sandboxProxy.failNext({ status: 429, body: { error: { message: 'Rate limit of 1 requests per minute reached', type: 'rate_limit_error', param: null, code: 'rate_limited' } }, headers: { 'retry-after': '0' } }, 4);
		const limited = await generate(upstream, { model: 'p-image', prompt: 'x' });
		expect(limited.status).toBe(429);
		expect(limited.body.error.message).toMatch(/Rate limit of 1 requests per minute/);
		expect(sandboxProxy.requests).toHaveLength(4);
	});

	test('a wrong upstream key: 502 naming the upstream’s answer', async () => {
		const misconfigured = await startInProcessServer({ args: ['--providers', 'p-image=upstream'], env: { UPSTREAM_BASE_URL: sandbox.baseUrl, UPSTREAM_API_KEY: 'not-the-key-0000' } });
		try {
			const answer = await generate(misconfigured, { model: 'p-image', prompt: 'x' });
			expect(answer.status).toBe(502);
			expect(answer.body.error).toMatchObject({ code: 'upstream_auth_failed' });
			expect(answer.body.error.message).toMatch(/Invalid API key/);
		} finally {
			await misconfigured.stop({ removeData: true });
		}
	});
});
