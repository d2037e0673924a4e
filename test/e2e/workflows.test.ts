/**
 * The package inside a real n8n: installed from its npm pack tarball, credential and workflows
 * imported with n8n's CLI, run with `n8n execute`, run data checked, and every hosted URL fetched
 * back from the server. All scenarios are branches of one workflow, so n8n starts only a few times.
 */
import sharp from 'sharp';
import { makeImage, makeMp4 } from '../server/support/media';
import { demo, hostWithApi, INSTALL_TIMEOUT_MS, openSession, outputOf, readExample, type ExecutionRun, type Item, type Session, type WorkflowJson } from './support/n8n';

const SCENARIOS_ID = 'imageGenE2eScen1';
const EXAMPLE_EDIT_ID = 'imageGenExample1';
const EXAMPLE_UPLOAD_ID = 'imageGenExample2';

/** An example workflow from examples/, exactly as the README offers it for import. */
function example(file: string, id: string, edit: (workflow: WorkflowJson) => void = () => undefined) {
	const workflow = readExample(file);
	edit(workflow);
	return { ...workflow, id };
}

let session: Session;
let scenarios: { run: ExecutionRun; raw: string };
let demoRun: { run: ExecutionRun; raw: string };
let exampleEdit: { run: ExecutionRun; raw: string };
let exampleUpload: { run: ExecutionRun; raw: string };
let hostedPng: string;
let hostedMp4: string;

