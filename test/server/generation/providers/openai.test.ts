/**
 * The `openai` provider against a loopback stand-in of OpenAI's images API
 * (support/image-api-hosts.ts), which refuses what OpenAI refuses: unknown fields, `response_format`
 * for gpt-image models, sizes the model does not take. Checked: the exact request for each model,
 * the size chosen for a ratio, both answer forms, each broken answer and refusal reaching our client
 * as a 502 with the host's words and nothing charged, and the settings refused at start.
 */
import sharp from 'sharp';
import { nearestSize } from '../../../../core/openai-images';
import { parseImageSizes } from '../../../../server/src/config/provider-options';
import { buildTestApp, type InProcessApp } from '../../support/app';
import { providersFor } from '../../support/providers';
import { startLocalAiHost, startOpenAiHost, type ImageApiHost, type LocalAiHost } from '../../support/image-api-hosts';
import { makeImage, noisyPng, samePixels } from '../../support/media';
import { generateIn } from '../support/generate-in';
import { expectFailedUncharged, imagesCharged } from '../support/uncharged';

const KEY = 'sk-test-0123456789';
const ALL_MODELS = 'p-image=openai,p-image-edit=openai,textimage-v2=openai';

let openai: ImageApiHost;
let localai: LocalAiHost;
/** A gateway in front of OpenAI (LiteLLM, OpenRouter), whose model names carry a prefix. */
let gateway: ImageApiHost;
/** gpt-image-1 on OpenAI (the defaults). */
let app: InProcessApp;
/** A LocalAI model (OPENAI_SERVER=localai): any size, the negative prompt after `|`, seed, img2img. */
let local: InProcessApp;
/** The time limit 1 s, for a host that is slow. */
let hurried: InProcessApp;
let square: Buffer;

async function appFor(env: NodeJS.ProcessEnv, timeoutSeconds = 5): Promise<InProcessApp> {
	// The host is the subject: marking (which re-encodes what it answers) is the provenance suites'.
	return await buildTestApp(['--allow-private-urls', '--generation-timeout-seconds', String(timeoutSeconds), '--provenance', 'off'], { providers: providersFor(ALL_MODELS, env) });
}

beforeAll(async () => {
	[openai, localai, gateway, square] = await Promise.all([startOpenAiHost({ apiKey: KEY }), startLocalAiHost(), startOpenAiHost({ gateway: true }), makeImage('png', 1024, 1024)]);
	[app, local, hurried] = await Promise.all([
		appFor({ OPENAI_BASE_URL: `${openai.origin}/v1`, OPENAI_API_KEY: KEY }),
		appFor({ OPENAI_BASE_URL: `${localai.origin}/v1`, OPENAI_SERVER: 'localai', OPENAI_IMAGE_MODEL: 'stablediffusion', OPENAI_IMAGE_SIZES: '512x512, 768x512,512x768' }),
		appFor({ OPENAI_BASE_URL: `${openai.origin}/v1`, OPENAI_API_KEY: KEY }, 1),
	]);
});

afterAll(async () => {
	await Promise.all([app, local, hurried].map((each) => each?.close()));
	await Promise.all([openai?.close(), localai?.close(), gateway?.close()]);
});

beforeEach(() => {
	for (const host of [openai, localai, gateway]) {
		host.reset();
		host.image = square;
	}
});

/** An app of its own, for one test, closed after it. */
async function withApp(env: NodeJS.ProcessEnv, use: (server: InProcessApp) => Promise<void>): Promise<void> {
	const server = await appFor(env);
	try {
		await use(server);
	} finally {
		await server.close();
	}
}

const dataUriOf = (bytes: Buffer, type: string) => `data:${type};base64,${bytes.toString('base64')}`;

async function hostedSize(server: InProcessApp, url: string): Promise<{ width?: number; height?: number }> {
	const response = await server.request(url);
	expect(response.status).toBe(200);
	return await sharp(Buffer.from(await response.arrayBuffer())).metadata();
}


