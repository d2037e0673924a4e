/**
 * The nodes run as an AI Agent's tool: n8n runs them under their type name plus `Tool`, and the
 * agent hands only the items' JSON to its model. ImageGen then asks for a hosted URL whatever
 * Response Format says, downloads nothing, and answers compact JSON; ImageGen Upload answers its
 * hosted file's JSON as always, without binary data.
 */
import { MODELS } from '../../core/models';
import { makeImage } from '../server/support/media';
import { ImageGen } from '../../nodes/ImageGen/ImageGen.node';
import { ImageGenUpload } from '../../nodes/ImageGenUpload/ImageGenUpload.node';
import { IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const env = useNodeTestEnvironment();
const IMAGE_GEN_TOOL = `${IMAGE_GEN}Tool`;
const IMAGE_GEN_UPLOAD_TOOL = `${IMAGE_GEN_UPLOAD}Tool`;

function run(nodes: WorkflowNode[]) {
	return runWorkflow({
		credentials: { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl },
		nodes,
		// What n8n does for a community node with usableAsTool: the same node under the Tool name.
		nodeTypes: { [IMAGE_GEN_TOOL]: new ImageGen(), [IMAGE_GEN_UPLOAD_TOOL]: new ImageGenUpload() },
	});
}

const generation = { model: 'textimage-v2', prompt: 'A lighthouse at dusk', aspectRatio: '16:9', outputFormat: 'webp', responseFormat: 'b64_json', options: { seed: 7 } };

test('ImageGen as a tool answers url, expiresAt, seed, costUsd and mimeType, with no binary and no base64', async () => {
	const result = await run([{ name: 'Generate', type: IMAGE_GEN_TOOL, parameters: generation }]);
	expect(result.error()).toBeUndefined();
	const items = result.output('Generate');
	expect(items).toHaveLength(1);
	const [item] = items;
	expect(item!.binary).toBeUndefined();
	expect(item!.json).toEqual({
		model: 'textimage-v2',
		url: expect.stringMatching(new RegExp(`^${env.server.origin}/files/.+\\.webp$`)),
		expiresAt: expect.any(String),
		mimeType: 'image/webp',
		seed: 7,
		provenance: { c2pa: 'signed', digital_source_type: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia' },
		costUsd: MODELS['textimage-v2'].priceUsd,
	});
	expect(JSON.stringify(item!.json).length).toBeLessThan(400);
	const image = await fetch(String(item!.json.url));
	expect(image.headers.get('content-type')).toBe('image/webp');
	expect(env.proxy.requests.filter((request) => request.path === '/v1/images/generations')).toHaveLength(1);
});

test('the same parameters outside tool mode still answer binary as configured (the mode is what differs)', async () => {
	const result = await run([{ name: 'Generate', type: IMAGE_GEN, parameters: generation }]);
	const [item] = result.output('Generate');
	expect(item!.json.url).toBeUndefined();
	expect(item!.binary!.data).toBeDefined();
});

test('ImageGen Upload as a tool answers the hosted file as JSON', async () => {
	const png = env.media.put('/tool-input.png', await makeImage('png', 64, 48), { 'content-type': 'image/png' });
	const result = await run([{ name: 'Host', type: IMAGE_GEN_UPLOAD_TOOL, parameters: { inputType: 'url', url: png, mediaType: 'auto', outputFormat: 'original' } }]);
	expect(result.error()).toBeUndefined();
	const [item] = result.output('Host');
	expect(item!.binary).toBeUndefined();
	expect(item!.json).toMatchObject({ url: expect.stringMatching(/\/files\//), mediaType: 'image', expiresAt: expect.any(String), mimeType: 'image/png' });
});
