/**
 * `sandbox`: the default provider. Offline and free, for development and tests; it draws the
 * request (see sandbox-render.ts) instead of running a model. `--sandbox-delay-ms` makes it wait
 * that long first, like a host that takes its time, so slow generations and asynchronous jobs can be
 * tried offline; the wait ends early when the generation is stopped.
 */
import { dimensionsFor } from '../../../../core/models';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationProvider } from '../provider';
import { renderSandboxImage } from './sandbox-render';

export function sandboxProvider(delayMs = 0): GenerationProvider {
	return {
		name: 'sandbox',
		async generate(request, context) {
			if (delayMs > 0) await pause(delayMs, context.signal);
			const inputs = await Promise.all((request.images ?? []).map((_, index) => context.loadInputImage(index)));
			context.signal.throwIfAborted();
			const bytes = await context.imageWork.run(
				(task) =>
					renderSandboxImage(
						{
							model: request.model,
							prompt: request.prompt,
							...dimensionsFor(request.aspect_ratio),
							styleType: request.style_type,
							negativePrompt: request.negative_prompt,
							magicPromptOption: request.magic_prompt_option,
							seed: request.seed ?? 0,
							inputs,
						},
						request.output_format,
						task,
					),
				{ signal: context.signal },
			);
			return [ImageBytes.owned(bytes)];
		},
	};
}

/**
 * Waits `ms`, or throws the signal's reason as soon as it aborts. On the global timers (not
 * node:timers/promises), so a test's fake clock moves it.
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
	signal.throwIfAborted();
	return new Promise((resolve, reject) => {
		const stop = () => {
			clearTimeout(timer);
			reject(signal.reason);
		};
		const timer = setTimeout(() => {
			signal.removeEventListener('abort', stop);
			resolve();
		}, ms);
		signal.addEventListener('abort', stop, { once: true });
	});
}
