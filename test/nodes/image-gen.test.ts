/** The ImageGen node run by n8n-core's engine against the real server on loopback. */
import sharp from 'sharp';

import { MODELS } from '../../core/models';
import { startInProcessServer } from '../server/support/app';
import { makeImage, makeMp4 } from '../server/support/media';
import { binaryBytes, IMAGE_GEN, runWorkflow, type RunOptions, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();

function run(nodes: WorkflowNode[], seed?: SeedItem[], extra: Partial<RunOptions> = {}) {
	return runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes, seed, ...extra });
}

function generate(parameters: Record<string, unknown>, name = 'ImageGen', extra: Partial<WorkflowNode> = {}): WorkflowNode {
	return { name, type: IMAGE_GEN, parameters, ...extra };
}

async function decode(bytes: Buffer) {
	const { width, height, format } = await sharp(bytes).metadata();
	return { width: width!, height: height!, format: format! };
}

async function fetchBytes(url: unknown): Promise<Buffer> {
	const response = await fetch(String(url));
	expect(response.status).toBe(200);
	return Buffer.from(await response.arrayBuffer());
}

/** What the node sent, without its polls of the job it created (every generation waits for its job). */
const sent = () => env.proxy.requests.filter((request) => !request.path.startsWith('/v1/generations/'));

describe('each model with its own parameters', () => {
	test('p-image: hosted URL, downloaded as binary with the right type, size and name', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'A red bicycle', aspectRatio: '16:9', outputFormat: 'jpeg', responseFormat: 'url' })]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('ImageGen');
		expect(item!.json).toMatchObject({ model: 'p-image', prompt: 'A red bicycle', outputFormat: 'jpeg', mimeType: 'image/jpeg', costUsd: MODELS['p-image'].priceUsd });
		expect(Date.parse(String(item!.json.expiresAt))).toBeGreaterThan(Date.now() + 23 * 3600_000);
		expect(String(item!.json.url)).toMatch(new RegExp(`^${env.server.origin}/files/.+\\.jpg$`));
		expect(item!.binary!.data!.mimeType).toBe('image/jpeg');
		expect(item!.binary!.data!.fileName).toMatch(/^p-image-.*\.jpg$/);
		const bytes = await binaryBytes(item!);
		expect(bytes.equals(await fetchBytes(item!.json.url))).toBe(true);
		expect(await decode(bytes)).toEqual({ width: 1024, height: 576, format: 'jpeg' });
		expect(item!.pairedItem).toEqual({ item: 0 });
	});

	test('textimage-v2: negative prompt, style and magic prompt are sent; b64_json lands as binary, nothing hosted', async () => {
		const result = await run([
			generate({ model: 'textimage-v2', prompt: 'A poster', negativePrompt: 'blur', styleType: 'ANIME', magicPromptOption: 'OFF', aspectRatio: '3:1', outputFormat: 'webp', responseFormat: 'b64_json' }),
		]);
		const [item] = result.output('ImageGen');
		expect(item!.json.url).toBeUndefined();
		expect(item!.json).toMatchObject({ model: 'textimage-v2', outputFormat: 'webp', costUsd: MODELS['textimage-v2'].priceUsd });
		expect(await decode(await binaryBytes(item!))).toEqual({ width: 1024, height: 344, format: 'webp' });
	});

	test('textimage-v2 takes the extended aspect ratios', async () => {
		const result = await run([generate({ model: 'textimage-v2', prompt: 'Tall', aspectRatio: '10:16', outputFormat: 'png', responseFormat: 'b64_json' })]);
		expect(await decode(await binaryBytes(result.output('ImageGen')[0]!))).toEqual({ width: 640, height: 1024, format: 'png' });
	});

	test('download off: only the hosted URL, no binary', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'x', responseFormat: 'url', options: { download: false } })]);
		const [item] = result.output('ImageGen');
		expect(item!.binary).toBeUndefined();
		expect(await decode(await fetchBytes(item!.json.url))).toMatchObject({ width: 1024, height: 1024, format: 'png' });
	});

	test('the binary goes to the field the options name', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'x', responseFormat: 'b64_json', options: { binaryPropertyName: 'picture' } })]);
		expect(Object.keys(result.output('ImageGen')[0]!.binary!)).toEqual(['picture']);
	});

	test('parameters of other models are not sent, even when a saved workflow still holds them', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'x', negativePrompt: 'left over', styleType: 'ANIME', images: { image: [{ source: 'url', url: 'https://example.com/a.png' }] }, responseFormat: 'b64_json' })]);
		expect(result.error()).toBeUndefined();
		expect(result.output('ImageGen')).toHaveLength(1);
	});
});

