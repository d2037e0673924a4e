/**
 * The ComfyUI stand-in (support/fake-comfyui.ts) answers as ComfyUI's own server.py and
 * execution.py do, not as the provider would like: constants converted as `validate_inputs`
 * converts them and refused in its words only when they do not convert, the client's `prompt_id`
 * taken, one prompt running at a time, `/interrupt` before and since it took a prompt id, and
 * `POST /history { delete }`. The provider's own suite (comfyui.test.ts) relies on each of these.
 */
import { join, resolve } from 'node:path';
import { bindComfyWorkflow, loadComfyWorkflow } from '../../../../server/src/generation/providers/comfyui-workflow';
import { startFakeComfyUI, type FakeComfyUI } from '../../support/fake-comfyui';
import { eventually } from '../../support/http';

const SDXL = join(resolve(__dirname, '../../../../examples/comfyui'), 'sdxl.json');

let comfy: FakeComfyUI;

beforeAll(async () => {
	comfy = await startFakeComfyUI();
});

afterAll(async () => {
	await comfy?.close();
});

beforeEach(() => {
	comfy.reset();
});

const workflow = () => bindComfyWorkflow(loadComfyWorkflow(SDXL), { prompt: 'a lighthouse', negative_prompt: '', seed: 1, width: 1024, height: 1024, images: [] });

async function queue(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
	const response = await fetch(`${comfy.origin}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
	return { status: response.status, body: await response.json() };
}

const post = (path: string, body: unknown) => fetch(`${comfy.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const historyOf = async (id: string) => ((await (await fetch(`${comfy.origin}/history/${id}`)).json()) as Record<string, any>)[id];

describe('validation as execution.py validate_inputs does it', () => {
	test('"42" for an INT input and "7.5" for a FLOAT one are converted, queued and run with the numbers', async () => {
		const nodes = workflow();
		Object.assign(nodes['3']!.inputs, { seed: '42', steps: ' 25 ', cfg: '7.5' });
		Object.assign(nodes['5']!.inputs, { width: '1024' });
		const queued = await queue({ prompt: nodes });
		expect(queued.status).toBe(200);
		expect(await eventually(async () => (await historyOf(queued.body.prompt_id)) !== undefined)).toBe(true);
		const ran = (await historyOf(queued.body.prompt_id)).prompt[2];
		expect(ran['3'].inputs).toMatchObject({ seed: 42, steps: 25, cfg: 7.5 });
		expect(ran['5'].inputs.width).toBe(1024);
	});

	test('a value that does not convert: 400 with ComfyUI’s node_errors (invalid_input_type, the input, the value, Python’s words)', async () => {
		const nodes = workflow();
		nodes['3']!.inputs.seed = '{{seed}}';
		const refused = await queue({ prompt: nodes });
		expect(refused.status).toBe(400);
		expect(refused.body.error).toMatchObject({ type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation' });
		expect(refused.body.node_errors['3']).toMatchObject({
			class_type: 'KSampler',
			dependent_outputs: ['9'],
			errors: [{ type: 'invalid_input_type', message: 'Failed to convert an input value to a INT value', details: "seed, {{seed}}, invalid literal for int() with base 10: '{{seed}}'", extra_info: { input_name: 'seed' } }],
		});
		expect(comfy.queue()).toEqual({ running: [], pending: [] });
	});

	test('a value out of the node’s bounds, a model file ComfyUI does not have, an input image never uploaded', async () => {
		const nodes = workflow();
		nodes['5']!.inputs.width = 8;
		nodes['4']!.inputs.ckpt_name = 'sd3_medium.safetensors';
		nodes['10'] = { class_type: 'LoadImage', inputs: { image: 'never-uploaded.png' } };
		const refused = await queue({ prompt: nodes });
		expect(refused.status).toBe(400);
		expect(refused.body.node_errors['5'].errors).toEqual([expect.objectContaining({ type: 'value_smaller_than_min', message: 'Value 8 smaller than min of 16', details: 'width' })]);
		expect(refused.body.node_errors['4'].errors).toEqual([expect.objectContaining({ type: 'value_not_in_list', message: 'Value not in list' })]);
		expect(refused.body.node_errors['10'].errors).toEqual([expect.objectContaining({ type: 'custom_validation_failed', details: 'image - Invalid image file: never-uploaded.png' })]);
	});
});

describe('the queue', () => {
	test('the client’s prompt_id is the prompt’s id; the same id sent twice is queued twice, as ComfyUI does not look', async () => {
		comfy.setRunMs(60_000);
		const id = 'b1946ac9-2b4d-4bd7-9d44-6c8a1e000001';
		expect((await queue({ prompt: workflow(), prompt_id: id })).body).toMatchObject({ prompt_id: id, node_errors: {} });
		expect((await queue({ prompt: workflow(), prompt_id: id })).body.prompt_id).toBe(id);
		expect(comfy.queue()).toEqual({ running: [id], pending: [id] });
	});

	test('/interrupt as before PR #9607: whatever runs is stopped, the prompt named or not', async () => {
		comfy.setRunMs(60_000);
		const theirs = await comfy.queueDirectly(workflow());
		await post('/interrupt', { prompt_id: 'not-the-running-one' });
		expect(comfy.queue().running).toEqual([]);
		expect((await historyOf(theirs)).status.messages.map((message: [string]) => message[0])).toContain('execution_interrupted');
	});

	test('/interrupt since PR #9607: a prompt named is stopped only when it is the one running; none named stops whatever runs', async () => {
		comfy.setRunMs(60_000);
		comfy.interruptNamesPrompt(true);
		const theirs = await comfy.queueDirectly(workflow());
		await post('/interrupt', { prompt_id: 'not-the-running-one' });
		expect(comfy.queue().running).toEqual([theirs]);
		await post('/interrupt', { prompt_id: theirs });
		expect(comfy.queue().running).toEqual([]);
	});

	test('POST /history { delete } forgets a prompt; the output files it wrote stay', async () => {
		const id = await comfy.queueDirectly(workflow());
		expect(await eventually(() => comfy.historyIds().includes(id))).toBe(true);
		expect((await post('/history', { delete: [id] })).status).toBe(200);
		expect(await historyOf(id)).toBeUndefined();
		expect(comfy.outputFiles()).toHaveLength(1);
	});
});
