/**
 * The ImageGen node with generations as jobs, run by n8n-core's engine against the real service in
 * process (a recording proxy in front): Wait for Result "wait" polls the job and outputs what a
 * synchronous run does, "submit" outputs the generation object, Get Generation fetches one, and the
 * service's signed webhook reaches `$execution.resumeUrl`. A job runs as long as a test needs: it
 * is a p-image-edit whose input image the media host holds back, so the node polls it running and a
 * Max Wait of 1 s ends while it runs; the job ends when the test releases the image, or fails when
 * the host refuses it (404). No test waits on the sandbox's clock.
 * What only a gateway between node and service does (hold a request back, answer a cancel with a
 * 500, add Retry-After, drop `Prefer` as a service from before jobs ignores it) is the proxy's part.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IExecuteFunctions, INodeExecutionData, INodeType } from 'n8n-workflow';

import { MODELS } from '../../core/models';
import { call, eventually, postJson } from '../server/support/http';
import { makeImage } from '../server/support/media';
import type { HeldMedia } from '../server/support/media-host';
import { startReceiver, verifyStandardWebhook, type Receiver } from '../server/support/webhook-receiver';
import { binaryBytes, IMAGE_GEN, runWorkflow, type RunOptions, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment, type NodeTestEnvironment } from './support/environment';

const quick = useNodeTestEnvironment(['--webhook-allow-private']);

const GENERATION = { model: 'p-image', prompt: 'A harbour at dawn', aspectRatio: '1:1', outputFormat: 'png', responseFormat: 'url' };
const GENERATIONS_PATH = '/v1/images/generations';
const CANCEL = /^\/v1\/generations\/[^/]+\/cancel$/;

function run(env: NodeTestEnvironment, nodes: WorkflowNode[], seed?: SeedItem[], extra: Partial<RunOptions> = {}) {
	return runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes, seed, ...extra });
}

function generate(options: Record<string, unknown> = {}, parameters: Record<string, unknown> = {}, extra: Partial<WorkflowNode> = {}): WorkflowNode {
	return { name: 'ImageGen', type: IMAGE_GEN, parameters: { ...GENERATION, ...parameters, options }, ...extra };
}

/**
 * A p-image-edit generation from the image at `url`: a job that fails when the URL answers 404.
 * With a ratio of its own, the image is fetched by the job as it runs, not before it is accepted.
 */
function edit(url: string, options: Record<string, unknown> = {}, extra: Partial<WorkflowNode> = {}): WorkflowNode {
	return generate(options, { model: 'p-image-edit', prompt: 'Make it blue', aspectRatio: '1:1', images: { image: [{ source: 'url', url }] } }, extra);
}

function getGeneration(generationId: string, options: Record<string, unknown> = {}): WorkflowNode {
	return { name: 'ImageGen', type: IMAGE_GEN, parameters: { operation: 'getGeneration', generationId, options } };
}

const submits = (env: NodeTestEnvironment) => env.proxy.requests.filter((request) => request.method === 'POST' && request.path === GENERATIONS_PATH);
const polls = (env: NodeTestEnvironment) => env.proxy.requests.filter((request) => request.method === 'GET' && request.path.startsWith('/v1/generations/'));
const cancels = (env: NodeTestEnvironment) => env.proxy.requests.filter((request) => request.method === 'POST' && CANCEL.test(request.path));
const gaps = (times: number[]) => times.slice(1).map((time, index) => time - times[index]!);

let holds: HeldMedia[] = [];
/** An input image the media host answers only when the test says: the job fetching it runs until then. */
function held(): HeldMedia {
	const media = quick.media.hold(`/held-${holds.length}.png`, picture, { 'content-type': 'image/png' });
	holds.push(media);
	return media;
}
// A job still fetching its input ends before the next test, whatever this one asserted.
afterEach(() => {
	for (const media of holds) media.release();
	holds = [];
});

/** Once the node has polled `count` times and been answered, while its job (held) still runs. */
async function polledRunning(count: number): Promise<void> {
	expect(await eventually(() => polls(quick)[count - 1]?.response !== undefined, 15_000, 10)).toBe(true);
	expect(polls(quick).slice(0, count).map((poll) => poll.response?.status)).toEqual(Array(count).fill(200));
	expect((await jobOnService(quick, (await submittedJob(quick)).split('/').pop()!)).status).toBe('running');
}

