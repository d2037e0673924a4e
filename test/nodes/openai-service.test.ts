/**
 * The nodes with a credential whose Service Type is OpenAI-Compatible, run by n8n-core's engine
 * against a stand-in of OpenAI's images API that refuses what OpenAI refuses (an unknown field,
 * `response_format` for gpt-image, a size the model does not take): only the fields that API takes
 * are sent, no job is asked for, and `url` and `b64_json` answers both become the usual items.
 * Credentials saved before the option existed still talk to an ImageGen service as before.
 */
import type { ImageApiHost } from '../server/support/image-api-hosts';
import { startOpenAiHost } from '../server/support/image-api-hosts';
import { ImageGen } from '../../nodes/ImageGen/ImageGen.node';
import { makeImage } from '../server/support/media';
import { binaryBytes, IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type SeedItem, type WorkflowNode } from './support/engine';
import { useNodeTestEnvironment } from './support/environment';

const API_KEY = 'sk-test-openai-key';
const env = useNodeTestEnvironment();
let openai: ImageApiHost;
let png: Buffer;

beforeAll(async () => {
	[openai, png] = await Promise.all([startOpenAiHost({ apiKey: API_KEY }), makeImage('png', 64, 48)]);
	openai.image = png;
});
afterAll(async () => await openai?.close());
beforeEach(() => openai.reset());

function run(nodes: WorkflowNode[], seed?: SeedItem[], apiKey = API_KEY) {
	return runWorkflow({ credentials: { apiKey, baseUrl: `${openai.origin}/v1`, serviceType: 'openai' }, nodes, seed });
}

const generate = (parameters: Record<string, unknown>): WorkflowNode => ({ name: 'ImageGen', type: IMAGE_GEN, parameters });
/** What the node sent to the images API (the file downloads excluded). */
const sent = () => openai.calls.filter((call) => call.method === 'POST');

/** The stand-in refuses as OpenAI does (400 unknown_parameter, a size or response_format it does not take): it refused nothing. */
function expectAccepted(result: Awaited<ReturnType<typeof run>>) {
	expect(result.error()).toBeUndefined();
	expect(sent().length).toBeGreaterThan(0);
}

describe('ImageGen, generations', () => {
	test('gpt-image-1: only model, prompt, n, size and output_format; the b64_json answer lands as binary', async () => {
		const result = await run([
			generate({
				model: 'textimage-v2',
				prompt: 'A lighthouse at dusk',
				negativePrompt: 'blur',
				styleType: 'ANIME',
				magicPromptOption: 'OFF',
				aspectRatio: '16:9',
				outputFormat: 'png',
				responseFormat: 'url',
				options: { openAiModel: 'gpt-image-1', seed: 7, webhookUrl: 'https://example.com/hook', waitForResult: 'wait' },
			}),
		]);
		expectAccepted(result);
		const [call] = sent();
		expect(call!.path).toBe('/v1/images/generations');
		expect(call!.json).toEqual({ model: 'gpt-image-1', prompt: 'A lighthouse at dusk', n: 1, size: '1536x1024', output_format: 'png' });
		expect(call!.headers.prefer).toBeUndefined();
		expect(call!.headers.authorization).toBe(`Bearer ${API_KEY}`);
		const [item] = result.output('ImageGen');
		expect(item!.json).toMatchObject({ model: 'gpt-image-1', prompt: 'A lighthouse at dusk', outputFormat: 'png', mimeType: 'image/png', sizeBytes: png.length });
		expect(item!.json.url).toBeUndefined();
		expect((await binaryBytes(item!)).equals(png)).toBe(true);
		expect(item!.pairedItem).toEqual({ item: 0 });
	});

	test('dall-e-3: response_format as chosen, its sizes; the url answer is downloaded into the item', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'A tall tower', aspectRatio: '9:16', outputFormat: 'jpeg', responseFormat: 'url', options: { openAiModel: 'dall-e-3' } })]);
		expectAccepted(result);
		expect(sent()[0]!.json).toEqual({ model: 'dall-e-3', prompt: 'A tall tower', n: 1, size: '1024x1792', response_format: 'url' });
		const [item] = result.output('ImageGen');
		// dall-e is told no format: the item says what the bytes are.
		expect(item!.json).toMatchObject({ model: 'dall-e-3', url: `${openai.origin}/files/image.png`, mimeType: 'image/png' });
		expect(openai.calls.filter((call) => call.method === 'GET' && call.path === '/files/image.png')).toHaveLength(1);
		expect((await binaryBytes(item!)).equals(png)).toBe(true);
	});

	test('without a Model ID the node asks for gpt-image-1', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'x', responseFormat: 'b64_json' })]);
		expectAccepted(result);
		expect(sent()[0]!.json).toEqual({ model: 'gpt-image-1', prompt: 'x', n: 1, size: '1024x1024', output_format: 'png' });
	});

	test.each(['gpt-image-1', 'dall-e-3', 'dall-e-2'])('%s: no ratio or format the node offers makes the API refuse the request', async (openAiModel) => {
		for (const aspectRatio of ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '16:10', '10:16', '3:1', '1:3']) {
			for (const responseFormat of ['url', 'b64_json']) {
				openai.reset();
				const result = await run([generate({ model: 'textimage-v2', prompt: 'x', aspectRatio, outputFormat: 'webp', responseFormat, options: { openAiModel, download: false } })]);
				expectAccepted(result);
			}
		}
	});
});

