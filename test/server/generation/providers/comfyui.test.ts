/**
 * The `comfyui` provider (server/src/generation/providers/comfyui.ts) against a loopback stand-in
 * of ComfyUI's server (support/fake-comfyui.ts): the workflow queued with its placeholders bound,
 * followed by its prompt id, its image fetched from /view; input images uploaded and named; the
 * host's failures as 502s carrying its words, nothing charged; a resumed job never queued again;
 * a cancel that deletes a waiting prompt and interrupts a running one only when it is ours.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseGenerationRequest } from '../../../../core/schemas';
import type { HostJobRef, SettledRequest } from '../../../../server/src/generation/provider';
import { comfyuiProvider } from '../../../../server/src/generation/providers/comfyui';
import { bindComfyWorkflow, loadComfyWorkflow } from '../../../../server/src/generation/providers/comfyui-workflow';
import type { ServiceUnderTest } from '../../../helpers/server';
import { startInProcessServer } from '../../support/app';
import { startFakeComfyUI, type FakeComfyUI } from '../../support/fake-comfyui';
import { call, eventually, postJson } from '../../support/http';
import { makeImage, samePixels } from '../../support/media';
import { FAST_HOSTS } from '../../support/providers';
import { providerContext } from '../../support/host-job-contract';
import { ImageBytes } from '../../../../server/src/media/image-bytes';

const EXAMPLES = resolve(__dirname, '../../../../examples/comfyui');
const SDXL = join(EXAMPLES, 'sdxl.json');
const EDIT = join(EXAMPLES, 'sdxl-edit.json');

let comfy: FakeComfyUI;
let server: ServiceUnderTest;
let env: Record<string, string>;
let output: Buffer;
let dir: string;

beforeAll(async () => {
	comfy = await startFakeComfyUI();
	dir = await mkdtemp(join(tmpdir(), 'comfyui-provider-'));
	output = await makeImage('png', 1344, 768);
	env = { COMFYUI_BASE_URL: comfy.origin };
	server = await startInProcessServer({
		// The host is the subject: marking (which re-encodes what it answers) is the provenance suites'.
		args: ['--generation-timeout-seconds', '3', '--provenance', 'off', '--providers', 'p-image=comfyui,p-image-edit=comfyui', '--comfyui-workflow', `p-image=${SDXL},p-image-edit=${EDIT}`],
		env,
		parts: { providerTiming: FAST_HOSTS },
	});
});

afterAll(async () => {
	await server?.stop({ removeData: true });
	await comfy?.close();
	await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
	comfy.reset();
	comfy.setImage(output);
});

const generate = (body: Record<string, unknown>) => postJson(server, '/v1/images/generations', body);
const imagesCharged = async () => (await call(server, '/v1/usage')).body.total.images as number;

const context = providerContext;

const request = (): SettledRequest => ({ ...parseGenerationRequest({ model: 'p-image', prompt: 'A lighthouse', aspect_ratio: '1:1', seed: 3 }), aspect_ratio: '1:1' });
/** The example workflow bound as the provider would, for prompts queued by "someone else". */
const boundSdxl = () => bindComfyWorkflow(loadComfyWorkflow(SDXL), { prompt: 'theirs', negative_prompt: '', seed: 1, width: 1024, height: 1024, images: [] });

