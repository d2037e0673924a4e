/**
 * What a provider answers becomes what the caller asked for (server/src/generation/normalize-output.ts).
 * An image that already matches is passed through as it came: it never decodes, so it never waits
 * for a slot of the image queue that decoding images share. One about to be watermarked comes out as
 * its fitted pixels (`asPixels`), which the marking encodes once.
 */
import sharp from 'sharp';
import { parseGenerationRequest } from '../../../core/schemas';
import { normalizeOutput, type FinishedImage } from '../../../server/src/generation/normalize-output';
import { ImageWork } from '../../../server/src/media/image-work';

const rejection = async (promise: Promise<unknown>) => promise.then(() => new Error('resolved'), (error: unknown) => error);

/** A queue whose only slot is taken and which lets nobody wait. */
async function fullQueue(): Promise<{ work: ImageWork; release: () => void }> {
	const work = new ImageWork({ maxPixels: 100_000_000, concurrency: 1, maxQueued: 0 });
	const release = await new Promise<() => void>((started) => void work.run(() => new Promise<void>((resolve) => started(resolve))));
	return { work, release };
}

/** The image's encoded bytes: this test expects no pixels. */
function bytesOf(image: FinishedImage): Buffer {
	if (!('bytes' in image)) throw new Error('pixels answered where bytes were expected');
	return image.bytes;
}

const png = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#3050a0' } }).png().toBuffer();

test('an image that already matches passes through untouched, even while the image queue is full', async () => {
	const bytes = await png(1024, 1024);
	const { work, release } = await fullQueue();
	try {
		const request = { ...parseGenerationRequest({ model: 'p-image', prompt: 'a lighthouse', output_format: 'png' }), aspect_ratio: '1:1' as const };
		const image = await normalizeOutput(bytes, request, 'upstream', work);
		expect(bytesOf(image)).toBe(bytes);
		expect(image.changes).toEqual([]);
		expect(image.media.type).toBe('png');
		expect(work.load).toEqual({ running: 1, waiting: 0 });
	} finally {
		release();
	}
});

test('an image that needs work still takes its turn in the queue: a full queue is a 503 image_work_busy', async () => {
	const bytes = await png(512, 512);
	const { work, release } = await fullQueue();
	try {
		const request = { ...parseGenerationRequest({ model: 'p-image', prompt: 'a lighthouse', output_format: 'png' }), aspect_ratio: '1:1' as const };
		expect(await rejection(normalizeOutput(bytes, request, 'upstream', work))).toMatchObject({ status: 503, code: 'image_work_busy' });
	} finally {
		release();
	}
});

test('a JPEG asked for as PNG is converted, and says so', async () => {
	const bytes = await sharp({ create: { width: 1024, height: 1024, channels: 3, background: '#3050a0' } }).jpeg().toBuffer();
	const request = { ...parseGenerationRequest({ model: 'p-image', prompt: 'a lighthouse', output_format: 'png' }), aspect_ratio: '1:1' as const };
	const image = await normalizeOutput(bytes, request, 'upstream', new ImageWork({ maxPixels: 100_000_000 }));
	expect(image.media.type).toBe('png');
	expect(image.changes).toEqual(['converted']);
	expect((await sharp(bytesOf(image)).metadata()).width).toBe(1024);
});

describe('asPixels: an image to be watermarked', () => {
	const request = (output_format: 'png' | 'jpeg') => ({ ...parseGenerationRequest({ model: 'p-image', prompt: 'a lighthouse', output_format }), aspect_ratio: '1:1' as const });
	const work = () => new ImageWork({ maxPixels: 100_000_000 });

	test('that must be fitted comes out as its fitted pixels, not encoded, and says what changed', async () => {
		const image = await normalizeOutput(await png(512, 384), request('png'), 'upstream', work(), { asPixels: true });
		if (!('pixels' in image)) throw new Error('bytes answered where pixels were expected');
		expect(image.pixels.info).toEqual({ width: 1024, height: 1024, channels: 3 });
		expect(image.pixels.data.byteLength).toBe(1024 * 1024 * 3);
		expect(image.media.type).toBe('png');
		expect(image.changes).toEqual(['resized']);
	});

	test('as JPEG: its transparency already on white, as the JPEG encode would put it', async () => {
		const clear = await sharp({ create: { width: 512, height: 512, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).png().toBuffer();
		const image = await normalizeOutput(clear, request('jpeg'), 'upstream', work(), { asPixels: true });
		if (!('pixels' in image)) throw new Error('bytes answered where pixels were expected');
		expect(image.pixels.info.channels).toBe(3);
		expect([...image.pixels.data.subarray(0, 6)]).toEqual([255, 255, 255, 255, 255, 255]);
		expect(image.media.type).toBe('jpeg');
		expect(image.changes).toEqual(['converted', 'resized']);
	});

	test('that already matches still passes through as it came', async () => {
		const bytes = await png(1024, 1024);
		expect(bytesOf(await normalizeOutput(bytes, request('png'), 'upstream', work(), { asPixels: true }))).toBe(bytes);
	});
});
