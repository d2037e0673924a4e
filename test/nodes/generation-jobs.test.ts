/**
 * The ImageGen node with generations as jobs, run by n8n-core's engine against a loopback stand-in
 * that follows the service's jobs contract (support/jobs-service.ts): Wait for Result "wait"
 * polls the job and outputs what a synchronous run does, "submit" outputs the generation object,
 * Get Generation fetches one; a service from before jobs is answered as it always was.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INodeExecutionData } from 'n8n-workflow';

import { binaryBytes, IMAGE_GEN, runWorkflow, type RunOptions, type SeedItem, type WorkflowNode } from './support/engine';
import { startJobsService, type JobsService } from './support/jobs-service';

let jobs: JobsService;

beforeAll(async () => {
	jobs = await startJobsService();
});
afterAll(async () => await jobs?.close());
beforeEach(() => jobs.reset());

const GENERATION = { model: 'p-image', prompt: 'A harbour at dawn', aspectRatio: '1:1', outputFormat: 'png', responseFormat: 'url' };
const GENERATIONS_PATH = '/v1/images/generations';

function run(nodes: WorkflowNode[], seed?: SeedItem[], extra: Partial<RunOptions> = {}) {
	return runWorkflow({ credentials: { apiKey: jobs.apiKey, baseUrl: jobs.baseUrl }, nodes, seed, ...extra });
}

function generate(options: Record<string, unknown> = {}, parameters: Record<string, unknown> = {}, extra: Partial<WorkflowNode> = {}): WorkflowNode {
	return { name: 'ImageGen', type: IMAGE_GEN, parameters: { ...GENERATION, ...parameters, options }, ...extra };
}

function getGeneration(generationId: string, options: Record<string, unknown> = {}): WorkflowNode {
	return { name: 'ImageGen', type: IMAGE_GEN, parameters: { operation: 'getGeneration', generationId, options } };
}

const submits = () => jobs.requests.filter((request) => request.method === 'POST' && request.path === GENERATIONS_PATH);
const polls = () => jobs.requests.filter((request) => request.method === 'GET' && request.path.startsWith('/v1/generations/'));
const cancels = () => jobs.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/cancel'));
const gaps = (times: number[]) => times.slice(1).map((time, index) => time - times[index]!);

/** An item as it compares between runs: its JSON without the URL (a new job hosts a new file) and its bytes. */
async function comparable(item: INodeExecutionData | undefined) {
	const { url, fileName, ...json } = item!.json;
	return { json, hosted: typeof url === 'string', fileName: typeof fileName === 'string', bytes: item!.binary ? (await binaryBytes(item!)).toString('base64') : undefined, pairedItem: item!.pairedItem };
}

