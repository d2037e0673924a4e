/**
 * The `comfyui` provider names its prompt itself (ComfyUI's `POST /prompt` takes the client's
 * `prompt_id`, server.py `post_prompt`) and keeps that id before the prompt is sent: a create whose
 * answer is lost is followed by it rather than failed or sent again, a process that stops right
 * after the create is followed by the next one under the same id, and a ComfyUI that names its
 * prompts itself is followed under the id it answered. Against the loopback stand-in
 * (support/fake-comfyui.ts).
 */
import { join, resolve } from 'node:path';
import { parseGenerationRequest } from '../../../../core/schemas';
import { JobTakenOver, type HostJobRef, type SettledRequest } from '../../../../server/src/generation/provider';
import { comfyuiProvider } from '../../../../server/src/generation/providers/comfyui';
import { ImageBytes } from '../../../../server/src/media/image-bytes';
import { startFakeComfyUI, type FakeComfyUI } from '../../support/fake-comfyui';
import { providerContext as context } from '../../support/host-job-contract';
import { eventually } from '../../support/http';
import { makeImage, samePixels } from '../../support/media';
import { FAST_HOSTS } from '../../support/providers';

const SDXL = join(resolve(__dirname, '../../../../examples/comfyui'), 'sdxl.json');

let comfy: FakeComfyUI;
let output: Buffer;

beforeAll(async () => {
	comfy = await startFakeComfyUI();
	output = await makeImage('png', 64, 64);
});

afterAll(async () => {
	await comfy?.close();
});

beforeEach(() => {
	comfy.reset();
	comfy.setImage(output);
});

const request = (): SettledRequest => ({ ...parseGenerationRequest({ model: 'p-image', prompt: 'A lighthouse', aspect_ratio: '1:1', seed: 3 }), aspect_ratio: '1:1' });
const provider = () => comfyuiProvider('p-image', { baseUrl: comfy.origin }, SDXL, FAST_HOSTS);

describe('a create whose answer is lost', () => {
	test('a proxy’s 502 after ComfyUI queued the prompt: followed by its id to the image, never sent again', async () => {
		comfy.loseNextAnswer('POST', '/prompt', 502);
		const told: HostJobRef[] = [];
		const images = await provider().generate(request(), context({ hostJobStarted: async (job) => void told.push(job) }));
		expect(await samePixels((images[0] as ImageBytes).bytes, output)).toBe(true);
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
		expect(told).toEqual([{ provider: 'comfyui', id: comfy.callsTo('POST', '/prompt')[0]!.json.prompt_id }]);
	});

	test('the connection cut after ComfyUI queued the prompt: followed the same way', async () => {
		comfy.loseNextAnswer('POST', '/prompt', 0);
		const images = await provider().generate(request(), context());
		expect(images).toStrictEqual([ImageBytes.owned(expect.any(Buffer))]);
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
	});

	test('a 502 from a proxy ComfyUI never heard of it through: the 502, and the create is not sent again', async () => {
		comfy.script('POST', '/prompt', { status: 502, body: '<html><body><h1>502 Bad Gateway</h1></body></html>', contentType: 'text/html' });
		await expect(provider().generate(request(), context())).rejects.toMatchObject({ status: 502 });
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
		expect(comfy.queue()).toEqual({ running: [], pending: [] });
	});

	test('our time limit passing while the create’s answer is still on its way: the prompt ComfyUI queued is stopped', async () => {
		comfy.setRunMs(60_000);
		comfy.script('POST', '/prompt', { delayMs: 2_000 });
		await expect(provider().generate(request(), context({ signal: AbortSignal.timeout(200) }))).rejects.toBeDefined();
		const id = comfy.callsTo('POST', '/prompt')[0]!.json.prompt_id;
		expect(await eventually(() => comfy.callsTo('POST', '/interrupt').length === 1)).toBe(true);
		expect(comfy.callsTo('POST', '/interrupt')[0]!.json).toEqual({ prompt_id: id });
		expect(comfy.queue()).toEqual({ running: [], pending: [] });
	});
});

describe('a restart', () => {
	test('a run stopped right after its create: the next process follows the prompt by the id kept before sending, nothing queued again', async () => {
		comfy.setRunMs(300);
		const kept: HostJobRef[] = [];
		const controller = new AbortController();
		const first = provider().generate(request(), context({ signal: controller.signal, hostJobStarted: async (job) => void kept.push(job) }));
		expect(await eventually(() => comfy.queue().running.length === 1, 5_000, 10)).toBe(true);
		// This process loses the job (as to a restart); nobody cancels the prompt.
		controller.abort(new JobTakenOver());
		await expect(first).rejects.toBeDefined();
		expect(kept).toHaveLength(1);
		const images = await provider().resume!(kept[0]!, context());
		expect(await samePixels((images[0] as ImageBytes).bytes, output)).toBe(true);
		expect(comfy.callsTo('POST', '/prompt')).toHaveLength(1);
		expect(comfy.callsTo('POST', '/interrupt')).toHaveLength(0);
	});
});

describe('a ComfyUI that names its prompts itself', () => {
	test('the id it answered is told too, and followed', async () => {
		comfy.takesClientPromptId(false);
		const told: HostJobRef[] = [];
		const images = await provider().generate(request(), context({ hostJobStarted: async (job) => void told.push(job) }));
		expect(images).toHaveLength(1);
		const ours = comfy.callsTo('POST', '/prompt')[0]!.json.prompt_id;
		const its = comfy.callsTo('GET', '/history/')[0]!.path.slice('/history/'.length);
		expect(its).not.toBe(ours);
		expect(told).toEqual([
			{ provider: 'comfyui', id: ours },
			{ provider: 'comfyui', id: its },
		]);
	});
});