/** The path of the job the node submitted, from the service's Location (once it has answered). */
async function submittedJob(env: NodeTestEnvironment): Promise<string> {
	expect(await eventually(() => submits(env)[0]?.response !== undefined)).toBe(true);
	const location = submits(env)[0]!.response!.headers.location;
	expect(location).toMatch(/^\/v1\/generations\/gen_[0-9a-f]+$/);
	return String(location);
}

/** A job as the service keeps it now, asked directly (not through the proxy). */
async function jobOnService(env: NodeTestEnvironment, id: string): Promise<Record<string, any>> {
	const answer = await call(env.server, `/v1/generations/${id}`);
	expect(answer.status).toBe(200);
	return answer.body;
}

/** A job submitted directly, then waited for until its status is one of `until` (none: as answered). */
async function submitDirectly(env: NodeTestEnvironment, body: Record<string, unknown>, until: string[] = []): Promise<Record<string, any>> {
	const accepted = await postJson(env.server, GENERATIONS_PATH, body, { headers: { prefer: 'respond-async' } });
	expect(accepted.status).toBe(202);
	let job = accepted.body as Record<string, any>;
	if (until.length > 0) {
		expect(await eventually(async () => until.includes((job = await jobOnService(env, job.id)).status), 15_000)).toBe(true);
	}
	return job;
}

async function served(url: unknown): Promise<Buffer> {
	const response = await fetch(String(url));
	expect(response.status).toBe(200);
	return Buffer.from(await response.arrayBuffer());
}

let picture: Buffer;
beforeAll(async () => {
	picture = await makeImage('png', 64, 48);
});