describe('a generation', () => {
	test('p-image: the workflow queued with typed values, polled by prompt id, the output fetched from /view', async () => {
		comfy.setRunMs(150);
		const answer = await generate({ model: 'p-image', prompt: 'A red bicycle', aspect_ratio: '16:9', seed: 42 });
		expect(answer.status).toBe(200);
		const [queued] = comfy.callsTo('POST', '/prompt');
		expect(typeof queued!.json.client_id).toBe('string');
		const nodes = queued!.json.prompt;
		expect(nodes['3'].inputs).toMatchObject({ seed: 42, steps: 25, model: ['4', 0] });
		expect(nodes['5'].inputs).toMatchObject({ width: 1344, height: 768, batch_size: 1 });
		expect(nodes['6'].inputs.text).toBe('A red bicycle');
		// p-image takes no negative prompt: {{negative_prompt}} is empty.
		expect(nodes['7'].inputs.text).toBe('');
		const history = comfy.callsTo('GET', '/history/');
		expect(history.length).toBeGreaterThan(1);
		const promptId = history[0]!.path.slice('/history/'.length);
		expect(history.every((poll) => poll.path === `/history/${promptId}`)).toBe(true);
		const [view] = comfy.callsTo('GET', '/view');
		expect(new URL(view!.path, comfy.origin).searchParams.get('type')).toBe('output');
		expect(answer.body.data[0].seed).toBe(42);
		const hosted = await fetch(answer.body.data[0].url);
		expect(await samePixels(Buffer.from(await hosted.arrayBuffer()), output)).toBe(true);
	});

	test('p-image-edit: the input image uploaded as multipart `image`, the name ComfyUI gave it bound to {{image}}', async () => {
		const input = await makeImage('jpeg', 64, 48);
		const answer = await generate({ model: 'p-image-edit', prompt: 'Make it blue', images: [input.toString('base64')], aspect_ratio: '4:3' });
		expect(answer.status).toBe(200);
		const [upload] = comfy.callsTo('POST', '/upload/image');
		expect(upload!.headers['content-type']).toMatch(/^multipart\/form-data/);
		expect(upload!.body.toString('latin1')).toMatch(/name="image"; filename="imagegen-[0-9a-f-]+-0\.jpeg"/);
		expect(upload!.body.toString('latin1')).toMatch(/name="overwrite"\r\n\r\ntrue\r\n/);
		expect(upload!.body.includes(input)).toBe(true);
		const [name] = comfy.uploads();
		const nodes = comfy.callsTo('POST', '/prompt')[0]!.json.prompt;
		expect(nodes['10'].inputs.image).toBe(name);
		expect(nodes['11'].inputs).toMatchObject({ width: 1152, height: 896 });
	});

	test('p-image-edit with more images than the workflow binds: a 400 before ComfyUI is asked anything', async () => {
		const input = (await makeImage('png', 16, 16)).toString('base64');
		const answer = await generate({ model: 'p-image-edit', prompt: 'x', images: [input, input] });
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ param: 'images', code: 'provider_limit' });
		expect(comfy.calls).toHaveLength(0);
	});
});

describe('what is left on the GPU box', () => {
	test('once its image is downloaded, the prompt’s history entry is deleted (POST /history delete)', async () => {
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		await provider.generate(request(), context());
		const id = comfy.callsTo('POST', '/prompt')[0]!.json.prompt_id;
		const [forget] = comfy.callsTo('POST', '/history');
		expect(forget!.json).toEqual({ delete: [id] });
		expect(forget!.at).toBeGreaterThanOrEqual(comfy.callsTo('GET', '/view')[0]!.at);
		expect(comfy.historyIds()).toEqual([]);
	});

	test('a prompt that failed: its history entry is deleted once its error is read', async () => {
		comfy.failNext({ node_id: '3', node_type: 'KSampler', exception_type: 'torch.OutOfMemoryError', exception_message: 'CUDA out of memory' });
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		await expect(provider.generate(request(), context())).rejects.toMatchObject({ code: 'upstream_failed' });
		expect(comfy.callsTo('POST', '/history')).toHaveLength(1);
		expect(comfy.historyIds()).toEqual([]);
	});
});

