import sharp from 'sharp';
import { EXTENDED_ASPECT_RATIOS, MODELS, STANDARD_ASPECT_RATIOS, dimensionsFor, type AspectRatio, type ModelId } from '../../../index';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { download, postJson } from '../support/http';
import { startMediaHost, type MediaHost } from '../support/media-host';
import { makeImage, makeMp4, pictureDistance } from '../support/media';

let server: ServiceUnderTest;
let host: MediaHost;
let png: string;

beforeAll(async () => {
	// URL inputs in these tests come from a loopback host, so the address check is lifted here;
	// the refusal itself is covered at the end with a second server that keeps it.
	[server, host] = await Promise.all([startInProcessServer({ args: ['--allow-private-urls'] }), startMediaHost()]);
	png = (await makeImage('png', 40, 30)).toString('base64');
});
afterAll(async () => {
	await Promise.all([server.stop({ removeData: true }), host.close()]);
});

const generate = (body: unknown) => postJson(server, '/v1/images/generations', body);
const editBody = (images: unknown, extra: Record<string, unknown> = {}) => ({ model: 'p-image-edit', prompt: 'make it blue', images, ...extra });

async function expectDimensions(bytes: Buffer, ratio: AspectRatio) {
	const { width = 0, height = 0 } = await sharp(bytes).metadata();
	const [w, h] = ratio.split(':').map(Number) as [number, number];
	expect(Math.abs(width / height / (w / h) - 1)).toBeLessThanOrEqual(0.03);
	expect(Math.max(width, height)).toBeGreaterThanOrEqual(1024);
	expect(Math.max(width, height)).toBeLessThanOrEqual(2048);
	expect({ width, height }).toEqual(dimensionsFor(ratio));
}