describe('ImageGen, edits (p-image-edit)', () => {
	test('gpt-image-1: two images as image[] in one multipart request, of the types their bytes have', async () => {
		const jpeg = await makeImage('jpeg', 40, 40);
		const result = await run(
			[
				generate({
					model: 'p-image-edit',
					prompt: 'Put them side by side',
					images: { image: [{ source: 'binary', binaryPropertyName: 'photo' }, { source: 'base64', base64: `data:image/jpeg;base64,${jpeg.toString('base64')}` }] },
					outputFormat: 'webp',
					options: { openAiModel: 'gpt-image-1' },
				}),
			],
			[{ json: {}, binary: { photo: { bytes: png, fileName: 'photo.png', mimeType: 'image/png' } } }],
		);
		expectAccepted(result);
		const [call] = sent();
		expect(call!.path).toBe('/v1/images/edits');
		// Match Input Image (the default) sends no size: the host keeps the input's shape (gpt-image's `auto`).
		expect(call!.form).toEqual([
			['model', 'gpt-image-1'],
			['prompt', 'Put them side by side'],
			['n', '1'],
			['output_format', 'webp'],
			['image[]', { type: 'image/png', size: png.length }],
			['image[]', { type: 'image/jpeg', size: jpeg.length }],
		]);
		expect((await binaryBytes(result.output('ImageGen')[0]!)).equals(png)).toBe(true);
	});

	test('dall-e-2: one image as image, a URL fetched by the node, a square size', async () => {
		const url = env.media.put('/edit-input.png', png, { 'content-type': 'image/png' });
		const result = await run([generate({ model: 'p-image-edit', prompt: 'Add a hat', images: { image: [{ source: 'url', url }] }, aspectRatio: '16:9', responseFormat: 'b64_json', options: { openAiModel: 'dall-e-2' } })]);
		expectAccepted(result);
		expect(sent()[0]!.form).toEqual([
			['model', 'dall-e-2'],
			['prompt', 'Add a hat'],
			['n', '1'],
			['size', '1024x1024'],
			['response_format', 'b64_json'],
			['image', { type: 'image/png', size: png.length }],
		]);
	});

	test('an input that is not an image fails before any request, naming the parameter', async () => {
		const result = await run([generate({ model: 'p-image-edit', prompt: 'x', images: { image: [{ source: 'base64', base64: Buffer.from('plain text').toString('base64') }] } })]);
		expect(result.error('ImageGen')?.message).toMatch(/^Parameter 'images' \(image 1\) of item 0: .* is not an image/);
		expect(sent()).toHaveLength(0);
	});
});

