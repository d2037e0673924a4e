/**
 * The `automatic1111` provider against a loopback stand-in of Stable Diffusion WebUI's API
 * (support/a1111-host.ts: one drawing at a time behind its queue lock, an interrupt that stops
 * whatever draws). Checked: the txt2img and img2img payloads, width and height from the ratio, the
 * host's refusals (422 validation naming the field, 500 failures) and broken answers reaching our
 * client as a 502 with its words and nothing charged, one call at a time per WebUI so that a caller
 * who leaves never stops another caller's image, and the settings refused at start.
 */
import sharp from 'sharp';
import { EXTENDED_ASPECT_RATIOS } from '../../../../core/models';
import { sizeForRatio } from '../../../../server/src/generation/providers/automatic1111';
import { buildTestApp, type InProcessApp } from '../../support/app';
import { startA1111Host, type A1111Host } from '../../support/a1111-host';
import { eventually } from '../../support/http';
import { makeImage, noisyPng, samePixels } from '../../support/media';
import { providersFor } from '../../support/providers';
import { generateIn } from '../support/generate-in';
import { expectFailedUncharged, imagesCharged } from '../support/uncharged';

const ALL_MODELS = 'p-image=automatic1111,p-image-edit=automatic1111,textimage-v2=automatic1111';

let webui: A1111Host;
let app: InProcessApp;
/** The time limit 1 s. */
let hurried: InProcessApp;
let square: Buffer;

const appFor = async (env: NodeJS.ProcessEnv, timeoutSeconds = 5) =>
	// The host is the subject: marking (which re-encodes what it answers) is the provenance suites'.
	await buildTestApp(['--allow-private-urls', '--generation-timeout-seconds', String(timeoutSeconds), '--provenance', 'off'], { providers: providersFor(ALL_MODELS, env) });

beforeAll(async () => {
	[webui, square] = await Promise.all([startA1111Host(), makeImage('png', 1024, 1024)]);
	[app, hurried] = await Promise.all([appFor({ A1111_BASE_URL: `${webui.origin}/`, A1111_STEPS: '30', A1111_API_AUTH: 'painter:secret' }), appFor({ A1111_BASE_URL: webui.origin }, 1)]);
});

afterAll(async () => {
	await Promise.all([app?.close(), hurried?.close()]);
	await webui?.close();
});

beforeEach(() => {
	webui.reset();
	webui.image = square;
});

test('p-image: txt2img with prompt, seed, size from the ratio and the configured steps; hosted at the exact ratio', async () => {
	const answer = await generateIn(app, { model: 'p-image', prompt: 'a red fox', aspect_ratio: '16:9', seed: 42 });
	expect(answer.status).toBe(200);
	const [call] = webui.calls;
	expect(call).toMatchObject({ method: 'POST', path: '/sdapi/v1/txt2img' });
	expect(call!.headers.authorization).toBe(`Basic ${Buffer.from('painter:secret').toString('base64')}`);
	expect(call!.json).toEqual({ prompt: 'a red fox', negative_prompt: '', seed: 42, width: 1368, height: 768, steps: 30, batch_size: 1, n_iter: 1, save_images: false, force_task_id: expect.stringMatching(/^imagegen-/) });
	const hosted = await sharp(Buffer.from(await (await app.request(answer.body.data[0].url)).arrayBuffer())).metadata();
	expect(hosted.width! / hosted.height!).toBeCloseTo(16 / 9, 2);
});

test('a 1024×1024 grey image of noise, 1 MB as base64 in `images`: read as it arrives and hosted with the same pixels', async () => {
	const noise = await noisyPng(1024, 1024, 1);
	webui.image = noise;
	const answer = await generateIn(app, { model: 'p-image', prompt: 'static', aspect_ratio: '1:1' });
	expect(answer.status).toBe(200);
	expect(await samePixels(Buffer.from(await (await app.request(answer.body.data[0].url)).arrayBuffer()), noise)).toBe(true);
});

test('textimage-v2: its negative prompt is sent', async () => {
	const answer = await generateIn(app, { model: 'textimage-v2', prompt: 'a poster', negative_prompt: 'blurry', aspect_ratio: '3:1' });
	expect(answer.status).toBe(200);
	expect(webui.calls[0]!.json).toMatchObject({ prompt: 'a poster', negative_prompt: 'blurry', width: 1776, height: 592 });
});

test('p-image-edit: img2img with the input as base64 in init_images', async () => {
	const input = await makeImage('png', 640, 480);
	const answer = await generateIn(app, { model: 'p-image-edit', prompt: 'snow', images: [`data:image/png;base64,${input.toString('base64')}`] });
	expect(answer.status).toBe(200);
	const [call] = webui.calls;
	expect(call!.path).toBe('/sdapi/v1/img2img');
	expect(call!.json.init_images).toEqual([input.toString('base64')]);
	// match_input_image: the catalog ratio nearest 640×480 is 4:3.
	expect(call!.json).toMatchObject({ width: 1184, height: 888 });
});

