/**
 * What the ImageGen node sends so that a repeat never pays twice: an `Idempotency-Key` that stays
 * the same for every attempt at one item (the node's own retries and n8n's "Retry On Fail") and
 * differs for every other item and execution. Checked at the recording proxy in front of the real
 * server; what the service does with the key is in hosting.test.ts.
 */
import type { IExecuteFunctions, INodeExecutionData, INodeType } from 'n8n-workflow';

import { makeImage } from '../server/support/media';
import { IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type RunOptions, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();

const generate = (parameters: Record<string, unknown>, extra: Partial<WorkflowNode> = {}): WorkflowNode => ({ name: 'ImageGen', type: IMAGE_GEN, parameters, ...extra });

function run(nodes: WorkflowNode[], seed?: SeedItem[], extra: Partial<RunOptions> = {}) {
	return runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes, seed, ...extra });
}

const generations = () => env.proxy.requests.filter((request) => request.path === '/v1/images/generations');
const keysOf = (requests: { idempotencyKey?: string }[]) => requests.map((request) => request.idempotencyKey);
const UNAVAILABLE = { status: 503, body: { error: { message: 'busy', type: 'server_error', param: null, code: 'unavailable' } }, headers: { 'retry-after': '0' } };
const REFUSED = { status: 400, body: { error: { message: 'refused once', type: 'invalid_request_error', param: null, code: 'invalid_value' } } };
const P_IMAGE = { model: 'p-image', prompt: 'A red bicycle', responseFormat: 'b64_json' };

test('every generation request carries a key of 64 hex characters, the same on each of the node’s own retries', async () => {
	env.proxy.failNext(UNAVAILABLE, 2);
	const result = await run([generate(P_IMAGE)]);
	expect(result.error()).toBeUndefined();
	const keys = keysOf(generations());
	expect(keys).toHaveLength(3);
	expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
	expect(new Set(keys).size).toBe(1);
});

test('n8n’s Retry On Fail runs the node again in the same execution: the same key', async () => {
	env.proxy.failNext(REFUSED);
	const result = await run([generate(P_IMAGE, { retry: { maxTries: 2 } })], undefined, { executionId: 'execution-retry' });
	expect(result.error()).toBeUndefined();
	const requests = generations();
	// Accepted as a job (the node submits with Prefer: respond-async and waits for it).
	expect(requests.map((request) => request.response?.status)).toEqual([400, 202]);
	expect(new Set(keysOf(requests)).size).toBe(1);
});

test('a different key for every item, node and execution', async () => {
	const items = [{ json: { prompt: 'one' } }, { json: { prompt: 'two' } }, { json: { prompt: 'three' } }];
	const parameters = { ...P_IMAGE, prompt: '={{ $json.prompt }}' };
	await run([generate(parameters)], items, { executionId: 'execution-a' });
	const first = keysOf(generations());
	env.proxy.reset();
	await run([generate(parameters)], items, { executionId: 'execution-b' });
	const second = keysOf(generations());
	env.proxy.reset();
	await run([generate(parameters, { name: 'Another ImageGen' })], items, { executionId: 'execution-a' });
	const otherNode = keysOf(generations());
	expect(new Set([...first, ...second, ...otherNode]).size).toBe(9);
});

test('the same execution, node and item give the same key again (it depends on nothing else)', async () => {
	await run([generate(P_IMAGE)], undefined, { executionId: 'execution-same' });
	await run([generate({ ...P_IMAGE, prompt: 'Another prompt' })], undefined, { executionId: 'execution-same' });
	const keys = keysOf(generations());
	expect(keys).toHaveLength(2);
	expect(keys[0]).toBe(keys[1]);
});

test('an image uploaded for the request carries its own key, stable across Retry On Fail, with the same body bytes', async () => {
	const big = await makeImage('png', 300, 200);
	env.proxy.failNext(REFUSED);
	const parameters = { model: 'p-image-edit', prompt: 'Use it', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] }, responseFormat: 'b64_json', options: { inlineLimitMb: 0 } };
	const result = await run([generate(parameters, { retry: { maxTries: 2 } })], [{ binary: { data: { bytes: big, fileName: 'big.png', mimeType: 'image/png' } } }], { executionId: 'execution-upload' });
	expect(result.error()).toBeUndefined();
	const uploads = env.proxy.requests.filter((request) => request.path === '/v1/uploads');
	// The first upload met the refusal; the repeat is the same request: same key, same multipart boundary and size.
	expect(uploads).toHaveLength(2);
	expect(uploads[0]!.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
	expect(uploads[1]!.idempotencyKey).toBe(uploads[0]!.idempotencyKey);
	expect(uploads[1]!.contentType).toBe(uploads[0]!.contentType);
	expect(uploads[1]!.bodyBytes).toBe(uploads[0]!.bodyBytes);
	expect(generations()[0]!.idempotencyKey).not.toBe(uploads[0]!.idempotencyKey);
});