describe('Wait for Result "wait" (the default)', () => {
	test('the job is submitted with Prefer: respond-async and polled until it succeeds; the item is the synchronous one', async () => {
		const input = held();
		const running = run(quick, [edit(input.url)]);
		await polledRunning(1);
		input.release();
		const result = await running;
		expect(result.error()).toBeUndefined();

		const [submit] = submits(quick);
		expect(submit!.prefer).toBe('respond-async');
		expect(submit!.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
		expect(JSON.parse(submit!.json!)).toEqual({ model: 'p-image-edit', prompt: 'Make it blue', images: [input.url], aspect_ratio: '1:1', output_format: 'png', response_format: 'url' });
		expect(submit!.response!.status).toBe(202);
		const location = String(submit!.response!.headers.location);
		// The node stops at the first final state: it polled on after seeing the job running.
		expect(polls(quick).length).toBeGreaterThanOrEqual(2);
		expect(new Set(polls(quick).map((poll) => poll.path))).toEqual(new Set([location]));

		const job = await jobOnService(quick, location.split('/').pop()!);
		expect(job.status).toBe('succeeded');
		const [image] = job.result.data;
		const items = result.output('ImageGen');
		expect(items).toHaveLength(1);
		expect(items[0]!.json).toMatchObject({
			model: 'p-image-edit',
			prompt: 'Make it blue',
			url: image.url,
			expiresAt: image.expires_at,
			outputFormat: 'png',
			mimeType: 'image/png',
			seed: image.seed,
			costUsd: MODELS['p-image-edit'].priceUsd,
		});
		expect(items[0]!.json.fileName).toMatch(/^p-image-edit-.+\.png$/);
		const bytes = await served(image.url);
		expect((await binaryBytes(items[0]!)).equals(bytes)).toBe(true);
		expect(items[0]!.json.sizeBytes).toBe(bytes.length);
		expect(items[0]!.pairedItem).toEqual({ item: 0 });
	});

	test('the service sends no Retry-After: the pauses start at 250 ms and grow by half', async () => {
		const input = held();
		const inline = edit(input.url);
		inline.parameters = { ...inline.parameters, responseFormat: 'b64_json' };
		const running = run(quick, [inline]);
		await polledRunning(2);
		input.release();
		const result = await running;
		expect(result.error()).toBeUndefined();
		expect(submits(quick)[0]!.response!.headers['retry-after']).toBeUndefined();
		const [first, second] = gaps([submits(quick)[0]!.at, ...polls(quick).map((request) => request.at)]);
		expect(first).toBeGreaterThanOrEqual(240);
		expect(second).toBeGreaterThanOrEqual(365);
		expect(result.output('ImageGen')[0]!.binary?.data?.mimeType).toBe('image/png');
	});

	test('a Retry-After on the answers (a gateway in front of the service) sets the pause instead', async () => {
		quick.proxy.addAnswerHeaders({ 'retry-after': '1' });
		const input = held();
		const running = run(quick, [edit(input.url)]);
		await polledRunning(3);
		input.release();
		const result = await running;
		expect(result.error()).toBeUndefined();
		const times = [submits(quick)[0]!.at, ...polls(quick).map((request) => request.at)];
		// Every pause is the second the answers ask for, where the node's own would start at 250 ms and
		// grow. A lower bound only: a busy machine lengthens gaps, never shortens them.
		expect(Math.min(...gaps(times))).toBeGreaterThanOrEqual(950);
	});

	test("a job that fails: the item fails with the API's message, pointing at the parameter behind its field", async () => {
		const missing = `${quick.media.origin}/missing.png`;
		const result = await run(quick, [edit(missing)]);
		const location = await submittedJob(quick);
		const job = await jobOnService(quick, location.split('/').pop()!);
		expect(job).toMatchObject({ status: 'failed', result: null, error: { param: 'images[0]', code: 'fetch_failed' } });
		const error = result.error('ImageGen');
		expect(error?.message).toBe(job.error.message);
		expect(error?.message).toContain('HTTP 404');
		expect(error?.description).toBe(`Check the parameter 'images' (generation ${job.id} failed, code fetch_failed, field 'images[0]').`);
		expect(result.output('ImageGen')).toEqual([]);
	});

	test('continue on fail: a failed job becomes an error item in place, the other items go on', async () => {
		const found = quick.media.put('/found.png', picture, { 'content-type': 'image/png' });
		const seed = [{ json: { url: found } }, { json: { url: `${quick.media.origin}/missing.png` } }, { json: { url: found } }];
		const result = await run(quick, [edit('={{ $json.url }}', {}, { onError: 'continueRegularOutput' })], seed);
		expect(result.error()).toBeUndefined();
		const items = result.output('ImageGen');
		expect(items.map((item) => (item.json.error ? 'error' : item.json.mimeType))).toEqual(['image/png', 'error', 'image/png']);
		expect(items[1]!.json.error).toContain('HTTP 404');
		expect(items[1]!.json.description).toMatch(/Check the parameter 'images'/);
		expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
	});

	test('a job canceled through the API while the node waits fails the item saying so', async () => {
		const input = held();
		const running = run(quick, [edit(input.url)]);
		const location = await submittedJob(quick);
		await input.requested;
		const canceled = await call(quick.server, `${location}/cancel`, { method: 'POST' });
		expect(canceled.body.status).toBe('canceled');
		const result = await running;
		expect(result.error('ImageGen')?.message).toBe(`Generation ${canceled.body.id} ended canceled without an image`);
	});

	test('Max Wait reached: the item fails naming Max Wait, and the job is canceled on the service', async () => {
		const input = held();
		const started = Date.now();
		const result = await run(quick, [edit(input.url, { maxWaitSeconds: 1 })]);
		const elapsed = Date.now() - started;
		const location = await submittedJob(quick);
		const id = location.split('/').pop()!;
		const error = result.error('ImageGen');
		expect(error?.message).toBe(`Max Wait (Seconds) reached: generation ${id} was still running after 1 s; it was canceled`);
		expect(error?.description).toMatch(/'Max Wait \(Seconds\)' \(maxWaitSeconds\)/);
		expect(cancels(quick).map((request) => [request.path, request.response?.status])).toEqual([[`${location}/cancel`, 200]]);
		expect(elapsed).toBeGreaterThanOrEqual(1000);
		expect(await jobOnService(quick, id)).toMatchObject({ status: 'canceled', result: null });
		// Still canceled once its input arrives, which the job would have drawn from.
		input.release();
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect((await jobOnService(quick, id)).status).toBe('canceled');
	});

	test('a job that ends while Max Wait runs out is taken from the answer to the cancel', async () => {
		// The cancel is held back on its way until the job has succeeded, as over a slow network.
		const hold = quick.proxy.holdNext(CANCEL);
		const input = held();
		const running = run(quick, [edit(input.url, { maxWaitSeconds: 1 })]);
		await hold.arrived;
		input.release();
		const id = (await submittedJob(quick)).split('/').pop()!;
		expect(await eventually(async () => (await jobOnService(quick, id)).status === 'succeeded', 15_000)).toBe(true);
		hold.release();
		const result = await running;
		expect(result.error()).toBeUndefined();
		expect(cancels(quick)).toHaveLength(1);
		const job = await jobOnService(quick, id);
		expect(result.output('ImageGen')[0]!.json).toMatchObject({ model: 'p-image-edit', url: job.result.data[0].url });
	});

	test("a job that failed while Max Wait runs out fails the item with the API's message", async () => {
		const hold = quick.proxy.holdNext(CANCEL);
		const input = held();
		const running = run(quick, [edit(input.url, { maxWaitSeconds: 1 })]);
		await hold.arrived;
		input.refuse(404);
		const id = (await submittedJob(quick)).split('/').pop()!;
		expect(await eventually(async () => (await jobOnService(quick, id)).status === 'failed', 15_000)).toBe(true);
		hold.release();
		const result = await running;
		expect(result.error('ImageGen')?.message).toBe((await jobOnService(quick, id)).error.message);
		expect(result.error('ImageGen')?.message).toContain('HTTP 404');
	});

	test('Max Wait reached and the cancel refused: the item fails saying the cancel was not confirmed', async () => {
		quick.proxy.failNext({ status: 500, body: { error: { message: 'The cancel failed', type: 'server_error', param: null, code: 'internal_error' } } }, 1, CANCEL);
		const input = held();
		const result = await run(quick, [edit(input.url, { maxWaitSeconds: 1 })]);
		const id = (await submittedJob(quick)).split('/').pop()!;
		expect(result.error('ImageGen')?.message).toBe(`Max Wait (Seconds) reached: generation ${id} was still running after 1 s; a cancel was asked for but not confirmed`);
		// Best effort: one cancel, not retried; the job goes on to its image.
		expect(cancels(quick)).toHaveLength(1);
		input.release();
		expect(await eventually(async () => (await jobOnService(quick, id)).status === 'succeeded', 15_000)).toBe(true);
	});
});

describe('a service from before jobs (it ignores Prefer: respond-async)', () => {
	beforeEach(() => quick.proxy.dropRequestHeader('prefer'));

	test.each(['wait', 'submit'])('Wait for Result "%s": the 200 answer to the async request is the image; nothing is polled', async (waitForResult) => {
		const result = await run(quick, [generate({ waitForResult })]);
		expect(result.error()).toBeUndefined();
		const [submit] = submits(quick);
		expect(submit!.prefer).toBe('respond-async');
		expect(submit!.response!.status).toBe(200);
		expect(polls(quick)).toEqual([]);
		const [item] = result.output('ImageGen');
		expect(item!.json).toMatchObject({ model: 'p-image', prompt: 'A harbour at dawn', outputFormat: 'png', mimeType: 'image/png', seed: expect.any(Number) });
		expect(item!.binary?.data?.mimeType).toBe('image/png');
	});

	test('a saved workflow of today (no operation, no new options) gives the same items from a service with jobs as from one without', async () => {
		const saved = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', 'imagegen-generate-and-edit.json'), 'utf8')) as { nodes: Array<{ name: string; type: string; parameters: Record<string, unknown> }> }).nodes;
		/** An item as it compares between runs: what a new generation changes (its file, its times, its random seed) aside. */
		const comparable = (item: INodeExecutionData) => {
			const varying = new Set(['url', 'expiresAt', 'fileName', 'created', 'sizeBytes', 'seed']);
			const json = Object.fromEntries(Object.entries(item.json).filter(([key]) => !varying.has(key)));
			const { url, expiresAt, fileName, seed } = item.json;
			return { json, hosted: [typeof url, typeof expiresAt, typeof fileName, typeof seed], binary: item.binary?.data?.mimeType, pairedItem: item.pairedItem };
		};
		for (const name of ['Generate', 'Poster']) {
			const node = saved.find((candidate) => candidate.name === name)!;
			expect(node.parameters).not.toHaveProperty('operation');
			expect(node.parameters.options).toEqual({});
			const nodes = [{ name, type: node.type, parameters: structuredClone(node.parameters) }];
			const seed = [{ json: { prompt: 'A lighthouse' } }, { json: { prompt: 'A bicycle' } }];
			const outputs = [];
			for (const knowsJobs of [true, false]) {
				quick.proxy.reset();
				if (!knowsJobs) quick.proxy.dropRequestHeader('prefer');
				const result = await run(quick, nodes, seed);
				expect(result.error()).toBeUndefined();
				expect(submits(quick).map((submit) => submit.response?.status)).toEqual(knowsJobs ? [202, 202] : [200, 200]);
				expect(polls(quick).length > 0).toBe(knowsJobs);
				outputs.push(result.output(name).map(comparable));
			}
			const [withJobs, without] = outputs;
			expect(withJobs).toHaveLength(2);
			expect(withJobs).toEqual(without);
		}
	});
});

describe('Wait for Result "submit"', () => {
	test('the item is the generation object itself, at once: nothing is polled', async () => {
		const result = await run(quick, [generate({ waitForResult: 'submit' })]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('ImageGen');
		expect(item!.json).toEqual({ object: 'generation', id: expect.stringMatching(/^gen_/), status: 'running', model: 'p-image', created: expect.any(Number), finished_at: null, result: null, error: null });
		expect(item!.binary).toBeUndefined();
		expect(item!.pairedItem).toEqual({ item: 0 });
		expect(quick.proxy.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`POST ${GENERATIONS_PATH}`]);
		expect((await submitDirectly(quick, { model: 'p-image', prompt: 'x' })).id).not.toBe(item!.json.id);
		expect(await eventually(async () => (await jobOnService(quick, String(item!.json.id))).status === 'succeeded')).toBe(true);
	});

	describe('Webhook URL', () => {
		let receiver: Receiver;
		beforeEach(async () => (receiver = await startReceiver()));
		afterEach(() => receiver.close());

		test("is sent as webhook_url; {{ $execution.resumeUrl }} (with n8n's signature) receives the service's signed webhook", async () => {
			const waiting = `${new URL(receiver.url).origin}/webhook-waiting`;
			const result = await run(quick, [generate({ waitForResult: 'submit', webhookUrl: '={{ $execution.resumeUrl }}' })], undefined, {
				executionId: 'execution-17',
				webhookWaitingBaseUrl: waiting,
				resumeToken: 'token-17',
			});
			expect(result.error()).toBeUndefined();
			const resumeUrl = `${waiting}/execution-17?signature=token-17`;
			expect(JSON.parse(submits(quick)[0]!.json!)).toMatchObject({ model: 'p-image', webhook_url: resumeUrl });

			const [submitted] = result.output('ImageGen');
			expect(await eventually(() => receiver.received.length > 0, 15_000)).toBe(true);
			const [delivery] = receiver.received;
			expect(delivery!.path).toBe('/webhook-waiting/execution-17?signature=token-17');
			const secret = (await call<{ secret: string }>(quick.server, '/v1/webhooks/secret')).body.secret;
			verifyStandardWebhook(secret, delivery!.headers, delivery!.body, Math.floor(Date.now() / 1000));
			expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'generation.succeeded', data: { object: 'generation', id: submitted!.json.id, status: 'succeeded' } });
		});

		test('an empty one sends no webhook_url', async () => {
			const result = await run(quick, [generate({ waitForResult: 'submit', webhookUrl: '  ' })]);
			expect(result.error()).toBeUndefined();
			expect(JSON.parse(submits(quick)[0]!.json!)).not.toHaveProperty('webhook_url');
		});
	});
});

