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
