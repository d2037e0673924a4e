/**
 * The official `openai` SDK, unchanged, against the service in process over loopback: its images
 * calls for dall-e-3 and gpt-image-1 (aliases of p-image) answer as OpenAI's would.
 */
import OpenAI from 'openai';
import sharp from 'sharp';
import { startInProcessServer, type InProcessServer } from '../support/app';

let server: InProcessServer;
let client: OpenAI;
beforeAll(async () => {
	server = await startInProcessServer({ args: ['--log-level', 'silent', '--model-aliases', 'dall-e-3=p-image,gpt-image-1=p-image'] });
	client = new OpenAI({ apiKey: server.apiKey, baseURL: server.baseUrl, maxRetries: 0 });
});
afterAll(() => server.stop({ removeData: true }));

const prompt = 'a lighthouse at dusk';

test("dall-e-3 as OpenAI's own example calls it: one image at a URL", async () => {
	const answer = await client.images.generate({ model: 'dall-e-3', prompt, n: 1, size: '1024x1024' });
	expect(answer.data).toHaveLength(1);
	const picture = await fetch(answer.data![0]!.url!);
	expect(picture.status).toBe(200);
	const { width, height } = await sharp(Buffer.from(await picture.arrayBuffer())).metadata();
	expect(width).toBe(height);
});

test('dall-e-3 with its quality, style, user and a wide size, inline', async () => {
	const answer = await client.images.generate({ model: 'dall-e-3', prompt, size: '1792x1024', quality: 'hd', style: 'natural', user: 'user-42', response_format: 'b64_json' });
	const { width, height } = await sharp(Buffer.from(answer.data![0]!.b64_json!, 'base64')).metadata();
	expect(width! / height!).toBeCloseTo(16 / 9, 1);
});

test('gpt-image-1 answers b64_json without being asked, n images each charged', async () => {
	const answer = await client.images.generate({ model: 'gpt-image-1', prompt, n: 2, size: '1024x1536', quality: 'high', background: 'opaque', moderation: 'low', output_format: 'png' });
	expect(answer.data).toHaveLength(2);
	for (const image of answer.data!) {
		const { width, height, format } = await sharp(Buffer.from(image.b64_json!, 'base64')).metadata();
		expect(format).toBe('png');
		expect(width! / height!).toBeCloseTo(2 / 3, 1);
	}
	expect(answer.usage).toMatchObject({ images: 2 });
});

test("a field the service refuses comes back as the SDK's BadRequestError naming it", async () => {
	const refused = client.images.generate({ model: 'dall-e-3', prompt, n: 11 });
	await expect(refused).rejects.toBeInstanceOf(OpenAI.BadRequestError);
	await expect(refused).rejects.toMatchObject({ status: 400, param: 'n' });
});