describe('refusals and failures', () => {
	test("OpenAI's own message surfaces, mapped to the parameter behind its field", async () => {
		openai.next({ status: 400, body: { error: { message: "Invalid value: '1536x1024'. Supported values are: '1024x1024'.", type: 'invalid_request_error', param: 'size', code: 'invalid_value' } } });
		const result = await run([generate({ model: 'p-image', prompt: 'x', aspectRatio: '16:9', options: { openAiModel: 'my-gateway-model' } })]);
		const error = result.error('ImageGen');
		expect(error?.name).toBe('NodeApiError');
		expect(error?.httpCode).toBe('400');
		expect(error?.message).toBe("Invalid value: '1536x1024'. Supported values are: '1024x1024'.");
		expect(error?.description).toMatch(/Check the parameter 'aspectRatio' \(HTTP 400, code invalid_value, field 'size'\)/);
	});

	test('a wrong key: OpenAI says so, once', async () => {
		const result = await run([generate({ model: 'p-image', prompt: 'x' })], undefined, 'sk-wrong');
		expect(result.error('ImageGen')?.message).toMatch(/^Incorrect API key provided/);
		expect(sent()).toHaveLength(1);
	});

	test('a 5xx is not repeated (the image may have been made and charged), a 429 is', async () => {
		openai.next({ status: 500, body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } });
		const failed = await run([generate({ model: 'p-image', prompt: 'x' })]);
		expect(failed.error('ImageGen')?.message).toBe('The server had an error while processing your request.');
		expect(sent()).toHaveLength(1);

		openai.reset();
		openai.next({ status: 429, body: { error: { message: 'Rate limit reached for images.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }, headers: { 'retry-after': '0' } });
		expectAccepted(await run([generate({ model: 'p-image', prompt: 'x' })]));
		expect(sent()).toHaveLength(2);
	});

	test('Get Generation: a clear error, nothing sent', async () => {
		const result = await run([generate({ operation: 'getGeneration', generationId: 'gen_0123' })]);
		expect(result.error('ImageGen')?.message).toMatch(/^Get Generation needs an ImageGen service: an OpenAI-compatible images API has no generations to fetch/);
		expect(openai.calls).toHaveLength(0);
	});
});

describe("as an AI agent's tool", () => {
	const IMAGE_GEN_TOOL = `${IMAGE_GEN}Tool`;
	const runAsTool = (openAiModel: string) =>
		runWorkflow({
			credentials: { apiKey: API_KEY, baseUrl: `${openai.origin}/v1`, serviceType: 'openai' },
			nodes: [{ name: 'Tool', type: IMAGE_GEN_TOOL, parameters: { model: 'p-image', prompt: 'x', responseFormat: 'b64_json', options: { openAiModel } } }],
			nodeTypes: { [IMAGE_GEN_TOOL]: new ImageGen() },
		});

	test('dall-e-3: asked for a URL, which is the answer; nothing downloaded', async () => {
		const result = await runAsTool('dall-e-3');
		expectAccepted(result);
		expect(sent()[0]!.json).toMatchObject({ response_format: 'url' });
		expect(result.output('Tool')[0]!.json).toEqual({ model: 'dall-e-3', url: `${openai.origin}/files/image.png` });
		expect(openai.calls.filter((call) => call.method === 'GET')).toHaveLength(0);
	});

	test('gpt-image-1, which answers only inline: a clear error instead of an item without the image', async () => {
		const result = await runAsTool('gpt-image-1');
		expect(result.error('Tool')?.message).toBe('gpt-image-1 answered the image inline (b64_json), but as a tool the node hands the agent a URL');
	});
});

describe('ImageGen Upload', () => {
	test.each([
		['upload', { inputType: 'binary', binaryPropertyName: 'data' }, /^Uploading a file needs an ImageGen service: an OpenAI-compatible images API has no upload API/],
		['getInfo', { operation: 'getInfo', fileId: 'abc' }, /^Get Info needs an ImageGen service/],
		['delete', { operation: 'delete', fileId: 'abc' }, /^Delete needs an ImageGen service/],
		['verify', { operation: 'verify', inputType: 'binary', binaryPropertyName: 'data' }, /^Verify needs an ImageGen service: an OpenAI-compatible images API has no provenance check/],
	])('%s: a clear error naming the service type, nothing sent', async (_operation, parameters, message) => {
		const result = await run([{ name: 'Upload', type: IMAGE_GEN_UPLOAD, parameters }], [{ json: {}, binary: { data: { bytes: png, fileName: 'a.png', mimeType: 'image/png' } } }]);
		const error = result.error('Upload');
		expect(error?.name).toBe('NodeOperationError');
		expect(error?.message).toMatch(message);
		expect(error?.description).toMatch(/Service Type is OpenAI-Compatible/);
		expect(openai.calls).toHaveLength(0);
	});
});

describe('a credential saved before Service Type existed', () => {
	test('{ apiKey, baseUrl } alone: the ImageGen request as before, answered by the service', async () => {
		const saved = { apiKey: env.server.apiKey, baseUrl: env.proxy.baseUrl };
		const result = await runWorkflow({
			credentials: saved,
			nodes: [generate({ model: 'p-image', prompt: 'A kite', aspectRatio: '16:9', responseFormat: 'b64_json', options: { seed: 42, openAiModel: 'dall-e-3' } })],
		});
		expect(result.error()).toBeUndefined();
		const [request] = env.proxy.requests.filter((recorded) => recorded.path === '/v1/images/generations');
		expect(JSON.parse(request!.json!)).toMatchObject({ model: 'p-image', prompt: 'A kite', aspect_ratio: '16:9', response_format: 'b64_json', seed: 42 });
		expect(result.output('ImageGen')[0]!.json).toMatchObject({ model: 'p-image', seed: 42 });
		expect(openai.calls).toHaveLength(0);
	});
});