describe('the seed', () => {
	test('a workflow without {{seed}}: the answer names no seed, since the request’s never reached the image', async () => {
		const path = join(dir, 'fixed-seed.json');
		const workflow = JSON.parse(JSON.stringify(loadComfyWorkflow(SDXL).nodes));
		workflow['3'].inputs.seed = 7;
		await writeFile(path, JSON.stringify(workflow));
		const fixed = await startInProcessServer({ args: ['--generation-timeout-seconds', '3', '--providers', 'p-image=comfyui', '--comfyui-workflow', `p-image=${path}`], env, parts: { providerTiming: FAST_HOSTS } });
		try {
			const answer = await postJson(fixed, '/v1/images/generations', { model: 'p-image', prompt: 'x', seed: 42 });
			expect(answer.status).toBe(200);
			expect(answer.body.data[0].url).toEqual(expect.any(String));
			expect(answer.body.data[0]).not.toHaveProperty('seed');
			expect(comfy.callsTo('POST', '/prompt')[0]!.json.prompt['3'].inputs.seed).toBe(7);
		} finally {
			await fixed.stop({ removeData: true });
		}
	});

	test('the provider tells seedUnused for a workflow without {{seed}}, and not for one with it', async () => {
		const path = join(dir, 'fixed-seed.json');
		const workflow = JSON.parse(JSON.stringify(loadComfyWorkflow(SDXL).nodes));
		workflow['3'].inputs.seed = 7;
		await writeFile(path, JSON.stringify(workflow));
		const told: string[] = [];
		await comfyuiProvider('p-image', { baseUrl: comfy.origin }, path, FAST_HOSTS).generate(request(), context({ seedUnused: () => void told.push('fixed') }));
		await comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS).generate(request(), context({ seedUnused: () => void told.push('sdxl') }));
		expect(told).toEqual(['fixed']);
	});
});

describe('inputs ComfyUI converts', () => {
	test('a workflow written with "25" for an INT input runs: ComfyUI converts it as validate_inputs does', async () => {
		const path = join(dir, 'string-steps.json');
		const workflow = JSON.parse(JSON.stringify(loadComfyWorkflow(SDXL).nodes));
		workflow['3'].inputs.steps = '25';
		await writeFile(path, JSON.stringify(workflow));
		const images = await comfyuiProvider('p-image', { baseUrl: comfy.origin }, path, FAST_HOSTS).generate(request(), context());
		expect(await samePixels((images[0] as ImageBytes).bytes, output)).toBe(true);
		expect(comfy.callsTo('POST', '/prompt')[0]!.json.prompt['3'].inputs).toMatchObject({ steps: '25', seed: 3 });
	});

	test('a constant that does not convert: 502 naming the node, the input and ComfyUI’s words, not sent again', async () => {
		const path = join(dir, 'bad-steps.json');
		const workflow = JSON.parse(JSON.stringify(loadComfyWorkflow(SDXL).nodes));
		workflow['3'].inputs.steps = 'twenty';
		await writeFile(path, JSON.stringify(workflow));
		const failure = await comfyuiProvider('p-image', { baseUrl: comfy.origin }, path, FAST_HOSTS).generate(request(), context()).catch((error: unknown) => error);
		expect(failure).toMatchObject({ status: 502, code: 'upstream_rejected' });
		expect((failure as Error).message).toContain("node 3 (KSampler): Failed to convert an input value to a INT value: steps, twenty, invalid literal for int() with base 10: 'twenty'");
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
	});
});

