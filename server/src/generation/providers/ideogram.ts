/**
 * `ideogram`: Ideogram's native API for textimage-v2 (model V_2).
 * Shapes from Ideogram's API reference, "Generate (legacy V_2)": POST {base}/generate with header
 * `Api-Key` and `{ image_request: { prompt, model: "V_2", aspect_ratio: "ASPECT_16_9",
 * style_type, magic_prompt_option, negative_prompt } }`; the answer is `{ created, data: [{ url,
 * prompt, resolution, is_image_safe, seed, style_type }] }` with URLs that expire, so we re-host.
 * An image that fails Ideogram's safety check is still an entry of `data`: is_image_safe false and
 * its `url` empty (the ImageObject's url is nullable), which is a content filter, not a download.
 */
import { ImageGenError } from '../../../../core/errors';
import type { ModelLimits } from '../../../../core/models';
import type { ProviderSettings } from '../../config';
import type { GenerationProvider, SettledRequest } from '../provider';
import { hostCredentials } from './host-credentials';
import { requiredSetting } from './inputs';
import { providerJson, providerRetryPolicy, type ProviderTiming } from './provider-http';

/**
 * Ideogram's documented limits: a prompt of up to 10,000 characters
 * (https://developer.ideogram.ai/api-reference/images/generate) and the ASPECT_* ratios of the
 * legacy V_2 endpoint, which include all eleven of the catalog's; nothing narrower than the
 * catalog, stated so that a change on their side is one edit here.
 */
const IDEOGRAM_LIMITS: ModelLimits = { promptMaxLength: 10_000 };

interface IdeogramAnswer {
	data?: Array<{ url?: string | null; is_image_safe?: boolean }>;
}

/** Our `16:9` is their `ASPECT_16_9`; style types and magic prompt options share our spelling. */
function ideogramImageRequest(request: SettledRequest): Record<string, unknown> {
	return {
		prompt: request.prompt,
		model: 'V_2',
		aspect_ratio: `ASPECT_${request.aspect_ratio.replace(':', '_')}`,
		style_type: request.style_type ?? 'AUTO',
		magic_prompt_option: request.magic_prompt_option ?? 'AUTO',
		...(request.negative_prompt ? { negative_prompt: request.negative_prompt } : {}),
		// image_request.seed: 0 … 2147483647 in Ideogram's V_2 reference.
		...(request.seed === undefined ? {} : { seed: request.seed }),
	};
}

export function ideogramProvider(model: string, settings: ProviderSettings['ideogram'], timing: ProviderTiming): GenerationProvider {
	if (model !== 'textimage-v2') throw new Error(`providers: ideogram serves textimage-v2 only, not ${model}`);
	const apiKey = requiredSetting(settings.apiKey, 'IDEOGRAM_API_KEY', 'ideogram', model);
	const root = settings.baseUrl;
	const retry = providerRetryPolicy(timing);
	const credentials = hostCredentials(root, { 'api-key': apiKey });
	return {
		name: 'ideogram',
		limits: IDEOGRAM_LIMITS,
		async generate(request, context) {
			const answer = await providerJson<IdeogramAnswer>({
				provider: 'ideogram',
				method: 'POST',
				url: `${root}/generate`,
				credentials,
				json: { image_request: ideogramImageRequest(request) },
				signal: context.signal,
				deadline: context.deadline,
				// "Prompt or provided image failed the safety checks" is Ideogram's one 422 (its generate reference).
				codesByStatus: { 422: 'upstream_content_filtered' },
				submit: true,
				retry,
			});
			// Only a safe image with a URL is one: an unsafe one is withheld, whatever its url says.
			const images = (answer.data ?? []).filter((image) => image.is_image_safe !== false && typeof image.url === 'string' && image.url !== '');
			if (images.length === 0) {
				const unsafe = (answer.data ?? []).some((image) => image.is_image_safe === false);
				throw new ImageGenError(502, unsafe ? 'The ideogram provider withheld the image as unsafe' : 'The ideogram provider returned no image', {
					code: unsafe ? 'upstream_content_filtered' : 'upstream_no_output',
				});
			}
			return images.map((image) => ({ url: image.url! }));
		},
	};
}