test('p-image-edit at another ratio than its input: "Crop and resize", so the input is cut to the ratio, not stretched', async () => {
	const input = await makeImage('png', 640, 480);
	const answer = await generateIn(app, { model: 'p-image-edit', prompt: 'snow', aspect_ratio: '9:16', images: [`data:image/png;base64,${input.toString('base64')}`] });
	expect(answer.status).toBe(200);
	expect(webui.calls[0]!.json).toMatchObject({ width: 768, height: 1368 });
	expect(webui.draws[0]!.resizeMode).toBe(1);
});

test('A1111_STEPS unset: 20 steps, the WebUI form\'s default, not its API\'s 50', async () => {
	expect((await generateIn(hurried, { model: 'p-image', prompt: 'x' })).status).toBe(200);
	expect(webui.draws.map((draw) => draw.steps)).toEqual([20]);
});

test('p-image-edit with two inputs is refused before the host: img2img draws from one', async () => {
	const input = `data:image/png;base64,${square.toString('base64')}`;
	const answer = await generateIn(app, { model: 'p-image-edit', prompt: 'snow', images: [input, input] });
	expect(answer.status).toBe(400);
	expect(answer.body.error.param).toBe('images');
	expect(webui.calls).toHaveLength(0);
});

test.each(EXTENDED_ASPECT_RATIOS)('%s: multiples of 8, about one megapixel, the ratio within 2 %%', (ratio) => {
	const { width, height } = sizeForRatio(ratio);
	const [w, h] = ratio.split(':').map(Number) as [number, number];
	expect(width % 8).toBe(0);
	expect(height % 8).toBe(0);
	expect(Math.abs(width * height - 1024 * 1024) / (1024 * 1024)).toBeLessThan(0.02);
	expect(Math.abs(width / height / (w / h) - 1)).toBeLessThan(0.02);
});

describe('a host that answers badly: a 502 that says what, nothing charged', () => {
	test.each([
		['a 422 validation refusal', { status: 422, body: { detail: [{ loc: ['body', 'width'], msg: 'value is not a valid integer', type: 'type_error.integer' }] } }, 'upstream_rejected', /HTTP 422: width: value is not a valid integer/],
		[
			'a 422 of pydantic 2, two fields',
			{ status: 422, body: { detail: [{ type: 'int_parsing', loc: ['body', 'steps'], msg: 'Input should be a valid integer', input: 'x' }, { type: 'missing', loc: ['body', 'init_images', 0], msg: 'Field required' }] } },
			'upstream_rejected',
			/HTTP 422: steps: Input should be a valid integer; init_images\[0\]: Field required/,
		],
		['a 500 while drawing', { status: 500, body: { error: 'OutOfMemoryError', detail: '', body: '', errors: 'CUDA out of memory. Tried to allocate 2.00 GiB' } }, 'upstream_failed', /HTTP 500: OutOfMemoryError: CUDA out of memory/],
		['an HTML page', 'html', 'upstream_invalid_output', /not JSON but an HTML page/],
		['an empty images list', 'empty', 'upstream_no_output', /returned no image: its answer had an empty images list/],
		['bytes that are no image', 'not-image', 'upstream_invalid_output', /not an image/],
	] as const)('%s', async (_what, next, code, message) => {
		webui.next(next);
		await expectFailedUncharged(app, { model: 'p-image', prompt: 'x' }, code, message);
		// A create is never sent twice: a 500 may come after the image was drawn.
		expect(webui.calls.filter((call) => call.path === '/sdapi/v1/txt2img')).toHaveLength(1);
	});
});

test('the time limit passes while it draws: 504, the drawing interrupted, nothing charged', async () => {
	webui.drawMs = 5_000;
	const charged = await imagesCharged(hurried);
	const answer = await generateIn(hurried, { model: 'p-image', prompt: 'x' });
	expect(answer.status).toBe(504);
	expect(await eventually(() => webui.calls.some((call) => call.path === '/sdapi/v1/interrupt'), 3_000)).toBe(true);
	expect(webui.draws).toEqual([expect.objectContaining({ interrupted: true })]);
	expect(await imagesCharged(hurried)).toBe(charged);
});

