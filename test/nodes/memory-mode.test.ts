/**
 * n8n's in-memory binary mode (`default`): binaries travel base64 inside the items instead of a
 * store. The generate → edit → upload chain must work the same way there.
 */
import type { ServiceUnderTest } from '../helpers/server';
import { startInProcessServer } from '../server/support/app';
import { IMAGE_GEN, IMAGE_GEN_UPLOAD, initBinaryData, runWorkflow } from './support/engine';

let server: ServiceUnderTest;

beforeAll(async () => {
	server = await startInProcessServer();
	await initBinaryData('default');
});

afterAll(async () => {
	await server?.stop({ removeData: true });
});

test('generate → edit (binary input) → upload (binary input) with binaries kept in memory', async () => {
	const result = await runWorkflow({
		credentials: { apiKey: server.apiKey, baseUrl: server.baseUrl },
		binaryMode: 'default',
		nodes: [
			{ name: 'Generate', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: 'A lighthouse', aspectRatio: '16:9', responseFormat: 'url' } },
			{ name: 'Edit', type: IMAGE_GEN, parameters: { model: 'p-image-edit', prompt: 'At night', images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] }, responseFormat: 'b64_json' } },
			{ name: 'Upload', type: IMAGE_GEN_UPLOAD, parameters: { inputType: 'binary', binaryPropertyName: 'data', mediaType: 'image', outputFormat: 'webp' } },
		],
	});
	expect(result.error()).toBeUndefined();
	const generated = result.output('Generate')[0]!;
	expect(generated.binary!.data!.id).toBeUndefined();
	expect(generated.binary!.data!.data.length).toBeGreaterThan(1000);
	const [uploaded] = result.output('Upload');
	const response = await fetch(String(uploaded!.json.imageUrl));
	expect(response.headers.get('content-type')).toBe('image/webp');
});

test('p-video: the MP4, streamed from the service, lands base64 in the item as n8n keeps binaries in this mode', async () => {
	const result = await runWorkflow({
		credentials: { apiKey: server.apiKey, baseUrl: server.baseUrl },
		binaryMode: 'default',
		nodes: [
			{ name: 'Still', type: IMAGE_GEN, parameters: { model: 'p-image', prompt: 'A lighthouse', aspectRatio: '16:9', responseFormat: 'b64_json' } },
			{ name: 'Video', type: IMAGE_GEN, parameters: { model: 'p-video', prompt: 'The lighthouse at night', duration: 1, draft: true, firstFrame: 'binary' } },
		],
	});
	expect(result.error()).toBeUndefined();
	const [item] = result.output('Video');
	expect(item!.binary!.data!.id).toBeUndefined();
	const bytes = Buffer.from(item!.binary!.data!.data, 'base64');
	expect(bytes.length).toBe(item!.json.sizeBytes);
	expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
	const hosted = await fetch(String(item!.json.url));
	expect(Buffer.from(await hosted.arrayBuffer()).equals(bytes)).toBe(true);
});
