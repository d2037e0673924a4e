/**
 * The hosting operations inside a real n8n: lifetime, Fit For, Get Info, Delete (by id and by URL)
 * and seeds, each a branch of one workflow, plus the README's upload-fit-and-manage example. Every
 * hosted URL is fetched back from the server, and deleted ones must answer 404.
 */
import sharp from 'sharp';
import { makeImage, pictureDistance } from '../server/support/media';
import { demo, hostWithApi, INSTALL_TIMEOUT_MS, openSession, outputOf, readExample, type ExecutionRun, type Item, type Session } from './support/n8n';

const SCENARIOS_ID = 'imageGenE2eHost1';
const EXAMPLE_ID = 'imageGenExample3';
const SEED = 424242;
const HOUR_MS = 3_600_000;
const INSTAGRAM = { maxSide: 1440, maxBytes: 8_000_000 };

interface Execution {
	run: ExecutionRun;
	raw: string;
}

let session: Session;
let scenarios: Execution;
let exampleRun: Execution;
let largePng: { url: string; width: number; height: number; sizeBytes: number };
let uploadExampleParameters: Record<string, unknown>;
let startedAt: number;

/** Noise does not compress: a PNG well above Instagram's 8 MB, so both limits have work to do. */
async function makeLargeNoisePng(width: number, height: number): Promise<Buffer> {
	return sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
		.png({ compressionLevel: 1 })
		.toBuffer();
}