describe('the host’s failures', () => {
	test('an execution error: 502 with ComfyUI’s exception and node, nothing charged', async () => {
		const before = await imagesCharged();
		comfy.failNext({ node_id: '3', node_type: 'KSampler', exception_type: 'torch.OutOfMemoryError', exception_message: 'CUDA out of memory. Tried to allocate 2.00 GiB' });
		const answer = await generate({ model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ type: 'upstream_error', code: 'upstream_failed' });
		expect(answer.body.error.message).toBe('The comfyui provider failed: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB at node 3 (KSampler)');
		expect(await imagesCharged()).toBe(before);
	});

	test('a misconfigured proxy answering HTML: 502, nothing charged', async () => {
		const before = await imagesCharged();
		comfy.script('POST', '/prompt', { status: 200, body: '<!doctype html><html><body>Welcome to nginx!</body></html>', contentType: 'text/html' });
		const answer = await generate({ model: 'p-image', prompt: 'x' });
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'upstream_invalid_output' });
		expect(answer.body.error.message).toMatch(/comfyui provider answered something that is not JSON/);
		expect(await imagesCharged()).toBe(before);
	});

	test('/prompt’s 400 with node_errors: 502 naming the node and what is wrong, not sent again', async () => {
		const path = join(dir, 'missing-model.json');
		const workflow = JSON.parse(JSON.stringify(loadComfyWorkflow(SDXL).nodes));
		workflow['4'].inputs.ckpt_name = 'sd3_medium.safetensors';
		await writeFile(path, JSON.stringify(workflow));
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, path, FAST_HOSTS);
		const failure = await provider.generate(request(), context()).catch((error: unknown) => error);
		expect(failure).toMatchObject({ status: 502, code: 'upstream_rejected' });
		expect((failure as Error).message).toMatch(/HTTP 400: Prompt outputs failed validation; node 4 \(CheckpointLoaderSimple\): Value not in list: ckpt_name: 'sd3_medium.safetensors' not in/);
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
	});

	test('a prompt ComfyUI lost (restarted, queue cleared): 502 saying so, not a wait until the time limit', async () => {
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		const started = Date.now();
		const failure = await provider.resume!({ provider: 'comfyui', id: 'c0ffee00-0000-4000-8000-000000000000' }, context()).catch((error: unknown) => error);
		expect(failure).toMatchObject({ status: 502, code: 'upstream_failed' });
		expect((failure as Error).message).toMatch(/no longer knows prompt c0ffee00-.*neither queued, running nor in its history/);
		expect(Date.now() - started).toBeLessThan(2_000);
	});
});