describe('Wait for Result "wait" (the default)', () => {
	test('the job is submitted with Prefer: respond-async and polled until it succeeds; the item is the synchronous one', async () => {
		jobs.plan({ states: ['queued', 'running', 'running', 'succeeded'], retryAfterSeconds: 0 });
		const result = await run([generate()]);
		expect(result.error()).toBeUndefined();

		const [submit] = submits();
		expect(submit!.headers.prefer).toBe('respond-async');
		expect(submit!.headers['idempotency-key']).toMatch(/^[0-9a-f]{64}$/);
		expect(JSON.parse(submit!.body)).toEqual({ model: 'p-image', prompt: 'A harbour at dawn', aspect_ratio: '1:1', output_format: 'png', response_format: 'url' });
		expect(polls().map((request) => request.path)).toEqual(Array(4).fill('/v1/generations/gen_000001'));
		// Retry-After: 0 from the service sets the pause, not the node's own 1 s.
		expect(Math.max(...gaps([submit!.at, ...polls().map((request) => request.at)]))).toBeLessThan(900);

		const items = result.output('ImageGen');
		expect(items).toHaveLength(1);
		expect(items[0]!.json).toEqual({
			model: 'p-image',
			prompt: 'A harbour at dawn',
			url: `${jobs.origin}/files/gen_000001.png`,
			expiresAt: '2030-01-01T00:00:00.000Z',
			outputFormat: 'png',
			mimeType: 'image/png',
			sizeBytes: expect.any(Number),
			fileName: 'p-image-2025-11-24T16-00-00-000Z.png',
			seed: 42,
			costUsd: 0.005,
			created: '2025-11-24T16:00:00.000Z',
		});
		const served = Buffer.from(await (await fetch(String(items[0]!.json.url))).arrayBuffer());
		expect((await binaryBytes(items[0]!)).equals(served)).toBe(true);
		expect(items[0]!.json.sizeBytes).toBe(served.length);
		expect(items[0]!.pairedItem).toEqual({ item: 0 });
	});

	test('without a Retry-After the pauses start at 1 s and grow', async () => {
		jobs.plan({ states: ['running', 'succeeded'] });
		const result = await run([generate({}, { responseFormat: 'b64_json' })]);
		expect(result.error()).toBeUndefined();
		const [first, second] = gaps([submits()[0]!.at, ...polls().map((request) => request.at)]);
		expect(first).toBeGreaterThanOrEqual(950);
		expect(second).toBeGreaterThanOrEqual(1450);
		expect(second).toBeGreaterThan(first!);
		expect(result.output('ImageGen')[0]!.binary?.data?.mimeType).toBe('image/png');
	});

	test("a job that fails: the item fails with the API's message, pointing at the parameter behind its field", async () => {
		jobs.plan({ states: ['running', 'failed'], retryAfterSeconds: 0 });
		const result = await run([generate()]);
		const error = result.error('ImageGen');
		expect(error?.message).toBe('The model host refused the prompt');
		expect(error?.description).toBe("Check the parameter 'prompt' (generation gen_000001 failed, code content_policy_violation, field 'prompt').");
		expect(result.output('ImageGen')).toEqual([]);
	});

	test('continue on fail: a failed job becomes an error item in place, the other items go on', async () => {
		jobs.plan((request) => (request.prompt === 'refused' ? { states: ['failed'], retryAfterSeconds: 0 } : { states: ['succeeded'], retryAfterSeconds: 0 }));
		const seed = [{ json: { prompt: 'a boat' } }, { json: { prompt: 'refused' } }, { json: { prompt: 'a gull' } }];
		const result = await run([generate({}, { prompt: '={{ $json.prompt }}' }, { onError: 'continueRegularOutput' })], seed);
		expect(result.error()).toBeUndefined();
		const items = result.output('ImageGen');
		expect(items.map((item) => item.json.prompt ?? item.json.error)).toEqual(['a boat', 'The model host refused the prompt', 'a gull']);
		expect(items[1]!.json.description).toMatch(/Check the parameter 'prompt'/);
		expect(items.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
	});

	test('a job canceled through the API while the node waits fails the item saying so', async () => {
		jobs.plan({ states: ['running', 'canceled'], retryAfterSeconds: 0 });
		const result = await run([generate()]);
		expect(result.error('ImageGen')?.message).toBe('Generation gen_000001 ended canceled without an image');
	});

	test('Max Wait reached: the item fails naming Max Wait, and the job is canceled', async () => {
		jobs.plan({ states: ['running'], retryAfterSeconds: 0 });
		const started = Date.now();
		const result = await run([generate({ maxWaitSeconds: 1 })]);
		const elapsed = Date.now() - started;
		const error = result.error('ImageGen');
		expect(error?.message).toBe('Max Wait (Seconds) reached: generation gen_000001 was still running after 1 s; it was canceled');
		expect(error?.description).toMatch(/'Max Wait \(Seconds\)' \(maxWaitSeconds\)/);
		expect(cancels().map((request) => request.path)).toEqual(['/v1/generations/gen_000001/cancel']);
		expect(jobs.job('gen_000001')?.status).toBe('canceled');
		expect(elapsed).toBeGreaterThanOrEqual(1000);
		expect(elapsed).toBeLessThan(4000);
	});

	test('a job that ends while Max Wait runs out is taken from the answer to the cancel', async () => {
		// Each GET sees `running`; the cancel finds the job finished, as a host that ended meanwhile.
		jobs.plan({ states: ['running'], retryAfterSeconds: 0, onCancel: 'succeeded' });
		const result = await run([generate({ maxWaitSeconds: 1 })]);
		expect(result.error()).toBeUndefined();
		expect(cancels()).toHaveLength(1);
		expect(result.output('ImageGen')[0]!.json).toMatchObject({ model: 'p-image', url: `${jobs.origin}/files/gen_000001.png` });
	});

	test("a job that failed while Max Wait runs out fails the item with the API's message", async () => {
		jobs.plan({ states: ['running'], retryAfterSeconds: 0, onCancel: 'failed' });
		const result = await run([generate({ maxWaitSeconds: 1 })]);
		expect(result.error('ImageGen')?.message).toBe('The model host refused the prompt');
	});

	test('Max Wait reached and the cancel refused: the item fails saying the cancel was not confirmed', async () => {
		jobs.plan({ states: ['running'], retryAfterSeconds: 0, onCancel: 'refused' });
		const result = await run([generate({ maxWaitSeconds: 1 })]);
		expect(result.error('ImageGen')?.message).toBe('Max Wait (Seconds) reached: generation gen_000001 was still running after 1 s; a cancel was asked for but not confirmed');
		// Best effort: one cancel, not retried.
		expect(cancels()).toHaveLength(1);
	});
});

describe('a service from before jobs', () => {
	test.each(['wait', 'submit'])('Wait for Result "%s": the 200 answer to the async request is the image; nothing is polled', async (waitForResult) => {
		jobs.knowsJobs(false);
		const result = await run([generate({ waitForResult })]);
		expect(result.error()).toBeUndefined();
		expect(submits()[0]!.headers.prefer).toBe('respond-async');
		expect(polls()).toEqual([]);
		const [item] = result.output('ImageGen');
		expect(item!.json).toMatchObject({ model: 'p-image', prompt: 'A harbour at dawn', outputFormat: 'png', mimeType: 'image/png', seed: 42 });
		expect(item!.binary?.data?.mimeType).toBe('image/png');
	});

	test('a saved workflow of today (no operation, no new options) gives the same items from a service with jobs as from one without', async () => {
		const saved = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', 'imagegen-generate-and-edit.json'), 'utf8')) as { nodes: Array<{ name: string; type: string; parameters: Record<string, unknown> }> }).nodes;
		const outputs = [];
		for (const name of ['Generate', 'Poster']) {
			const node = saved.find((candidate) => candidate.name === name)!;
			expect(node.parameters).not.toHaveProperty('operation');
			expect(node.parameters.options).toEqual({});
			const nodes = [{ name, type: node.type, parameters: structuredClone(node.parameters) }];
			const seed = [{ json: { prompt: 'A lighthouse' } }, { json: { prompt: 'A bicycle' } }];
			for (const knowsJobs of [true, false]) {
				jobs.reset();
				jobs.knowsJobs(knowsJobs);
				jobs.plan({ states: ['running', 'succeeded'], retryAfterSeconds: 0 });
				const result = await run(nodes, seed);
				expect(result.error()).toBeUndefined();
				expect(polls().length > 0).toBe(knowsJobs);
				outputs.push(await Promise.all(result.output(name).map(comparable)));
			}
		}
		const [generateWithJobs, generateWithout, posterWithJobs, posterWithout] = outputs;
		expect(generateWithJobs).toHaveLength(2);
		expect(generateWithJobs).toEqual(generateWithout);
		expect(posterWithJobs).toHaveLength(2);
		expect(posterWithJobs).toEqual(posterWithout);
	});
});

describe('Wait for Result "submit"', () => {
	test('the item is the generation object itself, at once: nothing is polled', async () => {
		jobs.plan({ states: ['running', 'succeeded'] });
		const result = await run([generate({ waitForResult: 'submit' })]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('ImageGen');
		expect(item!.json).toEqual({ object: 'generation', id: 'gen_000001', status: 'queued', model: 'p-image', created: 1_764_000_000, finished_at: null, result: null, error: null });
		expect(item!.binary).toBeUndefined();
		expect(item!.pairedItem).toEqual({ item: 0 });
		expect(jobs.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`POST ${GENERATIONS_PATH}`]);
	});

	test("Webhook URL is sent as webhook_url; {{ $execution.resumeUrl }} resolves to the execution's resume URL", async () => {
		const executionId = 'execution-17';
		const result = await run([generate({ waitForResult: 'submit', webhookUrl: '={{ $execution.resumeUrl }}' })], undefined, { executionId });
		expect(result.error()).toBeUndefined();
		expect(JSON.parse(submits()[0]!.body)).toMatchObject({ model: 'p-image', webhook_url: `http://127.0.0.1/webhook-waiting/${executionId}` });
	});

	test('an empty Webhook URL sends no webhook_url', async () => {
		const result = await run([generate({ waitForResult: 'submit', webhookUrl: '  ' })]);
		expect(result.error()).toBeUndefined();
		expect(JSON.parse(submits()[0]!.body)).not.toHaveProperty('webhook_url');
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
		const result = await run([generate(options)]);
		expect(result.error('ImageGen')?.message).toBe(message);
		expect(jobs.requests).toEqual([]);
	});
});

describe('Get Generation', () => {
	const request = { model: 'p-image', prompt: 'A harbour at dawn', output_format: 'webp', response_format: 'url' };

	test('a generation that succeeded: the image items a synchronous run gives, downloaded as binary', async () => {
		const job = jobs.addJob(request, 'succeeded');
		const result = await run([getGeneration(job.id)]);
		expect(result.error()).toBeUndefined();
		expect(polls().map((poll) => poll.path)).toEqual([`/v1/generations/${job.id}`]);
		const [item] = result.output('ImageGen');
		expect(item!.json).toEqual({
			model: 'p-image',
			url: `${jobs.origin}/files/${job.id}.webp`,
			expiresAt: '2030-01-01T00:00:00.000Z',
			outputFormat: 'webp',
			mimeType: 'image/webp',
			sizeBytes: expect.any(Number),
			fileName: 'p-image-2025-11-24T16-00-00-000Z.webp',
			seed: 42,
			costUsd: 0.005,
			created: '2025-11-24T16:00:00.000Z',
		});
		expect(item!.binary?.data?.mimeType).toBe('image/webp');
		const served = Buffer.from(await (await fetch(String(item!.json.url))).arrayBuffer());
		expect((await binaryBytes(item!)).equals(served)).toBe(true);
	});

	test('the output options apply: Download Image off keeps only the URL; an inline image lands in the named field', async () => {
		const hosted = jobs.addJob(request, 'succeeded');
		const inline = jobs.addJob({ ...request, response_format: 'b64_json' }, 'succeeded');
		const withoutDownload = await run([getGeneration(hosted.id, { download: false })]);
		expect(withoutDownload.output('ImageGen')[0]!.binary).toBeUndefined();
		const intoPicture = await run([getGeneration(inline.id, { binaryPropertyName: 'picture' })]);
		const [item] = intoPicture.output('ImageGen');
		expect(Object.keys(item!.binary!)).toEqual(['picture']);
		expect(item!.json.url).toBeUndefined();
		expect(item!.json.mimeType).toBe('image/webp');
	});

	test.each(['queued', 'running', 'failed', 'canceled'] as const)('a generation that is %s: the generation object, as it is', async (status) => {
		const job = jobs.addJob(request, status);
		const result = await run([getGeneration(job.id)]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('ImageGen');
		expect(item!.json).toEqual(jobs.job(job.id));
		expect(item!.json.status).toBe(status);
		expect(item!.binary).toBeUndefined();
		expect(item!.pairedItem).toEqual({ item: 0 });
	});

	test('an unknown id: 404, an error naming Generation ID', async () => {
		const result = await run([getGeneration('gen_unknown')]);
		const error = result.error('ImageGen');
		expect(error?.message).toBe("No generation 'gen_unknown'");
		expect(error?.description).toBe("Check the parameter 'generationId' (HTTP 404, code generation_not_found).");
		expect(error?.httpCode).toBe('404');
	});

	test('an empty Generation ID fails naming it; nothing is sent', async () => {
		const result = await run([getGeneration('  ')]);
		expect(result.error('ImageGen')?.message).toBe("Parameter 'generationId' of item 0: 'generationId' is empty");
		expect(jobs.requests).toEqual([]);
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
		jobs.plan({ states: ['running', 'succeeded'], retryAfterSeconds: 0 });
		const result = await run([saved(example('imagegen-jobs-wait.json'), 'Generate and wait')]);
		expect(result.error()).toBeUndefined();
		expect(polls()).toHaveLength(2);
		expect(result.output('Generate and wait')[0]!.binary?.data?.mimeType).toBe('image/png');
	});

	test('imagegen-jobs-submit-webhook.json: Submit hands on the job with the resume URL; Get the image fetches it by the submitted id', async () => {
		const workflow = example('imagegen-jobs-submit-webhook.json');
		expect(workflow.nodes.find((node) => node.name === 'Wait for the webhook')).toMatchObject({ type: 'n8n-nodes-base.wait', parameters: { resume: 'webhook', httpMethod: 'POST' } });
		// The Wait node is n8n's own; here its place is taken by Get the image right after Submit.
		const result = await run([saved(workflow, 'Submit'), saved(workflow, 'Get the image')], undefined, { executionId: 'execution-5' });
		expect(result.error()).toBeUndefined();
		expect(JSON.parse(submits()[0]!.body).webhook_url).toBe('http://127.0.0.1/webhook-waiting/execution-5');
		const [submitted] = result.output('Submit');
		const [fetched] = result.output('Get the image');
		expect(submitted!.json).toMatchObject({ object: 'generation', status: 'queued' });
		expect(fetched!.json.url).toBe(`${jobs.origin}/files/${String(submitted!.json.id)}.png`);
		expect(fetched!.binary?.data?.mimeType).toBe('image/png');
	});

	test('imagegen-jobs-get-generation.json: the generation named by the Set node, as an image', async () => {
		const workflow = example('imagegen-jobs-get-generation.json');
		const job = jobs.addJob({ model: 'p-image', prompt: 'x', output_format: 'png', response_format: 'url' }, 'succeeded');
		const result = await run([saved(workflow, 'Get generation')], [{ json: { generationId: job.id } }]);
		expect(result.error()).toBeUndefined();
		expect(result.output('Get generation')[0]!.binary?.data?.mimeType).toBe('image/png');
	});
});
