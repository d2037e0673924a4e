/**
 * The sandbox's edits (server/src/generation/providers/sandbox-render.ts) through the running app: an edit of
 * a sandbox image shows that image transformed, under exactly one legible caption, the edit's.
 */
import sharp from 'sharp';
import { mosaicGrid } from '../../../../server/src/generation/providers/sandbox-render';
import { buildTestApp, type InProcessApp } from '../../support/app';
import { pictureDistance } from '../../support/media';

let service: InProcessApp;
beforeAll(async () => {
	service = await buildTestApp();
});
afterAll(async () => {
	await service?.close();
});

async function generate(body: Record<string, unknown>): Promise<Buffer> {
	const response = await service.request('/v1/images/generations', {
		method: 'POST',
		headers: { ...service.auth, 'content-type': 'application/json' },
		body: JSON.stringify({ aspect_ratio: '16:9', output_format: 'png', response_format: 'b64_json', ...body }),
	});
	const answer = (await response.json()) as { data: { b64_json: string }[] };
	expect(response.status).toBe(200);
	return Buffer.from(answer.data[0]!.b64_json, 'base64');
}

/** Greyscale pixels of the image's top `share` of rows. */
async function topRows(png: Buffer, share: number): Promise<{ pixels: Buffer; width: number; height: number }> {
	const { width = 0, height = 0 } = await sharp(png).metadata();
	const rows = Math.floor(height * share);
	const pixels = await sharp(png).extract({ left: 0, top: 0, width, height: rows }).greyscale().raw().toBuffer();
	return { pixels, width, height: rows };
}

/** Caption text is drawn pure white; nothing else in a sandbox picture (AUTO style) is that light. */
const textPixels = (pixels: Buffer) => pixels.filter((value) => value >= 240).length;

/** Pearson correlation of two equally long greyscale buffers. */
function correlation(a: Buffer, b: Buffer): number {
	const mean = (values: Buffer) => values.reduce((sum, value) => sum + value, 0) / values.length;
	const [ma, mb] = [mean(a), mean(b)];
	let [ab, aa, bb] = [0, 0, 0];
	for (let i = 0; i < a.length; i++) {
		ab += (a[i]! - ma) * (b[i]! - mb);
		aa += (a[i]! - ma) ** 2;
		bb += (b[i]! - mb) ** 2;
	}
	return ab / Math.sqrt(aa * bb);
}

const LONG_PROMPT = 'A lighthouse on a cliff at sunset over a stormy sea, seen from a fishing boat, with gulls, rain on the lens and a warm light in every window, watercolor';

describe('an edit of a sandbox image', () => {
	let input: Buffer;
	let edit: Buffer;
	beforeAll(async () => {
		// A long prompt: the input's caption runs far up, above where the edit's short caption ends.
		// Seeded: without one the input's colours are drawn anew each run, and how many pixels the
		// edit's tint changes would vary with them.
		input = await generate({ model: 'p-image', prompt: LONG_PROMPT, seed: 11 });
		edit = await generate({ model: 'p-image-edit', prompt: 'Snow', seed: 7, images: [input.toString('base64')] });
	});

	test('has one legible caption: none of the input\'s caption text shows above the edit\'s', async () => {
		// The edit's one-line caption band takes the bottom fifth; above it, the input's text must be gone.
		const [before, after] = await Promise.all([topRows(input, 0.75), topRows(edit, 0.75)]);
		expect(textPixels(before.pixels)).toBeGreaterThan(2_000);
		expect(textPixels(after.pixels)).toBe(0);
	});

	test('several inputs in narrow tiles: the inputs\' text is still not legible', async () => {
		const square = await generate({ model: 'p-image', prompt: LONG_PROMPT, seed: 12, aspect_ratio: '1:1' });
		const tall = await generate({ model: 'p-image-edit', prompt: 'Both', seed: 7, aspect_ratio: '9:16', images: [input.toString('base64'), square.toString('base64')] });
		expect(textPixels((await topRows(square, 0.75)).pixels)).toBeGreaterThan(2_000);
		expect(textPixels((await topRows(tall, 0.8)).pixels)).toBe(0);
	});

	test('shows the input transformed: the same layout of light and dark, other pixels', async () => {
		const small = (png: Buffer) => sharp(png).resize(64, 36, { fit: 'fill' }).greyscale().raw().toBuffer();
		const [before, after] = await Promise.all([small(input), small(edit)]);
		expect(correlation(before, after)).toBeGreaterThan(0.6);
		const { data: exact } = await sharp(edit).raw().toBuffer({ resolveWithObject: true });
		const { data: original } = await sharp(input).raw().toBuffer({ resolveWithObject: true });
		let changed = 0;
		for (let i = 0; i < exact.length; i++) if (Math.abs(exact[i]! - original[i]!) > 8) changed++;
		expect(changed / exact.length).toBeGreaterThan(0.5);
	});

	test('is the same picture for the same request (each file has its own provenance marks and watermark)', async () => {
		const again = await generate({ model: 'p-image-edit', prompt: 'Snow', seed: 7, images: [input.toString('base64')] });
		expect(await pictureDistance(again, edit)).toBeGreaterThan(30);
	});
});

describe('the mosaic grid of a tile', () => {
	test('blocks are a 36th of the input\'s short side, over the part of the input the tile shows', () => {
		expect(mosaicGrid({ width: 2048, height: 1152 }, { width: 2048, height: 1152 })).toEqual({ columns: 64, rows: 36 });
		// A narrow tile shows a narrow slice of a wide input, in blocks of the same size.
		expect(mosaicGrid({ width: 2048, height: 1152 }, { width: 576, height: 2048 })).toEqual({ columns: 10, rows: 36 });
	});

	test('follows the tile\'s shape however long and thin the input, and never has zero blocks', () => {
		expect(mosaicGrid({ width: 10, height: 10_000_000 }, { width: 1024, height: 1024 })).toEqual({ columns: 36, rows: 36 });
		expect(mosaicGrid({ width: 10_000_000, height: 10 }, { width: 576, height: 2048 })).toEqual({ columns: 10, rows: 36 });
		expect(mosaicGrid({ width: 1, height: 1 }, { width: 2048, height: 1 })).toEqual({ columns: 36, rows: 1 });
	});
});