test('a WebUI before 1.6 (no force_task_id, so it cannot say where our task is): the drawing is interrupted all the same', async () => {
	webui.beforeTaskIds = true;
	webui.drawMs = 5_000;
	expect((await generateIn(hurried, { model: 'p-image', prompt: 'x' })).status).toBe(504);
	expect(await eventually(() => webui.draws[0]?.interrupted === true, 3_000)).toBe(true);
	expect(webui.calls.map((call) => call.path)).toEqual(['/sdapi/v1/txt2img', '/internal/progress', '/sdapi/v1/interrupt']);
});

test('a drawing that ends in time is not interrupted', async () => {
	webui.drawMs = 100;
	expect((await generateIn(hurried, { model: 'p-image', prompt: 'x' })).status).toBe(200);
	await new Promise((resolve) => setTimeout(resolve, 200));
	expect(webui.calls.map((call) => call.path)).toEqual(['/sdapi/v1/txt2img']);
});

describe('two callers at once: one call at a time per WebUI, and a caller who leaves never stops the other caller\'s image', () => {
	const paths = () => webui.calls.map((call) => call.path);

	test('the caller who leaves was waiting behind the other\'s drawing: its request never reaches the WebUI, nothing is interrupted', async () => {
		webui.drawMs = 2_000;
		const charged = await imagesCharged(hurried);
		const staying = generateIn(app, { model: 'p-image', prompt: 'the one who stays' });
		await webui.drawsBegun(1);
		const leaving = await generateIn(hurried, { model: 'p-image', prompt: 'the one who leaves' });
		expect(leaving.status).toBe(504);
		expect((await staying).status).toBe(200);
		await new Promise((resolve) => setTimeout(resolve, 200));
		expect(webui.draws).toEqual([expect.objectContaining({ prompt: 'the one who stays', interrupted: false })]);
		expect(paths()).toEqual(['/sdapi/v1/txt2img']);
		expect(await imagesCharged(hurried)).toBe(charged);
	});

	test('the caller who leaves was drawing: only its drawing is interrupted, and the waiting caller\'s image is drawn whole after it', async () => {
		webui.drawMs = 2_000;
		const charged = await imagesCharged(hurried);
		const leaving = generateIn(hurried, { model: 'p-image', prompt: 'the one who leaves' });
		await webui.drawsBegun(1);
		const staying = generateIn(app, { model: 'p-image', prompt: 'the one who stays' });
		expect((await leaving).status).toBe(504);
		expect((await staying).status).toBe(200);
		expect(webui.draws).toEqual([
			expect.objectContaining({ prompt: 'the one who leaves', interrupted: true }),
			expect.objectContaining({ prompt: 'the one who stays', interrupted: false }),
		]);
		expect(paths().filter((path) => path === '/sdapi/v1/interrupt')).toHaveLength(1);
		expect(await imagesCharged(hurried)).toBe(charged);
	});

	test('another client of the same WebUI is drawing and ours waits in the WebUI\'s queue when its caller leaves: the other client\'s image is drawn whole, ours stopped as it starts', async () => {
		webui.drawMs = 2_000;
		const otherClient = fetch(`${webui.origin}/sdapi/v1/txt2img`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'another client' }) });
		await webui.drawsBegun(1);
		expect((await generateIn(hurried, { model: 'p-image', prompt: 'the one who leaves' })).status).toBe(504);
		expect((await otherClient).status).toBe(200);
		// WebUI cannot take a request out of its queue: ours begins once the other is done, and is interrupted then.
		await webui.drawsBegun(2);
		expect(await eventually(() => webui.draws[1]!.interrupted, 1_500)).toBe(true);
		expect(webui.draws).toEqual([
			expect.objectContaining({ prompt: 'another client', interrupted: false }),
			expect.objectContaining({ prompt: 'the one who leaves', interrupted: true }),
		]);
		expect(paths().filter((path) => path === '/sdapi/v1/interrupt')).toHaveLength(1);
	});
});

describe('settings refused at start, each named', () => {
	const build = (env: NodeJS.ProcessEnv) => () => providersFor('p-image=automatic1111', env);
	test.each([
		[{}, /p-image=automatic1111 needs A1111_BASE_URL/],
		[{ A1111_BASE_URL: 'gpu-box:7860' }, /A1111_BASE_URL\) must be an http\(s\) URL/],
		[{ A1111_BASE_URL: 'http://gpu-box:7860', A1111_STEPS: '0' }, /A1111_STEPS\) must be a whole number from 1 to 150; got '0'/],
		[{ A1111_BASE_URL: 'http://gpu-box:7860', A1111_STEPS: '12.5' }, /A1111_STEPS\) .* got '12.5'/],
		[{ A1111_BASE_URL: 'http://gpu-box:7860', A1111_API_AUTH: 'painter' }, /A1111_API_AUTH must be user:password/],
	])('%j', (env, message) => {
		expect(build(env)).toThrow(message);
	});
});
