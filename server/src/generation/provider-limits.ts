/**
 * The catalog entry in force for each model once its provider is chosen, and the check that
 * refuses what the host cannot take before anything is sent to it: a 400 that names the field
 * and the host's limit, where the host itself would have cost a round trip and answered a 502.
 */
import { invalidField } from '../../../core/errors';
import { MATCH_INPUT_IMAGE, MODEL_IDS, MODELS, narrowSpec, type ModelId, type ModelSpec } from '../../../core/models';
import type { GenerationRequest } from '../../../core/schemas';
import type { GenerationProvider } from './provider';
import type { ProviderTable } from './providers';

export function specInForce(model: ModelId, provider: GenerationProvider): ModelSpec {
	return narrowSpec(MODELS[model], provider.limits);
}

export function specsInForce(table: ProviderTable): Record<ModelId, ModelSpec> {
	return Object.fromEntries(MODEL_IDS.map((id) => [id, specInForce(id, table[id])])) as Record<ModelId, ModelSpec>;
}

/** The request has passed the catalog's validation; this applies what the host narrows. */
export function checkProviderLimits(request: GenerationRequest, provider: GenerationProvider): void {
	if (!provider.limits) return;
	const spec = specInForce(request.model, provider);
	const host = `the ${provider.name} host that serves ${request.model} here`;
	const images = request.images?.length ?? 0;
	if (images > spec.maxInputImages) {
		throw invalidField('images', `'images' may hold at most ${spec.maxInputImages} images on ${host}; got ${images}`, 'provider_limit');
	}
	if (request.prompt.length > spec.promptMaxLength) {
		throw invalidField('prompt', `'prompt' may be at most ${spec.promptMaxLength} characters on ${host}; got ${request.prompt.length}`, 'provider_limit');
	}
	// match_input_image is settled to one of the host's own ratios (input-shape.ts).
	if (request.aspect_ratio !== MATCH_INPUT_IMAGE && !spec.aspectRatios.includes(request.aspect_ratio)) {
		throw invalidField('aspect_ratio', `'aspect_ratio' must be one of ${spec.aspectRatios.join(', ')} on ${host}; got '${request.aspect_ratio}'`, 'provider_limit');
	}
}
