/**
 * The sandbox's opt-in delay (`--sandbox-delay-ms`), so slow generations and asynchronous jobs can
 * be tried offline: it waits that long before it draws, and a stop ends the wait at once. On Jest's
 * fake timers, and through a service built with the option.
 */
import { parseGenerationRequest } from '../../../../core/schemas';
import type { GenerationContext, SettledRequest } from '../../../../server/src/generation/provider';
import { sandboxProvider } from '../../../../server/src/generation/providers/sandbox';
import type { ImageWork } from '../../../../server/src/media/image-work';
import { buildTestApp } from '../../support/app';
import { generateIn } from '../support/generate-in';
import { ImageBytes } from '../../../../server/src/media/image-bytes';

const request: SettledRequest = { ...parseGenerationRequest({ model: 'p-image', prompt: 'A lighthouse', aspect_ratio: '16:9' }), aspect_ratio: '16:9' };

function context(signal: AbortSignal, imageWork: unknown): GenerationContext {
	return { signal, loadInputImage: () => Promise.reject(new Error('no input images here')), imageWork: imageWork as ImageWork };
}

describe('the sandbox’s delay (--sandbox-delay-ms)', () => {
	const drawn = Buffer.from('drawn');
	const drawing = () => ({ run: jest.fn(async () => drawn) });

	afterEach(() => {
		jest.useRealTimers();
	});

	test('it waits that long, then draws', async () => {
		jest.useFakeTimers();
		const imageWork = drawing();
		const generated = sandboxProvider(5_000).generate(request, context(new AbortController().signal, imageWork));
		await jest.advanceTimersByTimeAsync(4_999);
		expect(imageWork.run).not.toHaveBeenCalled();
		await jest.advanceTimersByTimeAsync(1);
		expect(await generated).toStrictEqual([ImageBytes.owned(drawn)]);
		expect(imageWork.run).toHaveBeenCalledTimes(1);
	});

	test('a stop during the wait ends it at once with the stop’s reason, and nothing is drawn', async () => {
		jest.useFakeTimers();
		const imageWork = drawing();
		const stop = new AbortController();
		const generated = sandboxProvider(600_000).generate(request, context(stop.signal, imageWork)).catch((error: unknown) => error);
		await jest.advanceTimersByTimeAsync(1_000);
		stop.abort(new Error('client went away'));
		expect(await generated).toMatchObject({ message: 'client went away' });
		expect(imageWork.run).not.toHaveBeenCalled();
		expect(jest.getTimerCount()).toBe(0);
	});

	test('the service’s sandbox takes the delay from its option; the default draws at once', async () => {
		const [slow, quick] = await Promise.all([buildTestApp(['--sandbox-delay-ms', '400']), buildTestApp()]);
		try {
			expect(slow.config.sandboxDelayMs).toBe(400);
			expect(quick.config.sandboxDelayMs).toBe(0);
			const timed = async (app: typeof slow) => {
				const started = Date.now();
				expect((await generateIn(app, { model: 'p-image', prompt: 'x', response_format: 'b64_json' })).status).toBe(200);
				return Date.now() - started;
			};
			const [slowMs, quickMs] = [await timed(slow), await timed(quick)];
			expect(slowMs).toBeGreaterThanOrEqual(400);
			expect(quickMs).toBeLessThan(slowMs);
		} finally {
			await Promise.all([slow.close(), quick.close()]);
		}
	});
});
