/** Input images in the forms hosts take them. They are always loaded by us first (SSRF-checked). */
import { sniffMedia } from '../../../../core/media';
import { MATCH_INPUT_IMAGE, type AspectRatioChoice } from '../../../../core/models';
import type { GenerationContext, SettledRequest } from '../provider';

export async function loadInputImages(request: SettledRequest, context: GenerationContext): Promise<Buffer[]> {
	return await Promise.all((request.images ?? []).map(async (_, index) => await context.loadInputImage(index)));
}

/**
 * For hosts whose edit model takes `match_input_image` itself (Replicate's and Pruna's
 * p-image-edit: "match_input_image, 1:1, 16:9, …" in both input schemas): sent as asked, so the
 * host keeps the input's exact shape; the answer is still brought to the nearest catalog ratio.
 */
export function aspectRatioSent(request: SettledRequest): AspectRatioChoice {
	return request.matchInputImage ? MATCH_INPUT_IMAGE : request.aspect_ratio;
}

export function toDataUri(bytes: Buffer): string {
	return `data:${sniffMedia(bytes)?.mimeType ?? 'application/octet-stream'};base64,${bytes.toString('base64')}`;
}

/** A provider setting from the environment, or a start-up error that says which one is missing. */
export function requiredEnv(env: NodeJS.ProcessEnv, name: string, provider: string, model: string): string {
	const value = env[name]?.trim();
	if (!value) throw new Error(`providers: ${model}=${provider} needs ${name} in the environment`);
	return value;
}

export function baseUrl(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
	const value = (env[name]?.trim() || fallback).replace(/\/+$/, '');
	try {
		new URL(value);
	} catch {
		throw new Error(`providers: ${name} is not a URL: '${value}'`);
	}
	return value;
}
