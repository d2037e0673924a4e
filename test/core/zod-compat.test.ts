/**
 * The built package against the zod that n8n provides at run time. Core imports zod's v3 API
 * through `zod/v3`, which zod 3.25.x and zod 4.x both export; here the built nodes and core are
 * copied next to a `node_modules/zod` that is zod 4 (and, for contrast, 3.25), so nothing else
 * can be resolved in its place, then used for a validation and a node run.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INodeType } from 'n8n-workflow';

import { IMAGE_GEN, runWorkflow } from '../nodes/support/engine';
import { useNodeTestEnvironment } from '../nodes/support/environment';

const ROOT = join(__dirname, '..', '..');
const env = useNodeTestEnvironment();

/** A folder holding the built dist and, as its only modules, n8n-workflow and the given zod package. */
function installBuiltPackage(zodPackage: string): string {
	const root = mkdtempSync(join(tmpdir(), `imagegen-${zodPackage}-`));
	for (const part of ['core', 'nodes', 'credentials']) cpSync(join(ROOT, 'dist', part), join(root, 'dist', part), { recursive: true });
	mkdirSync(join(root, 'node_modules'));
	symlinkSync(realpathSync(join(ROOT, 'node_modules', zodPackage)), join(root, 'node_modules', 'zod'), 'dir');
	symlinkSync(realpathSync(join(ROOT, 'node_modules', 'n8n-workflow')), join(root, 'node_modules', 'n8n-workflow'), 'dir');
	return root;
}

interface ChildVerdict {
	zodVersion: string;
	zodFile: string;
	valid: unknown;
	invalid: { status: number; param: string; code: string; message: string };
}

/** Loads the copied dist/core in a fresh Node process, where nothing but that folder's modules resolve. */
function validateInChild(root: string): ChildVerdict {
	const script = `
		const core = ${JSON.stringify(join(root, 'dist', 'core'))};
		const { parseGenerationRequest } = require(core + '/schemas.js');
		const zodFile = require.resolve('zod/v3', { paths: [core] });
		const zodVersion = require(require.resolve('zod/package.json', { paths: [core] })).version;
		const valid = parseGenerationRequest({ model: 'textimage-v2', prompt: 'a lighthouse', aspect_ratio: '16:9' });
		let invalid;
		try {
			parseGenerationRequest({ model: 'p-image', prompt: 'x', aspect_ratio: '3:1' });
		} catch (error) {
			invalid = { status: error.status, param: error.param, code: error.code, message: error.message };
		}
		process.stdout.write(JSON.stringify({ zodVersion, zodFile, valid, invalid }));
	`;
	return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8', env: { ...process.env, NODE_PATH: '' } }));
}

beforeAll(() => {
	if (!existsSync(join(ROOT, 'dist', 'core', 'schemas.js'))) throw new Error('Run `npm run build` first: this suite loads the built package');
});

describe.each([
	['zod-v4', /^4\./],
	['zod', /^3\.25\./],
])('built nodes with %s as `zod`', (zodPackage, version) => {
	let root: string;
	beforeAll(() => {
		root = installBuiltPackage(zodPackage);
	});

	test('core validates through zod/v3 of that package: defaults applied, a bad field named', () => {
		const verdict = validateInChild(root);
		expect(verdict.zodVersion).toMatch(version);
		expect(verdict.zodFile.startsWith(realpathSync(join(ROOT, 'node_modules', zodPackage)))).toBe(true);
		expect(verdict.valid).toEqual({
			model: 'textimage-v2',
			prompt: 'a lighthouse',
			aspect_ratio: '16:9',
			response_format: 'url',
			output_format: 'png',
			style_type: 'AUTO',
			magic_prompt_option: 'AUTO',
		});
		expect(verdict.invalid).toEqual({
			status: 400,
			param: 'aspect_ratio',
			code: 'invalid_value',
			message: expect.stringMatching(/^'aspect_ratio' must be one of 1:1, .* for model 'p-image'; got '3:1'$/),
		});
	});

	test('the built ImageGen node runs in n8n: a bad parameter is named before sending, a good one generates', async () => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { ImageGen } = require(join(root, 'dist', 'nodes', 'ImageGen', 'ImageGen.node.js')) as { ImageGen: new () => INodeType };
		const run = async (parameters: Record<string, unknown>) =>
			await runWorkflow({
				credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl },
				nodes: [{ name: 'ImageGen', type: IMAGE_GEN, parameters }],
				nodeTypes: { [IMAGE_GEN]: new ImageGen() },
			});

		const refused = await run({ model: 'p-image', prompt: 'x', aspectRatio: '3:1' });
		expect(refused.error('ImageGen')?.message).toMatch(/^Parameter 'aspectRatio' of item 0: 'aspect_ratio' must be one of/);
		expect(env.proxy.requests).toHaveLength(0);

		const generated = await run({ model: 'p-image', prompt: 'A red bicycle', responseFormat: 'b64_json' });
		expect(generated.error()).toBeUndefined();
		expect(generated.output('ImageGen')[0]!.json).toMatchObject({ model: 'p-image', mimeType: 'image/png' });
		// The request, then the polls of the job it created.
		expect(env.proxy.requests.map((request) => request.path)[0]).toBe('/v1/images/generations');
		expect(env.proxy.requests.filter((request) => request.path === '/v1/images/generations')).toHaveLength(1);
	});
});