function scenarioWorkflow(smallPngBase64: string) {
	const { imageGenNode, uploadNode, node } = demo;
	const continueOnFail = { onError: 'continueRegularOutput' };
	return demo.workflow({
		id: SCENARIOS_ID,
		name: 'ImageGen e2e scenarios',
		nodes: [
			demo.trigger(),
			imageGenNode('p-image', { model: 'p-image', prompt: 'A red bicycle against a white wall', aspectRatio: '16:9', outputFormat: 'jpeg', responseFormat: 'url' }, [240, 0]),
			imageGenNode(
				'textimage-v2',
				{
					model: 'textimage-v2',
					prompt: 'A poster that says HELLO',
					negativePrompt: 'blur',
					styleType: 'DESIGN',
					magicPromptOption: 'OFF',
					aspectRatio: '3:1',
					outputFormat: 'webp',
					responseFormat: 'b64_json',
				},
				[240, 200],
			),
			imageGenNode(
				'p-image-edit from binary',
				{
					model: 'p-image-edit',
					prompt: 'Paint the bicycle blue',
					images: { image: [{ source: 'binary', binaryPropertyName: 'data' }] },
					aspectRatio: '1:1',
					outputFormat: 'png',
					responseFormat: 'url',
				},
				[480, 0],
			),
			uploadNode('upload binary image', { inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'webp' }, [480, 150]),
			node(
				'download video',
				'n8n-nodes-base.httpRequest',
				{ url: hostedMp4, options: { response: { response: { responseFormat: 'file' } } } },
				[240, 400],
				{ typeVersion: 4.2 },
			),
			uploadNode('upload binary video', { inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', outputFormat: 'original' }, [480, 400]),
			uploadNode('upload url', { inputType: 'url', url: hostedPng, mediaType: 'image', outputFormat: 'jpg' }, [240, 550]),
			uploadNode('upload base64', { inputType: 'base64', base64: smallPngBase64, mediaType: 'auto', outputFormat: 'webp' }, [240, 700]),
			node('two prompts', 'n8n-nodes-base.set', { mode: 'raw', jsonOutput: JSON.stringify({ prompts: [{ prompt: 'A calm lake' }, { prompt: '   ' }] }) }, [240, 850], { typeVersion: 3.4 }),
			node('one item per prompt', 'n8n-nodes-base.splitOut', { fieldToSplitOut: 'prompts', options: {} }, [480, 850]),
			imageGenNode('continue on fail', { model: 'p-image', prompt: '={{ $json.prompt }}', aspectRatio: '1:1', outputFormat: 'png', responseFormat: 'url' }, [720, 850], continueOnFail),
		],
		connections: demo.connect([
			['Start', 'p-image'],
			['Start', 'textimage-v2'],
			['p-image', 'p-image-edit from binary'],
			['p-image', 'upload binary image'],
			['Start', 'download video'],
			['download video', 'upload binary video'],
			['Start', 'upload url'],
			['Start', 'upload base64'],
			['Start', 'two prompts'],
			['two prompts', 'one item per prompt'],
			['one item per prompt', 'continue on fail'],
		]),
	});
}

beforeAll(async () => {
	session = await openSession('workflows');
	hostedPng = (await hostWithApi(session, { image: (await makeImage('png', 320, 200)).toString('base64') })).imageUrl!;
	hostedMp4 = (await hostWithApi(session, { video: makeMp4(4096).toString('base64') })).videoUrl!;
	const smallPng = (await makeImage('png', 120, 80)).toString('base64');
	// The upload example downloads a video from the web; here it downloads one from loopback.
	const uploadExample = example('imagegen-upload-video.json', EXAMPLE_UPLOAD_ID, (workflow) => {
		workflow.nodes.find((node) => node.name === 'Download video')!.parameters.url = hostedMp4;
	});
	await session.importWorkflows([scenarioWorkflow(smallPng), demo.demoWorkflow(), example('imagegen-generate-and-edit.json', EXAMPLE_EDIT_ID), uploadExample]);
	const scenarioResult = await session.execute(SCENARIOS_ID);
	scenarios = { run: scenarioResult.run, raw: scenarioResult.result.stdout + scenarioResult.result.stderr };
	const demoResult = await session.execute(demo.DEMO_WORKFLOW_ID);
	demoRun = { run: demoResult.run, raw: demoResult.result.stdout + demoResult.result.stderr };
	const editResult = await session.execute(EXAMPLE_EDIT_ID);
	exampleEdit = { run: editResult.run, raw: editResult.result.stdout + editResult.result.stderr };
	const uploadResult = await session.execute(EXAMPLE_UPLOAD_ID);
	exampleUpload = { run: uploadResult.run, raw: uploadResult.result.stdout + uploadResult.result.stderr };
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	await session?.close();
});

function only(nodeName: string): Item {
	const items = outputOf(scenarios.run, nodeName, scenarios.raw);
	expect(items).toHaveLength(1);
	return items[0]!;
}

/** Fetches a hosted URL from the server and decodes it: the bytes behind every answer are real. */
async function fetchImage(url: unknown): Promise<{ contentType: string; width: number; height: number; format: string }> {
	expect(typeof url).toBe('string');
	expect(String(url).startsWith(`${session.server.origin}/files/`)).toBe(true);
	const response = await fetch(String(url));
	expect(response.status).toBe(200);
	const bytes = Buffer.from(await response.arrayBuffer());
	const meta = await sharp(bytes).metadata();
	return { contentType: response.headers.get('content-type') ?? '', width: meta.width!, height: meta.height!, format: meta.format! };
}

function expectFutureDate(value: unknown): void {
	expect(typeof value).toBe('string');
	expect(Date.parse(String(value))).toBeGreaterThan(Date.now());
}

test('the scenarios workflow ran to the end in n8n', () => {
	expect(scenarios.run.status).toBe('success');
});

test('p-image: hosted URL with the requested ratio and format, and the image downloaded as binary', async () => {
	const item = only('p-image');
	expect(item.json.model).toBe('p-image');
	expectFutureDate(item.json.expiresAt);
	const image = await fetchImage(item.json.url);
	expect(image.format).toBe('jpeg');
	expect(image.width / image.height).toBeCloseTo(16 / 9, 1);
	expect(item.binary?.data?.mimeType).toBe('image/jpeg');
});

test('textimage-v2 with negative prompt, style and magic prompt: b64_json lands as binary data', () => {
	const item = only('textimage-v2');
	expect(item.json.model).toBe('textimage-v2');
	expect(item.json.url).toBeUndefined();
	expect(item.binary?.data?.mimeType).toBe('image/webp');
	expect(item.binary?.data?.fileSize).toMatch(/^[1-9][\d.]* ?[kM]?B$/);
});

test('p-image-edit takes the binary output of the previous ImageGen node as its input image', async () => {
	const item = only('p-image-edit from binary');
	expect(item.json.model).toBe('p-image-edit');
	const image = await fetchImage(item.json.url);
	expect(image.format).toBe('png');
	expect(Math.abs(image.width / image.height - 1)).toBeLessThan(0.03);
	expect(item.pairedItem).toEqual({ item: 0 });
});

test('upload from binary: the generated image, converted to webp', async () => {
	const item = only('upload binary image');
	expect(item.json.mediaType).toBe('image');
	expect(item.json.url).toBe(item.json.imageUrl);
	expectFutureDate(item.json.expiresAt);
	const image = await fetchImage(item.json.imageUrl);
	expect(image.contentType).toBe('image/webp');
	expect(image.width / image.height).toBeCloseTo(16 / 9, 1);
});

test('upload from binary: a video downloaded by n8n keeps its bytes and type', async () => {
	const item = only('upload binary video');
	expect(item.json.mediaType).toBe('video');
	expect(String(item.json.videoUrl)).toMatch(/\.mp4$/);
	const response = await fetch(String(item.json.videoUrl));
	expect(response.headers.get('content-type')).toBe('video/mp4');
	expect(Buffer.from(await response.arrayBuffer()).equals(makeMp4(4096))).toBe(true);
});

test('upload from a URL, converted to jpg', async () => {
	const item = only('upload url');
	expect(String(item.json.imageUrl)).toMatch(/\.jpg$/);
	const image = await fetchImage(item.json.imageUrl);
	expect(image).toMatchObject({ contentType: 'image/jpeg', width: 320, height: 200 });
});

test('upload from base64, converted to webp', async () => {
	const item = only('upload base64');
	const image = await fetchImage(item.json.imageUrl);
	expect(image).toMatchObject({ contentType: 'image/webp', width: 120, height: 80 });
});

test('continue on fail: the good item succeeds, the bad one carries the error naming the field', async () => {
	const items = outputOf(scenarios.run, 'continue on fail', scenarios.raw);
	expect(items).toHaveLength(2);
	const [good, bad] = items as [Item, Item];
	await fetchImage(good.json.url);
	expect(good.pairedItem).toEqual({ item: 0 });
	expect(String(bad.json.error)).toMatch(/prompt/i);
	expect(bad.json.url).toBeUndefined();
	expect(bad.pairedItem).toEqual({ item: 1 });
});

test('the demo workflow (generate → edit → upload) runs and ends with a hosted webp', async () => {
	expect(demoRun.run.status).toBe('success');
	const [uploaded] = outputOf(demoRun.run, 'Upload', demoRun.raw);
	const image = await fetchImage(uploaded?.json.imageUrl);
	expect(image.contentType).toBe('image/webp');
	expect(image.width / image.height).toBeCloseTo(16 / 9, 1);
});

test('README example: one picture per prompt, an edit of each, and a textimage-v2 poster', async () => {
	expect(exampleEdit.run.status).toBe('success');
	const edits = outputOf(exampleEdit.run, 'Edit', exampleEdit.raw);
	expect(edits).toHaveLength(2);
	for (const edit of edits) expect((await fetchImage(edit.json.url)).format).toBe('jpeg');
	const [poster] = outputOf(exampleEdit.run, 'Poster', exampleEdit.raw);
	expect(poster?.binary?.data?.mimeType).toBe('image/webp');
});

test('README example: a downloaded video and a base64 image hosted for 24 hours', async () => {
	expect(exampleUpload.run.status).toBe('success');
	const [video] = outputOf(exampleUpload.run, 'Host video', exampleUpload.raw);
	expect(video?.json.mediaType).toBe('video');
	const response = await fetch(String(video?.json.videoUrl));
	expect(Buffer.from(await response.arrayBuffer()).equals(makeMp4(4096))).toBe(true);
	const [image] = outputOf(exampleUpload.run, 'Host image as JPG', exampleUpload.raw);
	expect((await fetchImage(image?.json.imageUrl)).contentType).toBe('image/jpeg');
});
