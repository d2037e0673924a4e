/**
 * `sandbox`: the default provider. Offline and free, for development and tests; it draws the
 * request (see sandbox-render.ts) instead of running a model.
 */
import { dimensionsFor } from '../../../../core/models';
import type { GenerationProvider } from '../provider';
import { renderSandboxImage } from './sandbox-render';

export const sandboxProvider: GenerationProvider = {
	name: 'sandbox',
	async generate(request, context) {
		const inputs = await Promise.all((request.images ?? []).map((_, index) => context.loadInputImage(index)));
		context.signal.throwIfAborted();
		const bytes = await context.imageWork.run(
			(job) =>
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
			job,
				),
			{ signal: context.signal },
		);
		return [{ bytes }];
	},
};
