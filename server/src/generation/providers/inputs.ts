/** Input images in the forms hosts take them. They are always loaded by us first (SSRF-checked). */
import { FormData } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { sniffMedia } from '../../../../core/media';
import { MATCH_INPUT_IMAGE, type AspectRatioChoice } from '../../../../core/models';
import type { GenerationContext, SettledRequest } from '../provider';
import type { HostCredentials } from './host-credentials';
import { providerJson, type HostRetryPolicy } from './provider-http';

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

export interface FilesApi {
	provider: string;
	/** The host's files route, e.g. `https://api.replicate.com/v1/files`. */
	url: string;
	credentials: HostCredentials;
	retry: HostRetryPolicy;
	signal: AbortSignal;
	deadline?: number;
}

/**
 * Uploads one input image to a host's files API, as Replicate's (POST /v1/files) and Pruna's
 * (POST /v1/files) both take it: multipart with the file in part `content`; the answer's
 * `urls.get` (Pruna: or `url`) is where the host's model reads it. An upload is no billable work:
 * it prepares the job, so it is retried like a poll and a refusal proves nothing was made (a
 * fallback chain may try the next host).
 */
export async function uploadInputImage(bytes: Buffer, index: number, api: FilesApi): Promise<string> {
	const form = new FormData();
	const type = sniffMedia(bytes)?.mimeType ?? 'application/octet-stream';
	form.append('content', new Blob([bytes], { type }), `input-${index}.${type.split('/')[1] ?? 'bin'}`);
	const file = await providerJson<{ url?: unknown; urls?: { get?: unknown } }>({ provider: api.provider, method: 'POST', url: api.url, credentials: api.credentials, form, signal: api.signal, deadline: api.deadline, retry: api.retry, prepares: true });
	const url = file.urls?.get ?? file.url;
	if (typeof url !== 'string' || !url) {
		throw new ImageGenError(502, `The ${api.provider} provider accepted an input image but returned no URL for it`, { code: 'upstream_invalid_output' });
	}
	return url;
}

/**
 * A setting the provider cannot do without (config/provider-options.ts), or a start-up error that
 * names it: `name` as the operator sets it, e.g. `REPLICATE_API_TOKEN`.
 */
export function requiredSetting(value: string | undefined, name: string, provider: string, model: string): string {
	if (!value) throw new Error(`providers: ${model}=${provider} needs ${name}`);
	return value;
}