describe('p-image-edit input images', () => {
	test('the binary output of a previous ImageGen node', async () => {
		const result = await run([
			generate({ model: 'p-image', prompt: 'A bicycle', aspectRatio: '16:9', responseFormat: 'url' }, 'First'),
			generate({ model: 'p-image-edit', prompt: 'Paint it blue', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] }, aspectRatio: '1:1', responseFormat: 'b64_json' }, 'Edit'),
		]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Edit');
		expect(item!.json.model).toBe('p-image-edit');
		expect(item!.pairedItem).toEqual({ item: 0 });
		expect(await decode(await binaryBytes(item!))).toMatchObject({ width: 1024, height: 1024 });
		const generation = env.proxy.requests.filter((request) => request.path === '/v1/images/generations');
		expect(generation).toHaveLength(2);
		expect(generation[1]!.bodyBytes).toBeGreaterThan(10_000);
	});

	test('URL, raw base64 and data URI sources together, and binary from the input item', async () => {
		const png = await makeImage('png', 80, 60);
		const url = env.media.put('/input.png', png, { 'content-type': 'image/png' });
		const jpeg = await makeImage('jpeg', 40, 40);
		const result = await run(
			[
				generate({
					model: 'p-image-edit',
					prompt: 'Combine them',
					images: {
						image: [
							{ source: 'url', url },
							{ source: 'base64', base64: jpeg.toString('base64') },
							{ source: 'base64', base64: `data:image/webp;base64,${(await makeImage('webp', 30, 30)).toString('base64')}` },
							{ source: 'binary', binaryPropertyName: 'photo' },
						],
					},
					responseFormat: 'b64_json',
				}),
			],
			[{ json: {}, binary: { photo: { bytes: await makeImage('png', 50, 50), fileName: 'photo.png', mimeType: 'image/png' } } }],
		);
		expect(result.error()).toBeUndefined();
		expect(result.output('ImageGen')).toHaveLength(1);
		expect(env.media.hits()).toBeGreaterThanOrEqual(1);
	});

	test('a binary larger than the inline limit is uploaded first and passed as a hosted URL', async () => {
		const big = await makeImage('png', 600, 400);
		const result = await run(
			[generate({ model: 'p-image-edit', prompt: 'Use the upload', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] }, responseFormat: 'b64_json', options: { inlineLimitMb: 0 } })],
			[{ binary: { data: { bytes: big, fileName: 'big.png', mimeType: 'image/png' } } }],
		);
		expect(result.error()).toBeUndefined();
		expect(sent().map((request) => request.path)).toEqual(['/v1/uploads', '/v1/images/generations']);
		expect(env.proxy.requests[0]!.contentType).toMatch(/^multipart\/form-data; boundary=/);
		expect(env.proxy.requests[0]!.bodyBytes).toBeGreaterThan(big.length);
		expect(env.proxy.requests[1]!.bodyBytes).toBeLessThan(2_000);
	});

	test('a binary that is not an image fails before any request, naming the field and the item', async () => {
		const result = await run(
			[generate({ model: 'p-image-edit', prompt: 'x', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] } })],
			[{ binary: { data: { bytes: makeMp4(), fileName: 'clip.mp4', mimeType: 'video/mp4' } } }],
		);
		expect(result.error('ImageGen')?.message).toMatch(/'images'.*item 0.*'data'.*video\/mp4/);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('a missing binary property names it', async () => {
		const result = await run([generate({ model: 'p-image-edit', prompt: 'x', images: { image: [{ source: 'binary', binaryPropertyName: 'nope' }] } })]);
		expect(result.error('ImageGen')?.message).toMatch(/nope/);
		expect(env.proxy.requests).toHaveLength(0);
	});
});