describe('gpt-image-1 on OpenAI', () => {
	test('p-image: model, prompt, n and the nearest size, no response_format; the b64_json answer is hosted at the exact ratio', async () => {
		const answer = await generateIn(app, { model: 'p-image', prompt: 'a lighthouse at dusk', aspect_ratio: '16:9' });
		expect(answer.status).toBe(200);
		expect(openai.calls).toHaveLength(1);
		const [call] = openai.calls;
		expect(call).toMatchObject({ method: 'POST', path: '/v1/images/generations' });
		expect(call!.headers.authorization).toBe(`Bearer ${KEY}`);
		expect(call!.json).toEqual({ model: 'gpt-image-1', prompt: 'a lighthouse at dusk', n: 1, size: '1536x1024' });
		const { width, height } = await hostedSize(app, answer.body.data[0].url);
		expect(width! / height!).toBeCloseTo(16 / 9, 2);
	});

	test('p-image-edit: the input images as multipart image[], with the size nearest the first input', async () => {
		const tall = await makeImage('png', 600, 900);
		const answer = await generateIn(app, { model: 'p-image-edit', prompt: 'make it night', images: [`data:image/png;base64,${tall.toString('base64')}`, `data:image/png;base64,${square.toString('base64')}`] });
		expect(answer.status).toBe(200);
		const [call] = openai.calls;
		expect(call!.path).toBe('/v1/images/edits');
		expect(call!.headers.authorization).toBe(`Bearer ${KEY}`);
		expect(call!.form).toEqual([
			['model', 'gpt-image-1'],
			['prompt', 'make it night'],
			['n', '1'],
			['size', '1024x1536'],
			['image[]', { type: 'image/png', size: tall.length }],
			['image[]', { type: 'image/png', size: square.length }],
		]);
	});

	test('textimage-v2: the prompt and size only; the fields Ideogram takes are not sent, nor negative_prompt, which OpenAI refuses', async () => {
		const answer = await generateIn(app, { model: 'textimage-v2', prompt: 'a poster', aspect_ratio: '1:1', style_type: 'DESIGN', magic_prompt_option: 'ON', negative_prompt: 'text' });
		expect(answer.status).toBe(200);
		expect(openai.calls[0]!.json).toEqual({ model: 'gpt-image-1', prompt: 'a poster', n: 1, size: '1024x1024' });
	});

	test('a 1024×1024 grey image of noise, 1 MB as b64_json: read as it arrives and hosted with the same pixels', async () => {
		const noise = await noisyPng(1024, 1024, 1);
		expect(noise.length).toBeGreaterThan(1_000_000);
		openai.image = noise;
		const answer = await generateIn(app, { model: 'p-image', prompt: 'static', aspect_ratio: '1:1' });
		expect(answer.status).toBe(200);
		const hosted = await app.request(answer.body.data[0].url);
		expect(await samePixels(Buffer.from(await hosted.arrayBuffer()), noise)).toBe(true);
	});

	test('a url answer is fetched (without the key) and hosted', async () => {
		openai.next({ status: 200, body: { created: 1, data: [{ url: `${openai.origin}/files/out.png` }] } });
		const answer = await generateIn(app, { model: 'p-image', prompt: 'x', aspect_ratio: '1:1' });
		expect(answer.status).toBe(200);
		const download = openai.calls.find((call) => call.method === 'GET');
		expect(download?.path).toBe('/files/out.png');
		expect(download?.headers.authorization).toBeUndefined();
		expect(await hostedSize(app, answer.body.data[0].url)).toMatchObject({ width: 1024, height: 1024 });
	});
});