describe('options the service would refuse are refused before anything is sent', () => {
	test.each([
		['a Webhook URL that is not http(s)', { webhookUrl: 'ftp://example.com/hook' }, "Parameter 'webhookUrl' of item 0: \"ftp://example.com/hook\" is not an http or https URL"],
		['a Webhook URL that is no URL', { webhookUrl: 'not a url' }, "Parameter 'webhookUrl' of item 0: \"not a url\" is not a valid URL"],
		['a Webhook URL over 2,048 characters', { webhookUrl: `https://example.com/${'a'.repeat(2040)}` }, "Parameter 'webhookUrl' of item 0: the URL has 2060 characters; at most 2048 are allowed"],
		['a Max Wait under 1 s', { maxWaitSeconds: 0 }, "Parameter 'maxWaitSeconds' of item 0: 0 is not a number of seconds of at least 1"],
		['an unknown Wait for Result', { waitForResult: 'later' }, "Parameter 'waitForResult' of item 0: \"later\" is not one of wait, submit"],
	])('%s', async (_case, options, message) => {
		const result = await run(quick, [generate(options)]);
		expect(result.error('ImageGen')?.message).toBe(message);
		expect(quick.proxy.requests).toEqual([]);
	});
});

describe('Get Generation', () => {
	const request = { model: 'p-image', prompt: 'A harbour at dawn', output_format: 'webp', response_format: 'url' };
	const editing = (url: string) => ({ ...request, model: 'p-image-edit', images: [url], aspect_ratio: '1:1' });

	test('a generation that succeeded: the image items a synchronous run gives, downloaded as binary', async () => {
		const job = await submitDirectly(quick, request, ['succeeded']);
		const result = await run(quick, [getGeneration(job.id)]);
		expect(result.error()).toBeUndefined();
		expect(polls(quick).map((poll) => poll.path)).toEqual([`/v1/generations/${job.id}`]);
		const [image] = job.result.data;
		const [item] = result.output('ImageGen');
		expect(item!.json).toMatchObject({ model: 'p-image', url: image.url, expiresAt: image.expires_at, outputFormat: 'webp', mimeType: 'image/webp', seed: image.seed, costUsd: MODELS['p-image'].priceUsd });
		expect(item!.json).not.toHaveProperty('prompt');
		expect(item!.json.fileName).toMatch(/^p-image-.+\.webp$/);
		expect(item!.binary?.data?.mimeType).toBe('image/webp');
		expect((await binaryBytes(item!)).equals(await served(image.url))).toBe(true);
	});

	test('the output options apply: Download Image off keeps only the URL; an inline image lands in the named field', async () => {
		const [hosted, inline] = await Promise.all([submitDirectly(quick, request, ['succeeded']), submitDirectly(quick, { ...request, response_format: 'b64_json' }, ['succeeded'])]);
		const withoutDownload = await run(quick, [getGeneration(hosted.id, { download: false })]);
		expect(withoutDownload.output('ImageGen')[0]!.binary).toBeUndefined();
		expect(withoutDownload.output('ImageGen')[0]!.json.url).toBe(hosted.result.data[0].url);
		const intoPicture = await run(quick, [getGeneration(inline.id, { binaryPropertyName: 'picture' })]);
		const [item] = intoPicture.output('ImageGen');
		expect(Object.keys(item!.binary!)).toEqual(['picture']);
		expect(item!.json.url).toBeUndefined();
		expect(item!.json.mimeType).toBe('image/webp');
	});

	test.each([
		['running', () => submitDirectly(quick, editing(held().url))],
		['failed', () => submitDirectly(quick, editing(`${quick.media.origin}/missing.png`), ['failed'])],
		['canceled', async () => (await call(quick.server, `/v1/generations/${(await submitDirectly(quick, editing(held().url))).id}/cancel`, { method: 'POST' })).body],
	] as const)('a generation that is %s: the generation object, as the service answers it', async (status, make) => {
		const job = await make();
		expect(job.status).toBe(status);
		const result = await run(quick, [getGeneration(job.id)]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('ImageGen');
		expect(item!.json).toEqual(await jobOnService(quick, job.id));
		expect(item!.json.status).toBe(status);
		expect(item!.binary).toBeUndefined();
		expect(item!.pairedItem).toEqual({ item: 0 });
	});

	test('a synchronous inline generation, whose images are not kept: an error saying so, not an unusable answer', async () => {
		const sync = await postJson(quick.server, GENERATIONS_PATH, { ...request, response_format: 'b64_json' });
		expect(sync.status).toBe(200);
		const listed = await call(quick.server, '/v1/generations?limit=1');
		const [job] = listed.body.data;
		expect(job).toMatchObject({ status: 'succeeded', result: null });
		const result = await run(quick, [getGeneration(job.id)]);
		const error = result.error('ImageGen');
		expect(error?.message).toBe(`Generation '${job.id}' succeeded, but its images are not kept`);
		expect(error?.description).toMatch(/Idempotency-Key or a Webhook URL/);
	});

	test('an unknown id: 404, an error naming Generation ID', async () => {
		for (const id of ['gen_unknown', `gen_${'0'.repeat(32)}`]) {
			const result = await run(quick, [getGeneration(id)]);
			const error = result.error('ImageGen');
			expect(error?.message).toBe(`No generation '${id}' of this API key`);
			expect(error?.description).toBe("Check the parameter 'generationId' (HTTP 404, code generation_not_found, field 'id').");
			expect(error?.httpCode).toBe('404');
		}
	});

	test('an empty Generation ID fails naming it; nothing is sent', async () => {
		const result = await run(quick, [getGeneration('  ')]);
		expect(result.error('ImageGen')?.message).toBe("Parameter 'generationId' of item 0: 'generationId' is empty");
		expect(quick.proxy.requests).toEqual([]);
	});
});

describe('the jobs examples', () => {
	type Saved = { nodes: Array<{ name: string; type: string; typeVersion: number; parameters: Record<string, unknown> }> };
	const example = (file: string) => JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', file), 'utf8')) as Saved;
	const saved = (workflow: Saved, name: string): WorkflowNode => {
		const node = workflow.nodes.find((candidate) => candidate.name === name)!;
		expect([node.type, node.typeVersion]).toEqual([IMAGE_GEN, 1]);
		return { name, type: node.type, parameters: structuredClone(node.parameters) };
	};

	test('imagegen-jobs-wait.json: the image after the job was polled', async () => {
		const result = await run(quick, [saved(example('imagegen-jobs-wait.json'), 'Generate and wait')]);
		expect(result.error()).toBeUndefined();
		expect(submits(quick).map((submit) => submit.response?.status)).toEqual([202]);
		expect(polls(quick).length).toBeGreaterThanOrEqual(1);
		expect(result.output('Generate and wait')[0]!.binary?.data?.mimeType).toBe('image/png');
	});

	test('imagegen-jobs-submit-webhook.json: Submit hands on the job with the resume URL, the webhook resumes the execution, Get the image fetches it', async () => {
		const receiver = await startReceiver();
		try {
			const workflow = example('imagegen-jobs-submit-webhook.json');
			expect(workflow.nodes.find((node) => node.name === 'Wait for the webhook')).toMatchObject({ type: 'n8n-nodes-base.wait', parameters: { resume: 'webhook', httpMethod: 'POST' } });
			// n8n's Wait node "On Webhook Call", in process: the execution goes on once the webhook reached the resume URL.
			const waitNode: INodeType = {
				description: { displayName: 'Wait', name: 'wait', group: ['transform'], version: 1, description: 'Waits for the webhook', defaults: { name: 'Wait' }, inputs: ['main'], outputs: ['main'], properties: [] },
				async execute(this: IExecuteFunctions) {
					expect(await eventually(() => receiver.received.length > 0, 15_000)).toBe(true);
					const [delivery] = receiver.received;
					return [[{ json: { headers: delivery!.headers, body: JSON.parse(delivery!.body) } as never }]];
				},
			};
			const result = await run(quick, [saved(workflow, 'Submit'), { name: 'Wait for the webhook', type: 'test.wait' }, saved(workflow, 'Get the image')], undefined, {
				executionId: 'execution-5',
				webhookWaitingBaseUrl: `${new URL(receiver.url).origin}/webhook-waiting`,
				nodeTypes: { 'test.wait': waitNode },
			});
			expect(result.error()).toBeUndefined();
			expect(JSON.parse(submits(quick)[0]!.json!).webhook_url).toBe(`${new URL(receiver.url).origin}/webhook-waiting/execution-5`);
			const [submitted] = result.output('Submit');
			const [webhook] = result.output('Wait for the webhook');
			const [fetched] = result.output('Get the image');
			expect(submitted!.json).toMatchObject({ object: 'generation', status: 'running' });
			expect(webhook!.json.body).toMatchObject({ type: 'generation.succeeded', data: { id: submitted!.json.id } });
			const job = await jobOnService(quick, String(submitted!.json.id));
			expect(fetched!.json.url).toBe(job.result.data[0].url);
			expect(fetched!.binary?.data?.mimeType).toBe('image/png');
		} finally {
			await receiver.close();
		}
	});

	test('imagegen-jobs-get-generation.json: the generation named by the Set node, as an image', async () => {
		const workflow = example('imagegen-jobs-get-generation.json');
		const job = await submitDirectly(quick, { model: 'p-image', prompt: 'x', output_format: 'png', response_format: 'url' }, ['succeeded']);
		const result = await run(quick, [saved(workflow, 'Get generation')], [{ json: { generationId: job.id } }]);
		expect(result.error()).toBeUndefined();
		expect(result.output('Get generation')[0]!.binary?.data?.mimeType).toBe('image/png');
	});
});
