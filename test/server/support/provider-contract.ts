/**
 * What every GenerationProvider must do, run against each one and its loopback stand-in: answer
 * each model it serves with one image (bytes that are an image, or a URL), stop when the generation
 * is stopped (its signal aborted) instead of waiting for a slow host, turn a host's failure into our
 * error shape (a 502 whose code says `upstream_…`), and offer `resume` exactly when it says its host
 * names jobs.
 */
import { ImageGenError } from '../../../core/errors';
import { sniffMedia } from '../../../core/media';
import type { ModelId } from '../../../core/models';
import type { GenerationContext, GenerationProvider, SettledRequest } from '../../../server/src/generation/provider';
import { ImageWork } from '../../../server/src/media/image-work';
import { makeImage } from './media';

export interface ProviderUnderContract {
	/** The provider for one model, pointed at the stand-in. */
	provider(model: ModelId): GenerationProvider;
	/** The next generation's call to the host fails with HTTP 500. */
	failNext(): void;
	/** Generations take this long at the host from now on (0: none). */
	slow(ms: number): void;
}

const REQUESTS: Record<ModelId, SettledRequest> = {
	'p-image': { model: 'p-image', prompt: 'a lighthouse', aspect_ratio: '16:9', seed: 7 } as SettledRequest,
	'p-image-edit': { model: 'p-image-edit', prompt: 'at night', aspect_ratio: '1:1', images: ['input'], seed: 7 } as SettledRequest,
	'textimage-v2': { model: 'textimage-v2', prompt: 'a poster', aspect_ratio: '1:1', seed: 7 } as SettledRequest,
};

/** `models`: those the provider serves (it refuses the others at start). */
export function describeProviderContract(name: string, models: readonly ModelId[], open: () => Promise<ProviderUnderContract>): void {
	describe(`provider contract: ${name}`, () => {
		let host: ProviderUnderContract;
		let input: Buffer;
		const imageWork = new ImageWork({ maxPixels: 100_000_000 });
		const context = (signal: AbortSignal): GenerationContext => ({ signal, imageWork, loadInputImage: async () => input });

		beforeAll(async () => {
			[host, input] = await Promise.all([open(), makeImage('png', 64, 64)]);
		});
		beforeEach(() => host.slow(0));
		/** The model the stopping and failing are tried on: the first it serves. */
		const first = (): ModelId => models[0]!;

		test.each(models)('%s: one image, as bytes that are an image or a URL', async (model) => {
			const images = await host.provider(model).generate(REQUESTS[model], context(AbortSignal.timeout(10_000)));
			expect(images).toHaveLength(1);
			const [image] = images;
			if ('bytes' in image!) expect(sniffMedia(image.bytes)?.mimeType).toMatch(/^image\//);
			else expect(new URL(image!.url).protocol).toMatch(/^https?:$/);
		});

		test('a stopped generation ends at once, not when a slow host answers', async () => {
			host.slow(5_000);
			const controller = new AbortController();
			const started = Date.now();
			const running = host.provider(first()).generate(REQUESTS[first()], context(controller.signal));
			setTimeout(() => controller.abort(new Error('client gone')), 200);
			await expect(running).rejects.toThrow();
			expect(Date.now() - started).toBeLessThan(2_000);
		});

		test('a failing host: a 502 in our error shape', async () => {
			host.failNext();
			const failure = await host
				.provider(first())
				.generate(REQUESTS[first()], context(AbortSignal.timeout(10_000)))
				.catch((error: unknown) => error);
			expect(failure).toBeInstanceOf(ImageGenError);
			expect(failure).toMatchObject({ status: 502, code: expect.stringMatching(/^upstream_/) });
		});

		test('resume is offered exactly when the host names its jobs', () => {
			const provider = host.provider(first());
			expect(typeof provider.resume === 'function').toBe(provider.hasJobIds === true);
			expect(provider.name).toBe(name);
		});
	});
}
