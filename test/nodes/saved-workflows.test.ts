/**
 * Workflows saved before the upload operations, the lifetime, Fit For and the seed existed keep
 * working unchanged: the ImageGen nodes of the README's examples run through n8n-core with their
 * parameters exactly as saved (typeVersion 1, no `operation`). The example's other nodes (Set,
 * Split Out, HTTP Request) are n8n's own; their output is handed in as the Seed's items.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { makeMp4 } from '../server/support/media';
import { IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();

interface SavedNode {
	name: string;
	type: string;
	typeVersion: number;
	parameters: Record<string, unknown>;
}

function savedNodes(file: string): Map<string, SavedNode> {
	const workflow = JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', file), 'utf8')) as { nodes: SavedNode[] };
	return new Map(workflow.nodes.map((node) => [node.name, node]));
}

/** The saved node as the engine runs it: same type, same parameters, nothing added. */
function asSaved(node: SavedNode | undefined, after?: string): WorkflowNode {
	if (!node) throw new Error('the example no longer holds this node');
	expect(node.typeVersion).toBe(1);
	expect(node.parameters).not.toHaveProperty('operation');
	return { name: node.name, type: node.type, parameters: structuredClone(node.parameters), ...(after ? { after } : {}) };
}

const run = (nodes: WorkflowNode[], seed?: SeedItem[]) => runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes, seed });

async function expectServed(url: unknown, mimeType: string): Promise<void> {
	expect(String(url).startsWith(`${env.server.origin}/files/`)).toBe(true);
	const response = await fetch(String(url));
	expect(response.status).toBe(200);
	expect(response.headers.get('content-type')).toBe(mimeType);
}

describe('examples/imagegen-generate-and-edit.json', () => {
	const nodes = savedNodes('imagegen-generate-and-edit.json');

	test('Generate → Edit: one generated and one edited image per prompt, hosted and downloaded', async () => {
		expect([nodes.get('Generate')?.type, nodes.get('Edit')?.type]).toEqual([IMAGE_GEN, IMAGE_GEN]);
		const prompts = JSON.parse(String(nodes.get('Prompts')!.parameters.jsonOutput)) as { prompts: Array<{ prompt: string }> };
		const seed = prompts.prompts.map((json) => ({ json }));
		const result = await run([asSaved(nodes.get('Generate')), asSaved(nodes.get('Edit'))], seed);
		expect(result.error()).toBeUndefined();
		const generated = result.output('Generate');
		const edited = result.output('Edit');
		expect(generated.map((item) => item.json.prompt)).toEqual(prompts.prompts.map((entry) => entry.prompt));
		expect(edited).toHaveLength(prompts.prompts.length);
		for (const item of generated) {
			expect(item.json).toMatchObject({ model: 'p-image', outputFormat: 'png', mimeType: 'image/png', url: expect.any(String), expiresAt: expect.any(String) });
			expect(item.binary?.data?.mimeType).toBe('image/png');
			await expectServed(item.json.url, 'image/png');
		}
		for (const item of edited) {
			expect(item.json).toMatchObject({ model: 'p-image-edit', outputFormat: 'jpeg', mimeType: 'image/jpeg' });
			await expectServed(item.json.url, 'image/jpeg');
		}
	});

	test('Poster: textimage-v2 with its own options, as binary data', async () => {
		const result = await run([asSaved(nodes.get('Poster'))]);
		expect(result.error()).toBeUndefined();
		const [poster] = result.output('Poster');
		expect(poster!.json).toMatchObject({ model: 'textimage-v2', outputFormat: 'webp', mimeType: 'image/webp' });
		expect(poster!.json.url).toBeUndefined();
		expect(poster!.binary?.data?.mimeType).toBe('image/webp');
	});
});

describe('examples/imagegen-upload-video.json', () => {
	const nodes = savedNodes('imagegen-upload-video.json');

	test('Host video: the downloaded video is uploaded as it is (the saved workflow has no operation)', async () => {
		expect(nodes.get('Host video')?.type).toBe(IMAGE_GEN_UPLOAD);
		const video = makeMp4(6000);
		const result = await run([asSaved(nodes.get('Host video'))], [{ binary: { data: { bytes: video, fileName: 'clip.mp4', mimeType: 'video/mp4' } } }]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Host video');
		expect(item!.json).toMatchObject({ videoUrl: expect.stringMatching(/\.mp4$/), mediaType: 'video', expiresAt: expect.any(String) });
		expect(item!.json.url).toBe(item!.json.videoUrl);
		await expectServed(item!.json.url, 'video/mp4');
	});

	test('Host image as JPG: the saved base64 image converted to JPEG', async () => {
		const result = await run([asSaved(nodes.get('Host image as JPG'))]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Host image as JPG');
		expect(item!.json).toMatchObject({ imageUrl: expect.stringMatching(/\.jpg$/), mediaType: 'image' });
		await expectServed(item!.json.url, 'image/jpeg');
	});
});
