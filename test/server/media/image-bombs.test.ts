/**
 * Image bombs over real HTTP: files whose headers declare far more pixels than `--max-image-pixels`
 * are refused from the header before anything decodes them, wherever an image is decoded (upload
 * conversion and fitting, p-image-edit inputs, provider outputs). Hosting such a file as is stays
 * allowed, a 48 MP photo still converts, and hosted files stay quick to read while bombs are refused
 * and big fits run. Also: control characters in a prompt, and damaged edit inputs.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { startServer, type RunningServer } from '../../helpers/server';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { download, postJson, uploadFile } from '../support/http';
import { gifDeclaring, jpegDeclaring, pngBomb, webpDeclaring } from '../support/bombs';
import { makeImage } from '../support/media';

let server: RunningServer;
let bomb: Buffer;

beforeAll(async () => {
	[server, bomb] = await Promise.all([startServer(), pngBomb()]);
});
afterAll(() => server?.stop({ removeData: true }));

const storedFiles = () => readdirSync(join(server.dataDir, 'files')).filter((name) => !name.startsWith('.') && /\.(png|jpg|webp|gif|avif)$/.test(name)).sort();
const timed = async <T>(work: Promise<T>): Promise<{ answer: T; ms: number }> => {
	const started = Date.now();
	const answer = await work;
	return { answer, ms: Date.now() - started };
};
// Generous for a loaded machine: decoding the bomb takes tens of seconds and gigabytes.
const FAST_MS = 5_000;

describe('uploads', () => {
	test('the fixture is what it claims: ~250 KB declaring 16000 × 16000 px', async () => {
		expect(bomb.length).toBeLessThan(1_000_000);
		expect(await sharp(bomb, { limitInputPixels: false }).metadata()).toMatchObject({ width: 16_000, height: 16_000 });
	});

	test('output_format=jpg: 400 image_too_large naming file, fast, nothing stored', async () => {
		const before = storedFiles();
		const { answer, ms } = await timed(uploadFile(server, bomb, { output_format: 'jpg' }, { fieldsFirst: true }));
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ param: 'file', code: 'image_too_large' });
		expect(answer.body.error.message).toMatch(/16000 × 16000/);
		expect(ms).toBeLessThan(FAST_MS);
		expect(storedFiles()).toEqual(before);
	});

	test('output_format after the file, and JSON base64: the same', async () => {
		const late = await uploadFile(server, bomb, { output_format: 'webp' });
		expect(late.body.error).toMatchObject({ param: 'file', code: 'image_too_large' });
		const json = await postJson(server, '/v1/uploads', { image: bomb.toString('base64'), output_format: 'jpg' });
		expect(json.status).toBe(400);
		expect(json.body.error).toMatchObject({ param: 'image', code: 'image_too_large' });
	});

	test('max_bytes and max_side: 400 image_too_large, fast', async () => {
		const { answer, ms } = await timed(uploadFile(server, bomb, { output_format: 'webp', max_bytes: '10240' }));
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ param: 'file', code: 'image_too_large' });
		expect(ms).toBeLessThan(FAST_MS);
		const side = await postJson(server, '/v1/uploads', { file: bomb.toString('base64'), max_side: 1024 });
		expect(side.status).toBe(400);
		expect(side.body.error).toMatchObject({ param: 'file', code: 'image_too_large' });
	});

	test.each([
		['jpeg', jpegDeclaring],
		['webp', webpDeclaring],
		['gif', gifDeclaring],
	])('a %s declaring huge dimensions is refused when converted or fitted', async (_format, make) => {
		const bytes = await make();
		for (const fields of [{ output_format: 'png' }, { max_side: '512' }] as Record<string, string>[]) {
			const answer = await uploadFile(server, bytes, fields);
			expect(answer.status).toBe(400);
			expect(answer.body.error).toMatchObject({ param: 'file', code: 'image_too_large' });
		}
	});

	test('hosting a bomb as is (no conversion) stays allowed, byte for byte', async () => {
		const answer = await uploadFile(server, bomb);
		expect(answer.status).toBe(200);
		expect((await download(answer.body.imageUrl)).bytes.equals(bomb)).toBe(true);
	});

	test('a 48 MP photo still converts and fits', async () => {
		const photo = await sharp({ create: { width: 8000, height: 6000, channels: 3, background: '#4080c0' } })
			.png({ compressionLevel: 1 })
			.toBuffer();
		const converted = await uploadFile(server, photo, { output_format: 'jpg' });
		expect(converted.status).toBe(200);
		expect(await sharp((await download(converted.body.imageUrl)).bytes).metadata()).toMatchObject({ format: 'jpeg', width: 8000, height: 6000 });
		const fitted = await uploadFile(server, photo, { max_side: '2048' });
		expect(fitted.status).toBe(200);
		expect(await sharp((await download(fitted.body.imageUrl)).bytes).metadata()).toMatchObject({ width: 2048, height: 1536 });
	}, 60_000);

	test('--max-image-pixels is the limit: a lower one refuses what the default takes', async () => {
		const strict = await startServer({ args: ['--max-image-pixels', '1000'] });
		try {
			const image = await makeImage('png', 40, 30);
			expect((await uploadFile(strict, image, { output_format: 'jpg' })).body.error).toMatchObject({ code: 'image_too_large', param: 'file' });
			expect((await uploadFile(strict, await makeImage('png', 30, 30), { output_format: 'jpg' })).status).toBe(200);
		} finally {
			await strict.stop({ removeData: true });
		}
	});
});

describe('p-image-edit inputs', () => {
	const edit = (images: string[], extra: Record<string, unknown> = {}) =>
		postJson(server, '/v1/images/generations', { model: 'p-image-edit', prompt: 'make it blue', images, response_format: 'b64_json', ...extra });

	test('a bomb is 400 image_too_large naming its index, fast', async () => {
		const png = (await makeImage('png', 16, 16)).toString('base64');
		const { answer, ms } = await timed(edit([bomb.toString('base64')]));
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ param: 'images[0]', code: 'image_too_large' });
		expect(ms).toBeLessThan(FAST_MS);
		const third = await edit([png, png, `data:image/jpeg;base64,${(await jpegDeclaring()).toString('base64')}`]);
		expect(third.body.error).toMatchObject({ param: 'images[2]', code: 'image_too_large' });
	});

	test.each([
		['a PNG signature followed by SVG markup', Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>')])],
		['a GIF header followed by SVG markup', Buffer.from('GIF89a<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect/></svg>')],
		['a truncated PNG', async () => (await makeImage('png', 64, 64)).subarray(0, 60)],
		['a JPEG whose scan data is garbage', async () => Buffer.concat([(await makeImage('jpeg', 64, 64)).subarray(0, 200), Buffer.alloc(300, 0x41)])],
	])('a damaged input (%s) is 400 naming images[1], not a 502', async (_name, make) => {
		const png = (await makeImage('png', 16, 16)).toString('base64');
		const bytes = typeof make === 'function' ? await make() : make;
		const answer = await edit([png, bytes.toString('base64')]);
		expect(answer.status).toBe(400);
		expect(answer.body.error.param).toBe('images[1]');
	});
});

describe('prompts', () => {
	test.each(['url', 'b64_json'])('control characters (NUL, BEL, ESC, DEL, C1) are drawn without them (%s)', async (responseFormat) => {
		const prompt = 'a red\u0000 fox\u0007 in \u001b[31mthe snow\u007f\u0085\u009b\uFFFE\t\r\nend';
		for (const body of [{ model: 'p-image' }, { model: 'textimage-v2', negative_prompt: 'a bell\u0007\u0000' }]) {
			const answer = await postJson(server, '/v1/images/generations', { ...body, prompt, response_format: responseFormat });
			expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 200, error: undefined });
		}
	});
});

describe('provider outputs', () => {
	let fake: FakeHosts;
	let replicate: RunningServer;

	beforeAll(async () => {
		fake = await startFakeHosts();
		replicate = await startServer({
			args: ['--allow-private-urls', '--generation-timeout-seconds', '20', '--providers', 'p-image=replicate'],
			env: { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1` },
		});
	});
	afterAll(async () => {
		await replicate?.stop({ removeData: true });
		await fake?.close();
	});

	test('an over-large image from the provider is a 502 image_too_large, fast', async () => {
		fake.setImage(bomb);
		const { answer, ms } = await timed(postJson(replicate, '/v1/images/generations', { model: 'p-image', prompt: 'x', output_format: 'jpeg' }));
		expect(answer.status).toBe(502);
		expect(answer.body.error).toMatchObject({ code: 'image_too_large', type: 'upstream_error' });
		expect(ms).toBeLessThan(FAST_MS);
	});

	test('a normal image from the provider still works', async () => {
		fake.setImage(await makeImage('png', 1024, 1024));
		const answer = await postJson(replicate, '/v1/images/generations', { model: 'p-image', prompt: 'x', output_format: 'jpeg' });
		expect(answer.status).toBe(200);
	});
});

describe('hosted files stay quick to read while bombs are refused and big fits run', () => {
	test('file-read p99 stays well under a second during concurrent heavy fits', async () => {
		const small = await uploadFile(server, await makeImage('png', 64, 64));
		expect(small.status).toBe(200);
		const heavy = await sharp({ create: { width: 2400, height: 1600, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
			.png({ compressionLevel: 1 })
			.toBuffer();
		let working = true;
		const load = Promise.all([
			...Array.from({ length: 4 }, () => uploadFile(server, heavy, { output_format: 'webp', max_bytes: '20000' })),
			...Array.from({ length: 4 }, () => uploadFile(server, bomb, { output_format: 'webp', max_bytes: '10240' })),
		]).finally(() => (working = false));
		const reads: number[] = [];
		while (working) {
			const { answer, ms } = await timed(download(small.body.imageUrl));
			expect(answer.status).toBe(200);
			reads.push(ms);
			await new Promise((resolve) => setTimeout(resolve, 20));
		}
		const answers = await load;
		// Fits either finish or are turned away (busy: 503 with Retry-After); bombs are refused.
		for (const answer of answers.slice(0, 4)) expect([200, 400, 503]).toContain(answer.status);
		for (const answer of answers.slice(4)) expect(answer.body.error.code).toBe('image_too_large');
		reads.sort((a, b) => a - b);
		const p99 = reads[Math.min(reads.length - 1, Math.floor(reads.length * 0.99))]!;
		expect(reads.length).toBeGreaterThan(5);
		expect(p99).toBeLessThan(1_000);
	}, 180_000);
});