describe('a host that answers badly: a 502 that says what, nothing charged', () => {
	test.each([
		['an HTML page', 'html', 'upstream_invalid_output', /not JSON but an HTML page/],
		['an empty data list', 'empty', 'upstream_no_output', /returned no image: its answer had an empty data list/],
		['bytes that are no image', 'not-image', 'upstream_invalid_output', /not an image/],
	] as const)('%s', async (_what, next, code, message) => {
		openai.next(next);
		await expectFailedUncharged(app, { model: 'p-image', prompt: 'x' }, code, message);
	});

	test('OpenAI’s error shape: its message passed on; moderation_blocked is a content filter', async () => {
		const before = await imagesCharged(app);
		openai.next({ status: 400, body: { error: { message: 'Your request was rejected by the safety system.', type: 'image_generation_user_error', param: null, code: 'moderation_blocked' } } });
		const blocked = await generateIn(app, { model: 'p-image', prompt: 'x' });
		expect(blocked.status).toBe(502);
		expect(blocked.body.error).toMatchObject({ code: 'upstream_content_filtered', message: expect.stringContaining('rejected by the safety system') });
		openai.next({ status: 400, body: { error: { message: 'Billing hard limit has been reached.', type: 'billing_limit_user_error', param: null, code: 'billing_hard_limit_reached' } } });
		const billing = await generateIn(app, { model: 'p-image', prompt: 'x' });
		expect(billing.body.error).toMatchObject({ code: 'upstream_rejected', message: expect.stringContaining('Billing hard limit has been reached.') });
		expect(openai.calls).toHaveLength(2);
		expect(await imagesCharged(app)).toBe(before);
	});

	test('a wrong key: 502 upstream_auth_failed with OpenAI’s words', async () => {
		const wrong = await appFor({ OPENAI_BASE_URL: `${openai.origin}/v1`, OPENAI_API_KEY: 'sk-wrong' });
		try {
			const answer = await generateIn(wrong, { model: 'p-image', prompt: 'x' });
			expect(answer.status).toBe(502);
			expect(answer.body.error).toMatchObject({ code: 'upstream_auth_failed', message: expect.stringContaining('Incorrect API key provided') });
		} finally {
			await wrong.close();
		}
	});

	test('a 429 with Retry-After is waited out and retried once', async () => {
		openai.next({ status: 429, body: { error: { message: 'Rate limit reached for images per minute.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }, headers: { 'retry-after': '0' } });
		const answer = await generateIn(app, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(200);
		expect(openai.calls.filter((call) => call.method === 'POST')).toHaveLength(2);
	});

	test('a host slower than our time limit: 504, nothing charged', async () => {
		openai.drawMs = 3_000;
		const answer = await generateIn(hurried, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(504);
		expect(await imagesCharged(hurried)).toBe(0);
	});
});

describe('LocalAI (OPENAI_SERVER=localai): its own routes and fields', () => {
	test('textimage-v2: the negative prompt after `|` in the prompt, the seed, b64_json and the nearest of its sizes', async () => {
		const answer = await generateIn(local, { model: 'textimage-v2', prompt: 'a cat', negative_prompt: 'blurry', aspect_ratio: '3:2', seed: 42 });
		expect(answer.status).toBe(200);
		expect(localai.calls[0]!.path).toBe('/v1/images/generations');
		expect(localai.calls[0]!.json).toEqual({ model: 'stablediffusion', prompt: 'a cat|blurry', n: 1, size: '768x512', response_format: 'b64_json', seed: 42 });
		expect(localai.drawings).toEqual([{ model: 'stablediffusion', positive: 'a cat', negative: 'blurry', seed: 42, width: 768, height: 512 }]);
		expect(localai.calls[0]!.headers.authorization).toBeUndefined();
	});

	test.each([
		['prompt', { prompt: 'a cat | a dog', negative_prompt: 'blurry' }],
		['negative_prompt', { prompt: 'a cat', negative_prompt: 'blurry|dark' }],
	] as const)('a `|` in %s is refused before the host, which would read what follows as the negative prompt', async (field, fields) => {
		const answer = await generateIn(local, { model: 'textimage-v2', ...fields });
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ param: field, message: expect.stringContaining('|') });
		expect(localai.calls).toHaveLength(0);
	});

	test('p-image-edit: img2img through /images/generations, the input image as base64 in `file` (LocalAI has no /images/edits)', async () => {
		const answer = await generateIn(local, { model: 'p-image-edit', prompt: 'a dog', aspect_ratio: '1:1', images: [dataUriOf(square, 'image/png')] });
		expect(answer.status).toBe(200);
		expect(localai.calls.map((call) => call.path)).toEqual(['/v1/images/generations']);
		expect(localai.drawings[0]).toMatchObject({ positive: 'a dog', source: { type: 'image/png', size: square.length } });
	});

	test('p-image-edit with a GIF: converted to PNG before it is sent', async () => {
		const gif = await makeImage('gif', 64, 64);
		const answer = await generateIn(local, { model: 'p-image-edit', prompt: 'a dog', aspect_ratio: '1:1', images: [dataUriOf(gif, 'image/gif')] });
		expect(answer.status).toBe(200);
		expect(localai.drawings[0]!.source?.type).toBe('image/png');
	});

	test('p-image-edit with two input images is refused before the host: it takes one', async () => {
		const input = dataUriOf(square, 'image/png');
		const answer = await generateIn(local, { model: 'p-image-edit', prompt: 'a dog', images: [input, input] });
		expect(answer.status).toBe(400);
		expect(answer.body.error.param).toBe('images');
		expect(localai.calls).toHaveLength(0);
	});

	test('LocalAI spoken to as OpenAI (OPENAI_SERVER unset): its 404 for /images/edits is an error saying the host cannot edit, naming images', async () => {
		await withApp({ OPENAI_BASE_URL: `${localai.origin}/v1`, OPENAI_IMAGE_MODEL: 'stablediffusion' }, async (server) => {
			const answer = await generateIn(server, { model: 'p-image-edit', prompt: 'a dog', aspect_ratio: '1:1', images: [dataUriOf(square, 'image/png')] });
			expect(answer.status).toBe(502);
			expect(answer.body.error).toMatchObject({ code: 'upstream_cannot_edit', param: 'images', message: expect.stringContaining('OPENAI_SERVER=localai') });
			expect(await imagesCharged(server)).toBe(0);
		});
	});
});

describe("each OpenAI model's own sizes, prompt length and names", () => {
	test('dall-e-3: 16:9 is sent as its 1792x1024, not gpt-image’s 1536x1024', async () => {
		await withApp({ OPENAI_BASE_URL: `${openai.origin}/v1`, OPENAI_API_KEY: KEY, OPENAI_IMAGE_MODEL: 'dall-e-3' }, async (server) => {
			const answer = await generateIn(server, { model: 'p-image', prompt: 'a harbour', aspect_ratio: '16:9' });
			expect(answer.status).toBe(200);
			expect(openai.calls[0]!.json).toMatchObject({ model: 'dall-e-3', size: '1792x1024', response_format: 'b64_json' });
		});
	});

	test('dall-e-2: its square only', async () => {
		await withApp({ OPENAI_BASE_URL: `${openai.origin}/v1`, OPENAI_API_KEY: KEY, OPENAI_IMAGE_MODEL: 'dall-e-2' }, async (server) => {
			const answer = await generateIn(server, { model: 'p-image', prompt: 'a harbour', aspect_ratio: '16:9' });
			expect(answer.status).toBe(200);
			expect(openai.calls[0]!.json).toMatchObject({ model: 'dall-e-2', size: '1024x1024' });
		});
	});

	test.each([
		['dall-e-2', 1_000],
		['dall-e-3', 4_000],
	] as const)('%s: a prompt over its %d characters is a 400 naming prompt, the host not called', async (model, max) => {
		await withApp({ OPENAI_BASE_URL: `${openai.origin}/v1`, OPENAI_API_KEY: KEY, OPENAI_IMAGE_MODEL: model }, async (server) => {
			const answer = await generateIn(server, { model: 'p-image', prompt: 'a'.repeat(max + 1), aspect_ratio: '1:1' });
			expect(answer.status).toBe(400);
			expect(answer.body.error.param).toBe('prompt');
			expect(openai.calls).toHaveLength(0);
			expect((await generateIn(server, { model: 'p-image', prompt: 'a'.repeat(max), aspect_ratio: '1:1' })).status).toBe(200);
		});
	});

	test('a gateway’s openai/gpt-image-1 is gpt-image-1: no response_format, its sizes, inputs as image[]', async () => {
		await withApp({ OPENAI_BASE_URL: `${gateway.origin}/v1`, OPENAI_IMAGE_MODEL: 'openai/gpt-image-1' }, async (server) => {
			const generated = await generateIn(server, { model: 'p-image', prompt: 'x', aspect_ratio: '16:9' });
			expect(generated.status).toBe(200);
			expect(gateway.calls[0]!.json).toEqual({ model: 'openai/gpt-image-1', prompt: 'x', n: 1, size: '1536x1024' });
			const edited = await generateIn(server, { model: 'p-image-edit', prompt: 'x', aspect_ratio: '1:1', images: [dataUriOf(square, 'image/png')] });
			expect(edited.status).toBe(200);
			expect(gateway.calls[1]!.form).toContainEqual(['image[]', { type: 'image/png', size: square.length }]);
		});
	});
});

describe('inputs and accounts', () => {
	test.each(['gif', 'avif'] as const)('a %s input to an edit is sent as PNG, which OpenAI takes', async (format) => {
		const input = await makeImage(format, 64, 64);
		const answer = await generateIn(app, { model: 'p-image-edit', prompt: 'x', aspect_ratio: '1:1', images: [dataUriOf(input, `image/${format}`)] });
		expect(answer.status).toBe(200);
		expect(openai.calls[0]!.form).toContainEqual(['image[]', { type: 'image/png', size: expect.any(Number) }]);
	});

	test('429 insufficient_quota (an account without credit) is no rate limit: 502 upstream_quota_exhausted at once, not retried, nothing charged', async () => {
		const before = await imagesCharged(app);
		const started = Date.now();
		openai.next({ status: 429, body: { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } });
		const answer = await generateIn(app, { model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.headers.get('retry-after')).toBeNull();
		expect(answer.body.error).toMatchObject({ code: 'upstream_quota_exhausted', message: expect.stringContaining('exceeded your current quota') });
		expect(openai.calls).toHaveLength(1);
		expect(Date.now() - started).toBeLessThan(3_000);
		expect(await imagesCharged(app)).toBe(before);
	});
});

describe('sizes', () => {
	const sizes = parseImageSizes('1024x1024,1536x1024,1024x1536');
	test.each([
		['1:1', '1024x1024'],
		['16:9', '1536x1024'],
		['4:3', '1536x1024'],
		['9:16', '1024x1536'],
		['2:3', '1024x1536'],
		['3:1', '1536x1024'],
	] as const)('%s → %s', (ratio, size) => {
		const { width, height } = nearestSize(sizes, ratio);
		expect(`${width}x${height}`).toBe(size);
	});
});

describe('settings refused at start, each named', () => {
	const build = (env: NodeJS.ProcessEnv) => () => providersFor('p-image=openai', env);
	test.each([
		[{ OPENAI_API_KEY: KEY, OPENAI_IMAGE_SIZES: '1024x1024,1536by1024' }, /OPENAI_IMAGE_SIZES\): '1536by1024' is not WIDTHxHEIGHT/],
		[{ OPENAI_API_KEY: KEY, OPENAI_IMAGE_SIZES: '0x1024' }, /OPENAI_IMAGE_SIZES\): '0x1024' is not WIDTHxHEIGHT/],
		[{ OPENAI_API_KEY: KEY, OPENAI_IMAGE_SIZES: ' , ' }, /OPENAI_IMAGE_SIZES\): lists no size/],
		[{ OPENAI_API_KEY: KEY, OPENAI_NEGATIVE_PROMPT: 'maybe' }, /OPENAI_NEGATIVE_PROMPT\) must be true or false/],
		[{ OPENAI_API_KEY: KEY, OPENAI_SERVER: 'comfy' }, /OPENAI_SERVER\) must be one of openai, localai/],
		[{ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: 'not a url' }, /OPENAI_BASE_URL\) must be an http\(s\) URL/],
		[{}, /p-image=openai needs OPENAI_API_KEY/],
	])('%j', (env, message) => {
		expect(build(env)).toThrow(message);
	});

	test('a host other than OpenAI needs no key', () => {
		expect(build({ OPENAI_BASE_URL: 'http://localai.internal:8080/v1' })).not.toThrow();
	});
});