describe('POST /v1/images/generations', () => {
	it.each<[ModelId, Record<string, unknown>]>([
		['p-image', {}],
		['p-image-edit', { images: 'PNG' }],
		['textimage-v2', { negative_prompt: 'people', style_type: 'ANIME', magic_prompt_option: 'OFF' }],
	])('generates with %s and answers the OpenAI-compatible shape with defaults', async (model, extra) => {
		const body: Record<string, unknown> = { model, prompt: 'a red lighthouse', ...extra };
		if (body.images === 'PNG') body.images = png;
		const answer = await generate(body);
		expect(answer.status).toBe(200);
		expect(answer.body).toMatchObject({ model, output_format: 'png', usage: { images: 1, cost_usd: MODELS[model].priceUsd } });
		expect(Math.abs(answer.body.created - Date.now() / 1000)).toBeLessThan(60);
		const [image] = answer.body.data;
		expect(image.url).toMatch(new RegExp(`^${server.origin}/files/[A-Za-z0-9_-]{22,}\\.png$`));
		const expiresIn = Date.parse(image.expires_at) - Date.now();
		expect(expiresIn).toBeGreaterThan(86_000_000);
		expect(expiresIn).toBeLessThanOrEqual(86_400_000);
		const { bytes, headers } = await download(image.url);
		expect(headers.get('content-type')).toBe('image/png');
		expect(Number(headers.get('content-length'))).toBe(bytes.length);
		// p-image-edit's default keeps its input's shape: 40 × 30 is 4:3.
		await expectDimensions(bytes, model === 'p-image-edit' ? '4:3' : '1:1');
	});

	it.each([
		...STANDARD_ASPECT_RATIOS.map((ratio) => ['p-image', ratio] as const),
		...STANDARD_ASPECT_RATIOS.map((ratio) => ['p-image-edit', ratio] as const),
		...EXTENDED_ASPECT_RATIOS.map((ratio) => ['textimage-v2', ratio] as const),
	])('%s follows aspect ratio %s', async (model, ratio) => {
		const answer = await generate({ model, prompt: 'ratio check', aspect_ratio: ratio, response_format: 'b64_json', ...(model === 'p-image-edit' ? { images: [png] } : {}) });
		expect(answer.status).toBe(200);
		await expectDimensions(Buffer.from(answer.body.data[0].b64_json, 'base64'), ratio);
	});

	it.each(['png', 'jpeg', 'webp'] as const)('encodes %s for every model, hosted and inline', async (format) => {
		for (const model of ['p-image', 'p-image-edit', 'textimage-v2'] as const) {
			const images = model === 'p-image-edit' ? { images: png } : {};
			const hosted = await generate({ model, prompt: 'formats', output_format: format, ...images });
			expect(hosted.status).toBe(200);
			expect(hosted.body.output_format).toBe(format);
			const { bytes, headers } = await download(hosted.body.data[0].url);
			expect(headers.get('content-type')).toBe(`image/${format}`);
			expect((await sharp(bytes).metadata()).format).toBe(format);
			const inline = await generate({ model, prompt: 'formats', output_format: format, response_format: 'b64_json', ...images });
			expect(inline.body.data[0]).not.toHaveProperty('url');
			expect((await sharp(Buffer.from(inline.body.data[0].b64_json, 'base64')).metadata()).format).toBe(format);
		}
	});

	describe('seed', () => {
		const body = { model: 'textimage-v2', prompt: 'same every time', response_format: 'b64_json', style_type: 'DESIGN' };
		// Pixels, not files: each file's provenance marks (creation time, manifest id, signature) are its own.
		const imageOf = (answer: { body: any }) => Buffer.from(answer.body.data[0].b64_json, 'base64');

		it('the same request with the same seed gives the same picture (each with its own watermark); the answer echoes the seed', async () => {
			const [first, second] = await Promise.all([generate({ ...body, seed: 1234 }), generate({ ...body, seed: 1234 })]);
			expect([first.status, second.status]).toEqual([200, 200]);
			expect(await pictureDistance(imageOf(first), imageOf(second))).toBeGreaterThan(30);
			expect(first.body.data[0].seed).toBe(1234);
		});

		it('another seed, or another prompt, gives other bytes', async () => {
			const [base, otherSeed, otherPrompt] = await Promise.all([
				generate({ ...body, seed: 1 }),
				generate({ ...body, seed: 2 }),
				generate({ ...body, prompt: 'something else', seed: 1 }),
			]);
			expect(await pictureDistance(imageOf(base), imageOf(otherSeed))).toBeLessThan(20);
			expect(await pictureDistance(imageOf(base), imageOf(otherPrompt))).toBeLessThan(20);
		});

		it('without a seed one is drawn and echoed; sending it back repeats the image', async () => {
			const drawn = await generate(body);
			const seed = drawn.body.data[0].seed;
			expect(Number.isInteger(seed) && seed >= 0 && seed <= 2_147_483_647).toBe(true);
			expect(await pictureDistance(imageOf(await generate({ ...body, seed })), imageOf(drawn))).toBeGreaterThan(30);
		});

		it.each<[ModelId, Record<string, unknown>]>([
			['p-image', {}],
			['p-image-edit', { images: 'PNG' }],
			['textimage-v2', {}],
		])('%s takes a seed, at both ends of its range, on hosted answers too', async (model, extra) => {
			const images = extra.images ? { images: png } : {};
			for (const seed of [0, 2_147_483_647]) {
				const answer = await generate({ model, prompt: 'x', seed, ...images });
				expect(answer.status).toBe(200);
				expect(answer.body.data[0]).toMatchObject({ seed, url: expect.any(String) });
			}
		});

		it.each([
			['negative', -1, /got -1/],
			['a fraction', 1.5, /got 1\.5/],
			['a numeric string', '42', /got a string/],
			['too big', 2_147_483_648, /got 2147483648/],
			['null', null, /got null/],
			['a boolean', true, /got a boolean/],
		])('a seed that is %s is a 400 naming seed', async (_, seed, message) => {
			const answer = await generate({ model: 'p-image', prompt: 'x', seed });
			expect(answer.status).toBe(400);
			expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param: 'seed' });
			expect(answer.body.error.message).toMatch(/'seed' must be a whole number from 0 to 2147483647/);
			expect(answer.body.error.message).toMatch(message);
		});
	});

	describe('input images of p-image-edit', () => {
		it('takes a URL, a data URI and raw base64, as a string or an array', async () => {
			const url = host.put('/input.jpg', await makeImage('jpeg', 50, 50));
			for (const images of [url, [url], `data:image/png;base64,${png}`, [png, url, `data:image/png;base64,${png}`]]) {
				const answer = await generate(editBody(images, { response_format: 'b64_json' }));
				expect(answer.status).toBe(200);
			}
		});

		it('composes the inputs: different inputs give different images', async () => {
			const red = (await sharp({ create: { width: 32, height: 32, channels: 3, background: '#f00' } }).png().toBuffer()).toString('base64');
			const [withPng, withRed] = await Promise.all([
				generate(editBody(png, { response_format: 'b64_json' })),
				generate(editBody(red, { response_format: 'b64_json' })),
			]);
			expect(withPng.body.data[0].b64_json).not.toBe(withRed.body.data[0].b64_json);
		});

		it('accepts 10 images and refuses 11', async () => {
			expect((await generate(editBody(Array.from({ length: 10 }, () => png)))).status).toBe(200);
			const refused = await generate(editBody(Array.from({ length: 11 }, () => png)));
			expect(refused.status).toBe(400);
			expect(refused.body.error).toMatchObject({ param: 'images', type: 'invalid_request_error' });
			expect(refused.body.error.message).toContain('at most 10 images');
		});

		it('refuses an input that is not an image, naming its index', async () => {
			const video = await generate(editBody([png, makeMp4().toString('base64')]));
			expect(video.status).toBe(400);
			expect(video.body.error).toMatchObject({ param: 'images[1]', code: 'unsupported_media_type' });
			const text = await generate(editBody([Buffer.from('just some text, not an image').toString('base64')]));
			expect(text.body.error).toMatchObject({ param: 'images[0]' });
		});

		it('refuses a URL that cannot be fetched, naming its index', async () => {
			const missing = await generate(editBody([png, `${host.origin}/nothing-here.png`]));
			expect(missing.status).toBe(400);
			expect(missing.body.error.param).toBe('images[1]');
			expect(missing.body.error.message).toMatch(/404/);
		});

		it('refuses loopback URLs when the address check is on', async () => {
			const strict = await startInProcessServer();
			try {
				const before = host.hits();
				const answer = await postJson(strict, '/v1/images/generations', editBody(host.put('/private.png', Buffer.from(png, 'base64'))));
				expect(answer.status).toBe(400);
				expect(answer.body.error).toMatchObject({ param: 'images[0]', code: 'refused_address' });
				expect(host.hits()).toBe(before);
			} finally {
				await strict.stop({ removeData: true });
			}
		});
	});

	it.each(
		([
		[{ prompt: 'x' }, 'model', /required/],
		[{ model: 'gpt-image-1', prompt: 'x' }, 'model', /one of p-image, p-image-edit, textimage-v2/],
		[{ model: 'p-image' }, 'prompt', /required/],
		[{ model: 'p-image', prompt: '   ' }, 'prompt', /empty/],
		[{ model: 'p-image', prompt: 'x'.repeat(10_001) }, 'prompt', /at most 10000/],
		[{ model: 'p-image', prompt: ['x'] }, 'prompt', /must be a string/],
		[{ model: 'p-image', prompt: 'x', aspect_ratio: '3:1' }, 'aspect_ratio', /for model 'p-image'/],
		[{ model: 'p-image', prompt: 'x', negative_prompt: 'y' }, 'negative_prompt', /only by textimage-v2/],
		[{ model: 'p-image', prompt: 'x', images: 'abcd' }, 'images', /only by p-image-edit/],
		[{ model: 'p-image', prompt: 'x', strength: 0.5 }, 'strength', /Unknown field/],
		[{ model: 'p-image', prompt: 'x', quality: 3 }, 'quality', /must be a string/],
		[{ model: 'p-image', prompt: 'x', output_format: 'gif' }, 'output_format', /png, jpeg, webp/],
		[{ model: 'p-image', prompt: 'x', response_format: 'json' }, 'response_format', /url, b64_json/],
		[{ model: 'p-image-edit', prompt: 'x' }, 'images', /required/],
		[{ model: 'textimage-v2', prompt: 'x', style_type: 'PHOTO' }, 'style_type', /AUTO, GENERAL, REALISTIC, DESIGN, RENDER_3D, ANIME/],
		[{ model: 'textimage-v2', prompt: 'x', magic_prompt_option: true }, 'magic_prompt_option', /AUTO, ON, OFF/],
		[{ model: 'textimage-v2', prompt: 'x', negative_prompt: 'n'.repeat(10_001) }, 'negative_prompt', /at most 10000/],
		] as const).map(([body, param, message]) => [`${JSON.stringify(body).slice(0, 70)} (${param})`, body, param, message] as const),
	)('refuses %s', async (_title, body, param, message) => {
		const answer = await generate(body);
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param });
		expect(answer.body.error.message).toMatch(message);
	});

	it('refuses a body that is not JSON or not an object, without a 500', async () => {
		const notJson = await postJson(server, '/v1/images/generations', '{"model": ');
		expect(notJson.status).toBe(400);
		expect(notJson.body.error.param).toBeNull();
		const array = await postJson(server, '/v1/images/generations', []);
		expect(array.status).toBe(400);
		expect(array.body.error.code).toBe('invalid_body');
	});

	it('needs the API key', async () => {
		const answer = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'x' }, { auth: null });
		expect(answer.status).toBe(401);
	});

	it('serves 20 parallel generations with distinct URLs', async () => {
		const answers = await Promise.all(
			Array.from({ length: 20 }, (_, i) => generate({ model: i % 2 ? 'p-image' : 'textimage-v2', prompt: `parallel ${i % 5}` })),
		);
		expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
		const urls = answers.map((answer) => answer.body.data[0].url as string);
		expect(new Set(urls).size).toBe(20);
		// Read to their ends (support/http.ts's download says why).
		const downloads = await Promise.all(urls.map((url) => download(url)));
		expect(downloads.map(({ status }) => status)).toEqual(Array(20).fill(200));
		expect(downloads.every(({ bytes }) => bytes.subarray(1, 4).toString('latin1') === 'PNG')).toBe(true);
	});

	it('prices textimage-v2 as configured', async () => {
		const priced = await startInProcessServer({ args: ['--prices', 'textimage-v2=0.05'] });
		try {
			const answer = await postJson(priced, '/v1/images/generations', { model: 'textimage-v2', prompt: 'x', response_format: 'b64_json' });
			expect(answer.body.usage).toEqual({ images: 1, cost_usd: 0.05 });
		} finally {
			await priced.stop({ removeData: true });
		}
	});
});
