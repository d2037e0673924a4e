/**
 * n8n's own OpenAI node ("Generate an Image", @n8n/n8n-nodes-langchain.openAi) in a real n8n, with
 * an OpenAI credential whose base URL is the service's /v1 and the service's model aliases: the node
 * as n8n ships it gets its images from us: dall-e-3 as URLs, gpt-image-1 as binary data, dall-e-2
 * two at a time, and version 2.2 with the model typed in by ID.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { demo, INSTALL_TIMEOUT_MS, openSession, outputOf, type ExecutionRun, type Session } from './support/n8n';
import { download } from '../server/support/http';

const WORKFLOW_ID = 'imageGenOpenAiNode1';
const CREDENTIAL = { id: 'imageGenOpenAi1', name: 'imagegen as OpenAI' };

let session: Session;
let run: ExecutionRun;
let raw: string;

/** The model picked from the node's list (the newest version), or typed in by ID on an older version. */
function openAiImageNode(name: string, model: string, options: Record<string, unknown>, position: [number, number], picked: { mode: 'list' | 'id'; typeVersion: number } = { mode: 'list', typeVersion: 2.3 }) {
	return demo.node(
		name,
		'@n8n/n8n-nodes-langchain.openAi',
		{ resource: 'image', operation: 'generate', modelId: { __rl: true, mode: picked.mode, value: model }, prompt: 'A red bicycle against a white wall', options },
		position,
		{ typeVersion: picked.typeVersion, credentials: { openAiApi: CREDENTIAL } },
	);
}

beforeAll(async () => {
	session = await openSession('openai-node', ['--model-aliases', 'dall-e-2=p-image,dall-e-3=p-image,gpt-image-1=p-image']);
	const credentials = join(session.userFolder, 'openai-credentials.json');
	writeFileSync(credentials, JSON.stringify([{ ...CREDENTIAL, type: 'openAiApi', data: { apiKey: session.server.apiKey, url: session.server.baseUrl } }]));
	await session.cli(['import:credentials', `--input=${credentials}`]);
	await session.importWorkflows([
		demo.workflow({
			id: WORKFLOW_ID,
			name: "n8n's OpenAI node against imagegen",
			nodes: [
				demo.trigger(),
				openAiImageNode('dall-e-3', 'dall-e-3', { size: '1792x1024', dalleQuality: 'hd', style: 'natural', returnImageUrls: true }, [240, 0]),
				openAiImageNode('gpt-image-1', 'gpt-image-1', { size: '1024x1536', quality: 'high' }, [240, 200]),
				// The node offers "Number of Images" for dall-e-2 only.
				openAiImageNode('dall-e-2', 'dall-e-2', { n: 2, size: '512x512', returnImageUrls: true }, [240, 400]),
				openAiImageNode('by ID, v2.2', 'gpt-image-1', {}, [240, 600], { mode: 'id', typeVersion: 2.2 }),
			],
			connections: demo.connect([
				['Start', 'dall-e-3'],
				['Start', 'gpt-image-1'],
				['Start', 'dall-e-2'],
				['Start', 'by ID, v2.2'],
			]),
		}),
	]);
	const result = await session.execute(WORKFLOW_ID);
	run = result.run;
	raw = result.result.stdout + result.result.stderr;
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	await session?.close();
});

test('dall-e-3 with URLs: one item whose url is a hosted 16:9 image', async () => {
	const items = outputOf(run, 'dall-e-3', raw);
	expect(items).toHaveLength(1);
	const url = items[0]!.json.url as string;
	expect(url.startsWith(session.server.origin)).toBe(true);
	const picture = Buffer.from(await (await fetch(url)).arrayBuffer());
	const { width, height } = await sharp(picture).metadata();
	expect(width! / height!).toBeCloseTo(16 / 9, 1);
});

test('gpt-image-1, sent without response_format: one item with a binary PNG, read from b64_json', () => {
	const items = outputOf(run, 'gpt-image-1', raw);
	expect(items).toHaveLength(1);
	expect(items[0]!.binary?.data).toMatchObject({ mimeType: 'image/png' });
});

test('version 2.2 with the model typed in by ID (gpt-image-1): one item with a binary PNG', () => {
	const items = outputOf(run, 'by ID, v2.2', raw);
	expect(items).toHaveLength(1);
	expect(items[0]!.binary?.data).toMatchObject({ mimeType: 'image/png' });
});

test('dall-e-2 with two images: two items with distinct hosted URLs', async () => {
	const items = outputOf(run, 'dall-e-2', raw);
	expect(items).toHaveLength(2);
	const urls = items.map((item) => item.json.url as string);
	expect(new Set(urls).size).toBe(2);
	for (const url of urls) expect((await download(url)).status).toBe(200);
});