function scenarioWorkflow(smallPngBase64: string) {
	const { imageGenNode, uploadNode, node } = demo;
	const continueOnFail = { onError: 'continueRegularOutput' };
	const seeded = (seed: number) => ({ model: 'p-image', prompt: 'A lighthouse in fog', aspectRatio: '1:1', outputFormat: 'png', responseFormat: 'url', options: { seed } });
	return demo.workflow({
		id: SCENARIOS_ID,
		name: 'ImageGen e2e hosting scenarios',
		nodes: [
			demo.trigger(),
			uploadNode('upload for 1 hour', { operation: 'upload', inputType: 'base64', base64: smallPngBase64, mediaType: 'image', options: { expiresIn: 3600 } }, [240, 0]),
			uploadNode('get info by id', { operation: 'getInfo', fileId: '={{ $json.id }}' }, [480, 0]),
			uploadNode('delete by id', { operation: 'delete', fileId: '={{ $json.id }}' }, [720, 0]),
			node('download large png', 'n8n-nodes-base.httpRequest', { url: largePng.url, options: { response: { response: { responseFormat: 'file' } } } }, [240, 200], {
				typeVersion: 4.2,
			}),
			uploadNode('fit for instagram feed', { operation: 'upload', inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', options: { fitFor: 'instagramFeed' } }, [480, 200]),
			uploadNode(
				'fit custom impossible',
				{ operation: 'upload', inputType: 'binary', binaryPropertyName: 'data', mediaType: 'auto', options: { fitFor: 'custom', maxSide: 1440, maxSizeMb: 0.02 } },
				[480, 300],
				continueOnFail,
			),
			uploadNode('upload to delete by url', { operation: 'upload', inputType: 'base64', base64: smallPngBase64, mediaType: 'image' }, [240, 400]),
			uploadNode('delete by url', { operation: 'delete', fileId: '={{ $json.url }}' }, [480, 400]),
			imageGenNode('seed first', seeded(SEED), [240, 600]),
			imageGenNode('seed again', seeded(SEED), [240, 750]),
			imageGenNode('other seed', seeded(SEED + 1), [240, 900]),
			// A node saved before operations existed: the README example's parameters, exactly.
			uploadNode('saved without operation', uploadExampleParameters, [240, 1050]),
			uploadNode('get info malformed id', { operation: 'getInfo', fileId: 'not an id!' }, [240, 1200], continueOnFail),
		],
		connections: demo.connect([
			['Start', 'upload for 1 hour'],
			['upload for 1 hour', 'get info by id'],
			['get info by id', 'delete by id'],
			['Start', 'download large png'],
			['download large png', 'fit for instagram feed'],
			['download large png', 'fit custom impossible'],
			['Start', 'upload to delete by url'],
			['upload to delete by url', 'delete by url'],
			['Start', 'seed first'],
			['Start', 'seed again'],
			['Start', 'other seed'],
			['Start', 'saved without operation'],
			['Start', 'get info malformed id'],
		]),
	});
}

beforeAll(async () => {
	session = await openSession('hosting');
	const largeBytes = await makeLargeNoisePng(2880, 1800);
	largePng = { url: (await hostWithApi(session, { image: largeBytes.toString('base64') })).imageUrl!, width: 2880, height: 1800, sizeBytes: largeBytes.byteLength };
	const hostImage = readExample('imagegen-upload-video.json').nodes.find((candidate) => candidate.name === 'Host image as JPG')!;
	uploadExampleParameters = hostImage.parameters;
	const example = readExample('imagegen-upload-fit-and-manage.json');
	// The example fetches a photo from the web; here it fetches the large PNG from loopback.
	example.nodes.find((candidate) => candidate.name === 'Host for Instagram')!.parameters.url = largePng.url;
	const smallPng = (await makeImage('png', 120, 80)).toString('base64');
	await session.importWorkflows([scenarioWorkflow(smallPng), { ...example, id: EXAMPLE_ID }]);
	startedAt = Date.now();
	const scenarioResult = await session.execute(SCENARIOS_ID);
	scenarios = { run: scenarioResult.run, raw: scenarioResult.result.stdout + scenarioResult.result.stderr };
	const exampleResult = await session.execute(EXAMPLE_ID);
	exampleRun = { run: exampleResult.run, raw: exampleResult.result.stdout + exampleResult.result.stderr };
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	await session?.close();
});

function only(execution: Execution, nodeName: string): Item {
	const items = outputOf(execution.run, nodeName, execution.raw);
	expect(items).toHaveLength(1);
	return items[0]!;
}

async function fetchBytes(url: unknown): Promise<{ status: number; contentType: string; bytes: Buffer }> {
	expect(typeof url).toBe('string');
	expect(String(url).startsWith(`${session.server.origin}/files/`)).toBe(true);
	const response = await fetch(String(url));
	return { status: response.status, contentType: response.headers.get('content-type') ?? '', bytes: Buffer.from(await response.arrayBuffer()) };
}

async function fileInfoStatus(id: unknown): Promise<number> {
	const response = await fetch(`${session.server.baseUrl}/files/${String(id)}`, { headers: { authorization: `Bearer ${session.server.apiKey}` } });
	await response.arrayBuffer();
	return response.status;
}

/** What the Fit For "Instagram feed" preset promises: a JPEG of at most 8 MB, ... */
function expectFittedJson(item: Item): void {
	expect(item.json.mimeType).toBe('image/jpeg');
	expect(String(item.json.url)).toMatch(/\.jpg$/);
	expect(item.json.sizeBytes).toBeGreaterThan(0);
	expect(item.json.sizeBytes).toBeLessThanOrEqual(INSTAGRAM.maxBytes);
}

/** ... whose bytes decode to a JPEG with a long side of at most 1440 px and the source's ratio. */
async function expectFitForInstagramFeed(item: Item): Promise<void> {
	expectFittedJson(item);
	const hosted = await fetchBytes(item.json.url);
	expect(hosted.status).toBe(200);
	expect(hosted.contentType).toBe('image/jpeg');
	expect(hosted.bytes.byteLength).toBe(item.json.sizeBytes);
	const meta = await sharp(hosted.bytes).metadata();
	expect(meta.format).toBe('jpeg');
	expect(Math.max(meta.width!, meta.height!)).toBeLessThanOrEqual(INSTAGRAM.maxSide);
	expect(Math.max(meta.width!, meta.height!)).toBeGreaterThan(INSTAGRAM.maxSide - 10);
	expect(meta.width! / meta.height!).toBeCloseTo(largePng.width / largePng.height, 2);
}

test('the hosting workflow ran to the end in n8n', () => {
	expect(scenarios.run.status).toBe('success');
	// Fit For must have had something to do on both limits.
	expect(largePng.sizeBytes).toBeGreaterThan(INSTAGRAM.maxBytes);
	expect(Math.max(largePng.width, largePng.height)).toBeGreaterThan(INSTAGRAM.maxSide);
});

test('upload with Lifetime 1 hour: expiresAt one hour ahead, and id, mimeType, sizeBytes of the hosted file', () => {
	const uploaded = only(scenarios, 'upload for 1 hour');
	expect(uploaded.json.id).toMatch(/^[A-Za-z0-9_-]+$/);
	expect(String(uploaded.json.url)).toContain(`/files/${String(uploaded.json.id)}.`);
	expect(uploaded.json.mimeType).toBe('image/png');
	expect(uploaded.json.sizeBytes).toBeGreaterThan(0);
	const expiresAt = Date.parse(String(uploaded.json.expiresAt));
	expect(expiresAt).toBeGreaterThan(startedAt + HOUR_MS - 60_000);
	expect(expiresAt).toBeLessThanOrEqual(Date.now() + HOUR_MS);
});

test('Get Info on the uploaded file: same id, url, type, size and expiry', () => {
	const uploaded = only(scenarios, 'upload for 1 hour');
	const info = only(scenarios, 'get info by id');
	expect(info.json).toMatchObject({
		id: uploaded.json.id,
		url: uploaded.json.url,
		mediaType: 'image',
		mimeType: uploaded.json.mimeType,
		sizeBytes: uploaded.json.sizeBytes,
		expiresAt: uploaded.json.expiresAt,
	});
	const lifetimeMs = Date.parse(String(info.json.expiresAt)) - Date.parse(String(info.json.createdAt));
	expect(Math.abs(lifetimeMs - HOUR_MS)).toBeLessThan(5_000);
});

test('Delete by id: the node reports it, and the hosted URL and its info answer 404', async () => {
	const uploaded = only(scenarios, 'upload for 1 hour');
	expect(only(scenarios, 'delete by id').json).toEqual({ id: uploaded.json.id, deleted: true });
	expect((await fetchBytes(uploaded.json.url)).status).toBe(404);
	expect(await fileInfoStatus(uploaded.json.id)).toBe(404);
});

test('Delete given a hosted URL of ours takes that file offline', async () => {
	const uploaded = only(scenarios, 'upload to delete by url');
	expect(only(scenarios, 'delete by url').json).toEqual({ id: uploaded.json.id, deleted: true });
	expect((await fetchBytes(uploaded.json.url)).status).toBe(404);
});

test('Fit For Instagram feed: a large PNG from n8n binary data is hosted as a JPEG within 1440 px and 8 MB', async () => {
	await expectFitForInstagramFeed(only(scenarios, 'fit for instagram feed'));
});

test('ImageGen with a fixed seed: the same picture twice, the seed echoed; another seed gives another image', async () => {
	const first = only(scenarios, 'seed first');
	const again = only(scenarios, 'seed again');
	const other = only(scenarios, 'other seed');
	expect(first.json.seed).toBe(SEED);
	expect(again.json.seed).toBe(SEED);
	expect(other.json.seed).toBe(SEED + 1);
	expect(first.json.url).not.toBe(again.json.url);
	const [firstBytes, againBytes, otherBytes] = await Promise.all([first, again, other].map(async (item) => (await fetchBytes(item.json.url)).bytes));
	expect((await sharp(firstBytes!).metadata()).format).toBe('png');
	// Each file carries its own provenance marks (a manifest, a watermark's payload), so the pictures are compared.
	expect(await pictureDistance(againBytes!, firstBytes!)).toBeGreaterThan(30);
	expect(await pictureDistance(otherBytes!, firstBytes!)).toBeLessThan(20);
});

test('an upload node saved with the README example parameters (no operation) still uploads', async () => {
	expect(uploadExampleParameters).not.toHaveProperty('operation');
	const item = only(scenarios, 'saved without operation');
	expect(item.json).toMatchObject({ mediaType: 'image', mimeType: 'image/jpeg' });
	expect(item.json.id).toMatch(/^[A-Za-z0-9_-]+$/);
	const hosted = await fetchBytes(item.json.imageUrl);
	expect(hosted.status).toBe(200);
	expect(hosted.bytes.byteLength).toBe(item.json.sizeBytes);
	expect((await sharp(hosted.bytes).metadata()).format).toBe('jpeg');
});

test('Get Info with a malformed file id fails naming the parameter; continue on fail carries the text', () => {
	const item = only(scenarios, 'get info malformed id');
	expect(String(item.json.error)).toMatch(/fileId/);
	expect(String(item.json.error)).toContain('not an id!');
	expect(item.json.url).toBeUndefined();
});

test('Fit For Custom that no PNG encoding can meet fails naming Max Size (MB); continue on fail carries the text', () => {
	const item = only(scenarios, 'fit custom impossible');
	expect(String(item.json.error)).toMatch(/cannot be made to fit/);
	expect(String(item.json.description)).toContain("parameter 'maxSizeMb'");
	expect(String(item.json.description)).toContain("field 'max_bytes'");
	expect(item.json.url).toBeUndefined();
});

test('README example: fitted for Instagram and hosted for 1 hour, Get Info, then Delete by URL', async () => {
	expect(exampleRun.run.status).toBe('success');
	const hosted = only(exampleRun, 'Host for Instagram');
	// The example deletes what it hosted, so only its answers show the fit.
	expectFittedJson(hosted);
	expect(Date.parse(String(hosted.json.expiresAt))).toBeLessThanOrEqual(Date.now() + HOUR_MS);
	expect(only(exampleRun, 'Get info').json).toMatchObject({ id: hosted.json.id, url: hosted.json.url, sizeBytes: hosted.json.sizeBytes });
	expect(only(exampleRun, 'Delete').json).toEqual({ id: hosted.json.id, deleted: true });
	expect((await fetchBytes(hosted.json.url)).status).toBe(404);
});
