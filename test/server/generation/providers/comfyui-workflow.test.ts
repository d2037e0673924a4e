/**
 * ComfyUI workflow files (server/src/generation/providers/comfyui-workflow.ts): read and checked at
 * start-up, each refusal naming the file and the reason; the placeholders bound to typed values.
 * The examples shipped in examples/comfyui/ load through the same loader the provider uses.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseConfig as parseAny } from '../../../../server/src/config/parse-config';
import type { ServiceConfig } from '../../../../server/src/config/service-config';
import { buildProviderTable } from '../../../../server/src/generation/providers';
import { comfyDimensions } from '../../../../server/src/generation/providers/comfyui';
import { bindComfyWorkflow, loadComfyWorkflow } from '../../../../server/src/generation/providers/comfyui-workflow';

const parseConfig = (argv: string[], env: NodeJS.ProcessEnv) => parseAny(argv, env) as ServiceConfig;
const EXAMPLES = resolve(__dirname, '../../../../examples/comfyui');
let dir: string;

beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), 'comfyui-workflow-'));
});

afterAll(async () => {
	await rm(dir, { recursive: true, force: true });
});

const minimal = (overrides: Record<string, unknown> = {}) => ({
	'6': { class_type: 'CLIPTextEncode', inputs: { text: '{{prompt}}', clip: ['4', 1] } },
	'9': { class_type: 'SaveImage', inputs: { filename_prefix: 'x', images: ['8', 0] } },
	...overrides,
});

async function file(name: string, content: unknown): Promise<string> {
	const path = join(dir, name);
	await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
	return path;
}

describe('the examples', () => {
	test.each(['flux-schnell.json', 'sdxl.json'])('%s loads, binds every placeholder typed, and keeps its output node', (name) => {
		const workflow = loadComfyWorkflow(join(EXAMPLES, name));
		expect(workflow.imageInputs).toBe(0);
		expect(workflow.outputNodes).toEqual(['9']);
		const bound = bindComfyWorkflow(workflow, { prompt: 'A lighthouse', negative_prompt: 'blur', seed: 42, width: 1344, height: 768, images: [] });
		expect(JSON.stringify(bound)).not.toContain('{{');
		const sampler = Object.values(bound).find((node) => node.class_type === 'KSampler')!;
		expect(sampler.inputs.seed).toBe(42);
		const latent = Object.values(bound).find((node) => node.class_type.startsWith('Empty'))!;
		expect(latent.inputs).toMatchObject({ width: 1344, height: 768 });
		expect(Object.values(bound).filter((node) => node.class_type === 'CLIPTextEncode').map((node) => node.inputs.text)).toEqual(['A lighthouse', 'blur']);
		// The loaded workflow is not changed by a binding: the next generation binds it afresh.
		expect(JSON.stringify(workflow.nodes)).toContain('{{prompt}}');
	});

	test('flux-schnell runs schnell as it is meant to: 4 steps at cfg 1', () => {
		const sampler = Object.values(loadComfyWorkflow(join(EXAMPLES, 'flux-schnell.json')).nodes).find((node) => node.class_type === 'KSampler')!;
		expect(sampler.inputs).toMatchObject({ steps: 4, cfg: 1 });
	});

	test('only inputs are bound: a title that looks like a placeholder stays as written', async () => {
		const path = await file('titled.json', minimal({ '6': { class_type: 'CLIPTextEncode', inputs: { text: '{{prompt}}' }, _meta: { title: '{{title}}' } } }));
		const bound = bindComfyWorkflow(loadComfyWorkflow(path), { prompt: 'x', negative_prompt: '', seed: 1, width: 64, height: 64, images: [] });
		expect(bound['6']).toEqual({ class_type: 'CLIPTextEncode', inputs: { text: 'x' }, _meta: { title: '{{title}}' } });
	});

	test('sdxl-edit binds one input image for p-image-edit', () => {
		const workflow = loadComfyWorkflow(join(EXAMPLES, 'sdxl-edit.json'));
		expect(workflow.imageInputs).toBe(1);
		const bound = bindComfyWorkflow(workflow, { prompt: 'x', negative_prompt: '', seed: 1, width: 1024, height: 1024, images: ['in/photo.png'] });
		expect(bound['10']!.inputs.image).toBe('in/photo.png');
	});
});

describe('refusals name the file and the reason', () => {
	test('the UI format (nodes and links) is refused, saying to use "Save (API)"', async () => {
		const path = await file('ui.json', { last_node_id: 9, nodes: [{ id: 6, type: 'CLIPTextEncode', widgets_values: ['{{prompt}}'] }], links: [], version: 0.4 });
		expect(() => loadComfyWorkflow(path)).toThrow(`comfyui workflow ${path}: is in ComfyUI's UI format`);
		expect(() => loadComfyWorkflow(path)).toThrow('Save (API)');
	});

	test('without {{prompt}}', async () => {
		const path = await file('no-prompt.json', minimal({ '6': { class_type: 'CLIPTextEncode', inputs: { text: 'a fixed prompt' } } }));
		expect(() => loadComfyWorkflow(path)).toThrow(`comfyui workflow ${path}: has no {{prompt}}`);
	});

	test('an unknown placeholder, named with where it is', async () => {
		const path = await file('unknown.json', minimal({ '3': { class_type: 'KSampler', inputs: { steps: '{{steps}}' } } }));
		expect(() => loadComfyWorkflow(path)).toThrow(`comfyui workflow ${path}: unknown placeholder {{steps}} at node "3" inputs.steps`);
	});

	test('a placeholder inside other text', async () => {
		const path = await file('embedded.json', minimal({ '6': { class_type: 'CLIPTextEncode', inputs: { text: 'a photo of {{prompt}}' } } }));
		expect(() => loadComfyWorkflow(path)).toThrow(/must be the whole string value/);
	});

	test('no SaveImage or PreviewImage node', async () => {
		const path = await file('no-output.json', { '6': { class_type: 'CLIPTextEncode', inputs: { text: '{{prompt}}' } } });
		expect(() => loadComfyWorkflow(path)).toThrow(`comfyui workflow ${path}: has no image output node (SaveImage or PreviewImage)`);
	});

	test('a missing file, and one that is not JSON', async () => {
		const missing = join(dir, 'missing.json');
		expect(() => loadComfyWorkflow(missing)).toThrow(`comfyui workflow ${missing}: cannot be read (no such file)`);
		const broken = await file('broken.json', '{ "6": ');
		expect(() => loadComfyWorkflow(broken)).toThrow(`comfyui workflow ${broken}: is not JSON`);
	});

	test('a node that is not { class_type, inputs }', async () => {
		const path = await file('bad-node.json', minimal({ '7': { inputs: {} } }));
		expect(() => loadComfyWorkflow(path)).toThrow(`comfyui workflow ${path}: node "7" is not { class_type, inputs }`);
	});

	test('{{image_2}} without {{image}}', async () => {
		const path = await file('gap.json', minimal({ '10': { class_type: 'LoadImage', inputs: { image: '{{image_2}}' } } }));
		expect(() => loadComfyWorkflow(path)).toThrow(/uses \{\{image_2\}\} but not \{\{image\}\}/);
	});
});

describe('at start-up', () => {
	const env = { COMFYUI_BASE_URL: 'http://127.0.0.1:8188' };
	const build = (args: string[]) => {
		const config = parseConfig(['--data-dir', dir, ...args], env);
		return buildProviderTable(config);
	};

	test('a model on comfyui without a workflow: an error naming the option and the model', () => {
		expect(() => build(['--providers', 'p-image=comfyui'])).toThrow('providers: p-image=comfyui needs a workflow file: --comfyui-workflow p-image=<file.json>');
	});

	test('without COMFYUI_BASE_URL', () => {
		expect(() => buildProviderTable(parseConfig(['--providers', 'p-image=comfyui', '--comfyui-workflow', `p-image=${join(EXAMPLES, 'sdxl.json')}`], {}))).toThrow('providers: p-image=comfyui needs COMFYUI_BASE_URL');
	});

	test('--comfyui-workflow takes model=file entries, resolved against the working directory, also from IMAGEGEN_COMFYUI_WORKFLOW', () => {
		expect(parseConfig(['--comfyui-workflow', 'p-image=./flux.json,p-image-edit=edit.json'], {}).comfyuiWorkflows).toEqual({ 'p-image': resolve('flux.json'), 'p-image-edit': resolve('edit.json') });
		expect(parseConfig([], { IMAGEGEN_COMFYUI_WORKFLOW: 'textimage-v2=/srv/sdxl.json' }).comfyuiWorkflows).toEqual({ 'textimage-v2': '/srv/sdxl.json' });
		expect(() => parseConfig(['--comfyui-workflow', 'p-imagex=./flux.json'], {})).toThrow(/comfyui-workflow.*unknown model 'p-imagex'/);
	});

	test('a wrong workflow file stops the start, naming it', async () => {
		const path = await file('start-no-prompt.json', minimal({ '6': { class_type: 'CLIPTextEncode', inputs: { text: 'fixed' } } }));
		expect(() => build(['--providers', 'p-image=comfyui', '--comfyui-workflow', `p-image=${path}`])).toThrow(`comfyui workflow ${path}: has no {{prompt}}`);
	});

	test('p-image-edit needs {{image}}; the other models must not have it', () => {
		expect(() => build(['--providers', 'p-image-edit=comfyui', '--comfyui-workflow', `p-image-edit=${join(EXAMPLES, 'sdxl.json')}`])).toThrow(/has no \{\{image\}\}, so p-image-edit's input images would reach no node/);
		expect(() => build(['--providers', 'p-image=comfyui', '--comfyui-workflow', `p-image=${join(EXAMPLES, 'sdxl-edit.json')}`])).toThrow(/uses \{\{image\}\}, but p-image takes no input images/);
	});

	test('the edit workflow sets the host’s limit of input images', () => {
		const table = build(['--providers', 'p-image-edit=comfyui', '--comfyui-workflow', `p-image-edit=${join(EXAMPLES, 'sdxl-edit.json')}`]);
		expect(table['p-image-edit'].limits).toEqual({ maxInputImages: 1 });
	});
});

describe('width and height', () => {
	test.each([
		['1:1', 1024, 1024],
		['16:9', 1344, 768],
		['9:16', 768, 1344],
		['4:3', 1152, 896],
		['3:2', 1280, 832],
	] as const)('%s is %i×%i: multiples of 64 around one megapixel', (ratio, width, height) => {
		expect(comfyDimensions(ratio)).toEqual({ width, height });
	});
});
