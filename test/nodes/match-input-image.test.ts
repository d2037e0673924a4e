/**
 * The ImageGen node's p-image-edit keeps the input's shape unless a ratio is named: Match Input
 * Image is its default, so a node that names no ratio sends `match_input_image`, and one saved with
 * a ratio keeps sending it.
 */
import sharp from 'sharp';

import { binaryBytes, IMAGE_GEN, runWorkflow, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();

const run = (nodes: WorkflowNode[]) => runWorkflow({ credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl }, nodes });
const IMAGES = { image: [{ source: 'binary', binaryPropertyName: 'data' }] };
/** `aspect_ratio` of each generation body as sent (the proxy keeps its first 64 KB, where the fields before the images are). */
const sentRatios = () => env.proxy.requests.filter((request) => request.path === '/v1/images/generations').map((request) => /"aspect_ratio":"([^"]*)"/.exec(String(request.json))?.[1]);

async function sizeOf(bytes: Buffer): Promise<[number, number]> {
	const { width, height } = await sharp(bytes).metadata();
	return [width!, height!];
}

test('an edit that names no ratio keeps the 16:9 of the image it edits', async () => {
	const result = await run([
		{ name: 'First', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: 'A bicycle', aspectRatio: '16:9', responseFormat: 'b64_json' } },
		{ name: 'Edit', type: IMAGE_GEN, parameters: { model: 'p-image-edit', prompt: 'Paint it blue', images: IMAGES, responseFormat: 'b64_json' }, after: 'First' },
	]);
	expect(result.error()).toBeUndefined();
	expect(sentRatios()).toEqual(['16:9', 'match_input_image']);
	expect(await sizeOf(await binaryBytes(result.output('Edit')[0]!))).toEqual([1024, 576]);
});

test('an edit saved with a named ratio sends that ratio', async () => {
	const result = await run([
		{ name: 'First', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: 'A bicycle', aspectRatio: '16:9', responseFormat: 'b64_json' } },
		{ name: 'Edit', type: IMAGE_GEN, parameters: { model: 'p-image-edit', prompt: 'Square it', images: IMAGES, aspectRatio: '1:1', responseFormat: 'b64_json' }, after: 'First' },
	]);
	expect(result.error()).toBeUndefined();
	expect(sentRatios()).toEqual(['16:9', '1:1']);
	expect(await sizeOf(await binaryBytes(result.output('Edit')[0]!))).toEqual([1024, 1024]);
});
