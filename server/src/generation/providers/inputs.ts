/** Input images in the forms hosts take them. They are always loaded by us first (SSRF-checked). */
import { sniffMedia } from '../../../../core/media';
import type { GenerationRequest } from '../../../../core/schemas';
import type { GenerationContext } from '../provider';

export async function loadInputImages(request: GenerationRequest, context: GenerationContext): Promise<Buffer[]> {
	return await Promise.all((request.images ?? []).map(async (_, index) => await context.loadInputImage(index)));
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