describe('bad parameters fail before any request, naming the parameter and the item', () => {
	test.each([
		['p-image', { model: 'p-image', prompt: '   ' }, /Parameter 'prompt' of item 0/],
		['p-image', { model: 'p-image', prompt: 'x', aspectRatio: '3:1' }, /Parameter 'aspectRatio' of item 0/],
		['p-image', { model: 'p-image', prompt: 'x', outputFormat: 'gif' }, /Parameter 'outputFormat' of item 0/],
		['p-image', { model: 'p-image', prompt: 'x', responseFormat: 'base64' }, /Parameter 'responseFormat' of item 0/],
		['p-image', { model: 'p-image', prompt: 'x'.repeat(10_001) }, /Parameter 'prompt' of item 0.*10000/],
		['p-image-edit', { model: 'p-image-edit', prompt: 'x', images: { image: [] } }, /Parameter 'images' of item 0/],
		['p-image-edit', { model: 'p-image-edit', prompt: 'x', images: { image: [{ source: 'url', url: 'ftp://example.com/a.png' }] } }, /Parameter 'images' of item 0.*ftp/],
		['p-image-edit', { model: 'p-image-edit', prompt: 'x', images: { image: [{ source: 'base64', base64: 'not base64!' }] } }, /Parameter 'images' of item 0/],
		['textimage-v2', { model: 'textimage-v2', prompt: 'x', styleType: 'PHOTO' }, /Parameter 'styleType' of item 0/],
		['textimage-v2', { model: 'textimage-v2', prompt: 'x', magicPromptOption: 'MAYBE' }, /Parameter 'magicPromptOption' of item 0/],
		['textimage-v2', { model: 'textimage-v2', prompt: 'x', negativePrompt: 'y'.repeat(10_001) }, /Parameter 'negativePrompt' of item 0/],
		['any', { model: 'dall-e', prompt: 'x' }, /Parameter 'model' of item 0.*p-image/],
	])('%s, case %#', async (_model, parameters, message) => {
		const result = await run([generate(parameters)]);
		expect(result.error('ImageGen')?.message).toMatch(message);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('more than 10 input images: n8n refuses the workflow before the node runs', async () => {
		const tooMany = { image: Array.from({ length: 11 }, () => ({ source: 'url', url: 'https://example.com/a.png' })) };
		await expect(run([generate({ model: 'p-image-edit', prompt: 'x', images: tooMany })])).rejects.toThrow(/At most 10/);
		expect(env.proxy.requests).toHaveLength(0);
	});

	test('the failing item is the one named when earlier items are fine', async () => {
		const result = await run([generate({ model: 'p-image', prompt: '={{ $json.prompt }}', options: { download: false } })], [{ json: { prompt: 'fine' } }, { json: { prompt: '' } }]);
		expect(result.error('ImageGen')?.message).toMatch(/Parameter 'prompt' of item 1/);
	});
});

describe('API errors', () => {
	test('the service message surfaces as a NodeApiError, mapped to the parameter', async () => {
		// At a given ratio the input is fetched by the job the request created: its failure is the job's, with the field it names.
		const missing = { image: [{ source: 'url', url: env.media.origin + '/missing.png' }] };
		const result = await run([generate({ model: 'p-image-edit', prompt: 'x', images: missing, aspectRatio: '1:1' })]);
		const error = result.error('ImageGen');
		expect(error?.name).toBe('NodeApiError');
		expect(error?.message).toMatch(/^Fetching 'images\[0\]' failed: .* answered HTTP 404$/);
		expect(error?.description).toMatch(/parameter 'images' \(generation gen_\w+ failed, code fetch_failed, field 'images\[0\]'\)/);
		// Matching the input's shape (the default), the first input is read before a job exists: the request's own 400.
		const matched = (await run([generate({ model: 'p-image-edit', prompt: 'x', images: missing })])).error('ImageGen');
		expect(matched?.message).toMatch(/^Fetching 'images\[0\]' failed: .* answered HTTP 404$/);
		expect(matched?.description).toMatch(/parameter 'images' \(HTTP 400, code fetch_failed, field 'images\[0\]'\)/);
	});

	test('a wrong API key: the service says so', async () => {
		const result = await runWorkflow({ credentials: { apiKey: 'wrong-key-123456', baseUrl: env.proxy.baseUrl }, nodes: [generate({ model: 'p-image', prompt: 'x' })] });
		expect(result.error('ImageGen')?.message).toMatch(/API key/i);
		expect(result.error('ImageGen')?.httpCode).toBe('401');
	});

	test('an unreachable service names the base URL', async () => {
		const result = await runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: 'http://127.0.0.1:9/v1' }, nodes: [generate({ model: 'p-image', prompt: 'x' })] });
		expect(result.error('ImageGen')?.message).toMatch(/Could not reach the ImageGen API at http:\/\/127\.0\.0\.1:9\/v1/);
	});

	test('continue on fail: failing items become error items in place, the others succeed', async () => {
		const result = await run(
			[generate({ model: 'p-image', prompt: '={{ $json.prompt }}', options: { download: false } }, 'ImageGen', { onError: 'continueRegularOutput' })],
			[{ json: { prompt: 'one' } }, { json: { prompt: ' ' } }, { json: { prompt: 'three' } }],
		);
		expect(result.error()).toBeUndefined();
		const items = result.output('ImageGen');
		expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(items[0]!.json.url).toBeDefined();
		expect(String(items[1]!.json.error)).toMatch(/Parameter 'prompt' of item 1/);
		expect(items[2]!.json.prompt).toBe('three');
	});

	test('continue on fail carries the service message of an API error', async () => {
		const result = await runWorkflow({
			credentials: { apiKey: 'wrong-key-123456', baseUrl: env.proxy.baseUrl },
			nodes: [generate({ model: 'p-image', prompt: 'x' }, 'ImageGen', { onError: 'continueRegularOutput' })],
		});
		expect(String(result.output('ImageGen')[0]!.json.error)).toMatch(/API key/i);
	});
});

