/**
 * The nodes against another OpenAI-compatible service that answers only the plain shapes: a
 * generation with nothing but `data[].url` or `data[].b64_json`, an upload with nothing but
 * `imageUrl` or `videoUrl`. Every other field of our own answers (usage, model, expires_at, seed,
 * expiresAt, id, …) is optional: the output items carry what was answered and leave out the rest.
 * An answer without an image or a URL is a clear error, not a TypeError.
 */
import type { INodeExecutionData } from 'n8n-workflow';
import { ImageGen } from '../../nodes/ImageGen/ImageGen.node';
import { ImageGenUpload } from '../../nodes/ImageGenUpload/ImageGenUpload.node';
import { makeImage, makeMp4 } from '../server/support/media';
import { startBareService, type BareService } from './support/bare-service';
import { binaryBytes, IMAGE_GEN, IMAGE_GEN_UPLOAD, runWorkflow, type WorkflowNode } from './support/engine';

const IMAGE_GEN_TOOL = `${IMAGE_GEN}Tool`;
const IMAGE_GEN_UPLOAD_TOOL = `${IMAGE_GEN_UPLOAD}Tool`;
const API_KEY = 'bare-service-key';

let bare: BareService;
let png: Buffer;

beforeAll(async () => {
	[bare, png] = await Promise.all([startBareService(), makeImage('png', 64, 48)]);
});
afterAll(async () => await bare?.close());
beforeEach(() => bare.requests.splice(0));

function run(nodes: WorkflowNode[]) {
	return runWorkflow({
		credentials: { apiKey: API_KEY, baseUrl: bare.baseUrl },
		nodes,
		nodeTypes: { [IMAGE_GEN_TOOL]: new ImageGen(), [IMAGE_GEN_UPLOAD_TOOL]: new ImageGenUpload() },
	});
}

const generation = (responseFormat: 'url' | 'b64_json') => ({ model: 'p-image', prompt: 'A kite over dunes', aspectRatio: '1:1', outputFormat: 'png', responseFormat });
const fields = (item: INodeExecutionData | undefined) => Object.keys(item!.json).sort();

describe('ImageGen', () => {
	test('an answer with only created and data[].url: the image is downloaded, absent fields are left out', async () => {
		const url = bare.host('/images/kite.png', png, 'image/png');
		bare.answerGenerations(() => ({ created: 1_700_000_000, data: [{ url }] }));
		const result = await run([{ name: 'Generate', type: IMAGE_GEN, parameters: generation('url') }]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Generate');
		expect(item!.json).toMatchObject({ model: 'p-image', prompt: 'A kite over dunes', url, outputFormat: 'png', mimeType: 'image/png', sizeBytes: png.length, created: '2023-11-14T22:13:20.000Z' });
		expect(fields(item)).toEqual(['created', 'fileName', 'mimeType', 'model', 'outputFormat', 'prompt', 'sizeBytes', 'url']);
		expect((await binaryBytes(item!)).equals(png)).toBe(true);
		const [sent] = bare.requests.filter((request) => request.path === '/v1/images/generations');
		expect(sent!.authorization).toBe(`Bearer ${API_KEY}`);
		expect(JSON.parse(sent!.body)).toMatchObject({ model: 'p-image', prompt: 'A kite over dunes', response_format: 'url' });
	});

	test('an answer with only data[].b64_json: the image lands as binary', async () => {
		bare.answerGenerations(() => ({ data: [{ b64_json: png.toString('base64') }] }));
		const result = await run([{ name: 'Generate', type: IMAGE_GEN, parameters: generation('b64_json') }]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Generate');
		expect(fields(item)).toEqual(['created', 'fileName', 'mimeType', 'model', 'outputFormat', 'prompt', 'sizeBytes']);
		expect((await binaryBytes(item!)).equals(png)).toBe(true);
	});

	test('as a tool, an answer with only data[].url gives the model the URL and what is known', async () => {
		const url = bare.host('/images/tool.png', png, 'image/png');
		bare.answerGenerations(() => ({ data: [{ url }] }));
		const result = await run([{ name: 'Generate', type: IMAGE_GEN_TOOL, parameters: generation('b64_json') }]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Generate');
		expect(item!.binary).toBeUndefined();
		expect(item!.json).toEqual({ model: 'p-image', url, mimeType: 'image/png' });
		expect(fields(item)).toEqual(['mimeType', 'model', 'url']);
	});

	test.each([
		['no data', { created: 1 }],
		['an empty data list', { created: 1, data: [] }],
		['an image with neither url nor b64_json', { created: 1, data: [{ revised_prompt: 'kite' }] }],
	])('an answer with %s is an error that says what is missing', async (_case, answer) => {
		bare.answerGenerations(() => answer);
		for (const type of [IMAGE_GEN, IMAGE_GEN_TOOL]) {
			const error = (await run([{ name: 'Generate', type, parameters: generation('url') }])).error();
			expect(error?.message).toMatch(/answered without an image: a generation answer needs data\[\]\.url or data\[\]\.b64_json/);
		}
	});
});

describe('ImageGen Upload', () => {
	test('an answer with only imageUrl: the item carries the URL and the kind, nothing made up', async () => {
		const input = bare.host('/inputs/photo.png', png, 'image/png');
		const hosted = `${bare.origin}/cdn/photo-1.png`;
		bare.answerUploads(() => ({ imageUrl: hosted }));
		for (const type of [IMAGE_GEN_UPLOAD, IMAGE_GEN_UPLOAD_TOOL]) {
			const result = await run([{ name: 'Host', type, parameters: { inputType: 'url', url: input, mediaType: 'auto', outputFormat: 'original' } }]);
			expect(result.error()).toBeUndefined();
			const [item] = result.output('Host');
			expect(item!.json).toEqual({ imageUrl: hosted, url: hosted, mediaType: 'image' });
			expect(fields(item)).toEqual(['imageUrl', 'mediaType', 'url']);
		}
	});

	test('an answer with only videoUrl of a /files/ URL: the id is taken from it', async () => {
		const hosted = `${bare.origin}/files/clip-42.mp4`;
		bare.answerUploads(() => ({ videoUrl: hosted }));
		const result = await run([{ name: 'Host', type: IMAGE_GEN_UPLOAD, parameters: { inputType: 'base64', base64: makeMp4().toString('base64'), mediaType: 'video' } }]);
		expect(result.error()).toBeUndefined();
		const [item] = result.output('Host');
		expect(item!.json).toEqual({ videoUrl: hosted, url: hosted, mediaType: 'video', id: 'clip-42' });
		expect(fields(item)).toEqual(['id', 'mediaType', 'url', 'videoUrl']);
	});

	test('an answer with neither imageUrl nor videoUrl is an error that says so', async () => {
		bare.answerUploads(() => ({ url: `${bare.origin}/cdn/x.png` }));
		const input = bare.host('/inputs/other.png', png, 'image/png');
		const error = (await run([{ name: 'Host', type: IMAGE_GEN_UPLOAD, parameters: { inputType: 'url', url: input, mediaType: 'image', outputFormat: 'original' } }])).error();
		expect(error?.message).toMatch(/answered without a URL: an upload answer needs imageUrl or videoUrl/);
	});
});
