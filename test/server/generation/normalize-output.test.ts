/**
 * What a provider answers becomes what the caller asked for (server/src/generation/normalize-output.ts).
 * An image that already matches is passed through as it came: it never decodes, so it never waits
 * for a slot of the image queue that decoding images share.
 */
import sharp from 'sharp';
import { parseGenerationRequest } from '../../../core/schemas';
import { normalizeOutput } from '../../../server/src/generation/normalize-output';
import { ImageWork } from '../../../server/src/media/image-work';

const rejection = async (promise: Promise<unknown>) => promise.then(() => new Error('resolved'), (error: unknown) => error);

/** A queue whose only slot is taken and which lets nobody wait. */
async function fullQueue(): Promise<{ work: ImageWork; release: () => void }> {
	const work = new ImageWork({ maxPixels: 100_000_000, concurrency: 1, maxQueued: 0 });
	const release = await new Promise<() => void>((started) => void work.run(() => new Promise<void>((resolve) => started(resolve))));
	return { work, release };
}

const png = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#3050a0' } }).png().toBuffer();

test('an image that already matches passes through untouched, even while the image queue is full', async () => {
	const bytes = await png(1024, 1024);
	const { work, release } = await fullQueue();
	try {
		const request = { ...parseGenerationRequest({ model: 'p-image', prompt: 'a lighthouse', output_format: 'png' }), aspect_ratio: '1:1' as const };
		const image = await normalizeOutput(bytes, request, 'upstream', work);
		expect(image.bytes).toBe(bytes);
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
	expect((await sharp(image.bytes).metadata()).width).toBe(1024);
});