test('a request found invalid after its image was uploaded is not sent, and the upload is deleted again', async () => {
	const big = await makeImage('png', 300, 200);
	const parameters = { model: 'p-image-edit', prompt: 'x', aspectRatio: '5:1', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] }, options: { inlineLimitMb: 0 } };
	const result = await run([generate(parameters)], [{ binary: { data: { bytes: big, fileName: 'big.png', mimeType: 'image/png' } } }]);
	expect(result.error('ImageGen')?.message).toMatch(/^Parameter 'aspectRatio' of item 0/);
	const [upload, removal, ...rest] = env.proxy.requests;
	expect(rest).toHaveLength(0);
	expect(upload!.path).toBe('/v1/uploads');
	expect(removal!.method).toBe('DELETE');
	expect(removal!.path).toMatch(/^\/v1\/files\/[A-Za-z0-9_-]+$/);
	expect(generations()).toHaveLength(0);
});

/** Sends its input back on output 0 (round again) `rounds - 1` times, then on output 1 (done). */
function loopNodeType(rounds: number): INodeType {
	let round = 0;
	return {
		description: {
			displayName: 'Loop',
			name: 'loop',
			group: ['transform'],
			version: 1,
			description: 'Runs the nodes before it again',
			defaults: { name: 'Loop' },
			inputs: ['main'],
			outputs: ['main', 'main'],
			properties: [],
		},
		async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
			round++;
			const items = this.getInputData();
			return round < rounds ? [items, []] : [[], items];
		},
	};
}

test('a node inside a loop: a new key for every round, while Retry On Fail keeps the key of its round', async () => {
	env.proxy.failNext(REFUSED);
	const result = await run(
		[generate(P_IMAGE, { retry: { maxTries: 2 }, alsoAfter: { node: 'Loop', output: 0 } }), { name: 'Loop', type: 'test.loop' }],
		undefined,
		{ executionId: 'execution-loop', nodeTypes: { 'test.loop': loopNodeType(3) } },
	);
	expect(result.error()).toBeUndefined();
	expect(result.run.data.resultData.runData.ImageGen).toHaveLength(3);
	const requests = generations();
	expect(requests.map((request) => request.response?.status)).toEqual([400, 202, 202, 202]);
	const keys = keysOf(requests);
	expect(keys[1]).toBe(keys[0]);
	expect(new Set(keys).size).toBe(3);
});

describe('the Upload node', () => {
	const uploadNode = (parameters: Record<string, unknown>): WorkflowNode => ({ name: 'Upload', type: IMAGE_GEN_UPLOAD, parameters });
	const uploads = () => env.proxy.requests.filter((request) => request.path === '/v1/uploads');

	test.each([
		['a binary file', { inputType: 'binary', binaryPropertyName: 'data' }],
		['base64', { inputType: 'base64' }],
	])('retries of %s whose answer was lost carry the same key, and the service stores the file once', async (_name, input) => {
		const png = await makeImage('png', 120, 80);
		const parameters = { operation: 'upload', mediaType: 'auto', ...input, ...(input.inputType === 'base64' ? { base64: png.toString('base64') } : {}) };
		env.proxy.loseNextAnswers(1);
		const result = await run([uploadNode(parameters)], [{ binary: { data: { bytes: png, fileName: 'a.png', mimeType: 'image/png' } } }], { executionId: `execution-upload-${input.inputType}` });
		expect(result.error()).toBeUndefined();
		const sent = uploads();
		expect(sent).toHaveLength(2);
		expect(sent[0]!.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
		expect(sent[1]!.idempotencyKey).toBe(sent[0]!.idempotencyKey);
		// The retry is answered with the first upload's stored answer: one file.
		expect(sent[1]!.response?.headers['idempotent-replayed']).toBe('true');
	});

	test('a different key for every item and execution', async () => {
		const png = (await makeImage('png', 32, 32)).toString('base64');
		const parameters = { operation: 'upload', inputType: 'base64', mediaType: 'auto', base64: png };
		const items = [{ json: {} }, { json: {} }];
		await run([uploadNode(parameters)], items, { executionId: 'execution-upload-a' });
		await run([uploadNode(parameters)], items, { executionId: 'execution-upload-b' });
		expect(new Set(keysOf(uploads())).size).toBe(4);
	});
});