describe('the prompt as a host job', () => {
	test('the prompt id is chosen here and told to hostJobStarted, awaited, before POST /prompt sends it under that id', async () => {
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		const told: Array<{ job: HostJobRef; promptsBefore: number }> = [];
		const images = await provider.generate(request(), context({ hostJobStarted: async (job) => void told.push({ job, promptsBefore: comfy.callsTo('POST', '/prompt').length }) }));
		const [queued] = comfy.callsTo('POST', '/prompt');
		const id = queued!.json.prompt_id;
		expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(told).toEqual([{ job: { provider: 'comfyui', id }, promptsBefore: 0 }]);
		expect(comfy.callsTo('GET', '/history/').every((poll) => poll.path === `/history/${id}`)).toBe(true);
		expect(provider.hasJobIds).toBe(true);
		expect(images).toStrictEqual([ImageBytes.owned(expect.any(Buffer))]);
	});

	test('a job not kept (hostJobStarted fails): nothing is sent to ComfyUI', async () => {
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		const failure = await provider.generate(request(), context({ hostJobStarted: async () => Promise.reject(new Error('database gone')) })).catch((error: unknown) => error);
		expect(failure).toMatchObject({ message: 'database gone' });
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(0);
		expect(comfy.queue()).toEqual({ running: [], pending: [] });
	});

	test('resume follows the prompt by its id: never POST /prompt', async () => {
		comfy.setRunMs(150);
		const id = await comfy.queueDirectly(boundSdxl(), 'an-earlier-run');
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		const images = await provider.resume!({ provider: 'comfyui', id }, context());
		expect(images).toHaveLength(1);
		expect(await samePixels((images[0] as ImageBytes).bytes, output)).toBe(true);
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
		expect(comfy.callsTo('GET', '/history/').every((poll) => poll.path === `/history/${id}`)).toBe(true);
	});

	test('cancel of a waiting prompt deletes it from the queue and interrupts nothing', async () => {
		comfy.setRunMs(60_000);
		const theirs = await comfy.queueDirectly(boundSdxl());
		const ours = await comfy.queueDirectly(boundSdxl(), 'us');
		await comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS).cancel!({ provider: 'comfyui', id: ours });
		expect(comfy.callsTo('POST', '/queue').map((each) => each.json)).toEqual([{ delete: [ours] }]);
		expect(comfy.callsTo('POST', '/interrupt')).toHaveLength(0);
		expect(comfy.queue()).toEqual({ running: [theirs], pending: [] });
	});

	test('cancel of a prompt that starts running between the look at the queue and the delete: it is interrupted', async () => {
		comfy.setRunMs(60_000);
		const ours = await comfy.queueDirectly(boundSdxl(), 'us');
		// The first look still sees it waiting; by the delete, it runs.
		comfy.script('GET', '/queue', { status: 200, body: { queue_running: [], queue_pending: [[0, ours, {}, { client_id: 'us' }, ['9']]] } });
		await comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS).cancel!({ provider: 'comfyui', id: ours });
		expect(comfy.callsTo('POST', '/queue').map((each) => each.json)).toEqual([{ delete: [ours] }]);
		expect(comfy.callsTo('POST', '/interrupt').map((each) => each.json)).toEqual([{ prompt_id: ours }]);
		expect(comfy.queue()).toEqual({ running: [], pending: [] });
	});

	test('cancel of our running prompt interrupts it (naming it, for ComfyUI versions that check)', async () => {
		comfy.setRunMs(60_000);
		const ours = await comfy.queueDirectly(boundSdxl(), 'us');
		await comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS).cancel!({ provider: 'comfyui', id: ours });
		expect(comfy.callsTo('POST', '/interrupt').map((each) => each.json)).toEqual([{ prompt_id: ours }]);
		expect(comfy.queue().running).toEqual([]);
		const history = (await (await fetch(`${comfy.origin}/history/${ours}`)).json()) as any;
		expect(history[ours].status.messages.map((message: [string]) => message[0])).toContain('execution_interrupted');
	});

	test('cancel while someone else’s prompt runs, ours already ended: nothing is interrupted', async () => {
		const ours = await comfy.queueDirectly(boundSdxl(), 'us');
		expect(await eventually(() => comfy.queue().running.length === 0)).toBe(true);
		comfy.setRunMs(60_000);
		const theirs = await comfy.queueDirectly(boundSdxl());
		await comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS).cancel!({ provider: 'comfyui', id: ours });
		expect(comfy.callsTo('POST', '/interrupt')).toHaveLength(0);
		expect(comfy.callsTo('POST', '/queue')).toHaveLength(0);
		expect(comfy.queue().running).toEqual([theirs]);
	});

	test('our time limit passing while the prompt runs: it is interrupted', async () => {
		comfy.setRunMs(60_000);
		const provider = comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);
		const failure = await provider.generate(request(), context({ signal: AbortSignal.timeout(300) })).catch((error: unknown) => error);
		expect(failure).toMatchObject({ name: expect.stringMatching(/^(AbortError|TimeoutError)$/) });
		expect(await eventually(() => comfy.callsTo('POST', '/interrupt').length === 1)).toBe(true);
		expect(comfy.queue().running).toEqual([]);
	});

	test('through the service: a prompt that outlasts the time limit is a 504, and ComfyUI stops drawing it', async () => {
		comfy.setRunMs(60_000);
		// A service of its own, whose time limit is reached in half a second.
		const hurried = await startInProcessServer({ args: ['--generation-timeout-seconds', '0.5', '--providers', 'p-image=comfyui', '--comfyui-workflow', `p-image=${SDXL}`], env, parts: { providerTiming: FAST_HOSTS } });
		try {
			const answer = await postJson(hurried, '/v1/images/generations', { model: 'p-image', prompt: 'x' });
			expect(answer.status).toBe(504);
			expect(answer.body.error.code).toBe('generation_timeout');
			expect(await eventually(() => comfy.callsTo('POST', '/interrupt').length === 1)).toBe(true);
		} finally {
			await hurried.stop({ removeData: true });
		}
	});
});