describe('retries', () => {
	test('429 with Retry-After, then success: retried after the wait the service asked for', async () => {
		env.proxy.failNext({ status: 429, body: { error: { message: 'Rate limit reached', type: 'rate_limit_error', param: null, code: 'rate_limited' } }, headers: { 'retry-after': '1' } });
		const started = Date.now();
		const result = await run([generate({ model: 'p-image', prompt: 'x', options: { download: false } })]);
		expect(result.error()).toBeUndefined();
		expect(Date.now() - started).toBeGreaterThanOrEqual(950);
		expect(sent().map((request) => request.path)).toEqual(['/v1/images/generations', '/v1/images/generations']);
	});

	test('409 idempotency_in_progress: the same request is still running, so it is repeated after Retry-After', async () => {
		env.proxy.failNext({ status: 409, body: { error: { message: 'still running', type: 'invalid_request_error', param: 'Idempotency-Key', code: 'idempotency_in_progress' } }, headers: { 'retry-after': '1' } });
		const started = Date.now();
		const result = await run([generate({ model: 'p-image', prompt: 'x', options: { download: false } })]);
		expect(result.error()).toBeUndefined();
		expect(Date.now() - started).toBeGreaterThanOrEqual(950);
		const [first, second] = sent();
		expect(sent()).toHaveLength(2);
		expect(second!.idempotencyKey).toBe(first!.idempotencyKey);
	});

	test('any other 409 is not retried', async () => {
		env.proxy.failNext({ status: 409, body: { error: { message: 'another conflict', type: 'invalid_request_error', param: 'Idempotency-Key', code: 'idempotency_key_reused' } }, headers: { 'retry-after': '0' } });
		const result = await run([generate({ model: 'p-image', prompt: 'x', options: { download: false } })]);
		expect(result.error('ImageGen')?.message).toMatch(/another conflict/);
		expect(env.proxy.requests).toHaveLength(1);
	});

	test('503 twice, then success', async () => {
		env.proxy.failNext({ status: 503, body: { error: { message: 'busy', type: 'server_error', param: null, code: 'busy' } }, headers: { 'retry-after': '0' } }, 2);
		const result = await run([generate({ model: 'p-image', prompt: 'x', options: { download: false } })]);
		expect(result.error()).toBeUndefined();
		expect(sent()).toHaveLength(3);
	});

	test('retries stop at the limit and the last answer is reported', async () => {
		env.proxy.failNext({ status: 429, body: { error: { message: 'Rate limit of 1 requests per minute reached', type: 'rate_limit_error', param: null, code: 'rate_limited' } }, headers: { 'retry-after': '0' } }, 5);
		const result = await run([generate({ model: 'p-image', prompt: 'x', options: { maxRetries: 2 } })]);
		expect(result.error('ImageGen')?.message).toMatch(/Rate limit of 1 requests per minute/);
		expect(env.proxy.requests).toHaveLength(3);
	});

	test('a 400 is never retried', async () => {
		env.proxy.failNext({ status: 400, body: { error: { message: 'prompt is too long', type: 'invalid_request_error', param: 'prompt', code: 'invalid_value' } } });
		const result = await run([generate({ model: 'p-image', prompt: 'x' })]);
		expect(result.error('ImageGen')?.message).toMatch(/prompt is too long/);
		expect(env.proxy.requests).toHaveLength(1);
	});

	test("the server's own rate limiter: its 429 is waited out and the item succeeds", async () => {
		const limited = await startInProcessServer({ args: ['--rate-limit-per-minute', '60'] });
		try {
			let answer = 200;
			for (let i = 0; i < 70 && answer !== 429; i++) {
				answer = (await fetch(`${limited.baseUrl}/models`, { headers: { authorization: `Bearer ${limited.apiKey}` } })).status;
			}
			expect(answer).toBe(429);
			const result = await runWorkflow({ credentials: { apiKey: limited.apiKey, baseUrl: limited.baseUrl }, nodes: [generate({ model: 'p-image', prompt: 'x', options: { download: false } })] });
			expect(result.error()).toBeUndefined();
			expect(result.output('ImageGen')).toHaveLength(1);
		} finally {
			await limited.stop({ removeData: true });
		}
	});
});

test('20 items at concurrency 5: output in input order with pairedItem, never more than 5 at once', async () => {
	const seed = Array.from({ length: 20 }, (_, index) => ({ json: { prompt: `item ${index}` } }));
	const result = await run([generate({ model: 'p-image', prompt: '={{ $json.prompt }}', options: { download: false, concurrency: 5 } })], seed);
	expect(result.error()).toBeUndefined();
	const items = result.output('ImageGen');
	expect(items.map((item) => item.json.prompt)).toEqual(seed.map((item) => item.json.prompt));
	expect(items.map((item) => item.pairedItem)).toEqual(seed.map((_, index) => ({ item: index })));
	expect(new Set(items.map((item) => item.json.url)).size).toBe(20);
	expect(env.proxy.maxInFlight()).toBeLessThanOrEqual(5);
	expect(env.proxy.maxInFlight()).toBeGreaterThan(1);
});
