/**
 * `upstream`: any host implementing this same API (the hosted service, another imagegen-server).
 * Request and answer shapes are ours (core/schemas.ts, core/api.ts): the validated request is
 * forwarded with its input images inlined as data URIs, because the upstream cannot reach what we
 * can (loopback, private networks), and asked for `b64_json`, which saves a second download.
 */
import { ImageGenError } from '../../../../core/errors';
import type { ProviderSettings } from '../../config';
import { ImageBytes } from '../../media/image-bytes';
import type { GenerationProvider, ProviderImage } from '../provider';
import { hostCredentials } from './host-credentials';
import { loadInputImages, requiredSetting } from './inputs';
import { dataUri } from './json-body';
import { base64Bytes } from './image-json';
import { providerImageJson, providerRetryPolicy, type ProviderTiming } from './provider-http';

/** Our own answer (core/api.ts) as the reader gives it: a long `b64_json` arrives decoded. */
interface UpstreamAnswer {
	data?: Array<{ b64_json?: string | Buffer; url?: unknown }>;
}

export function upstreamProvider(model: string, settings: ProviderSettings['upstream'], timing: ProviderTiming): GenerationProvider {
	const root = requiredSetting(settings.baseUrl, 'UPSTREAM_BASE_URL (--upstream-base-url)', 'upstream', model);
	const apiKey = requiredSetting(settings.apiKey, 'UPSTREAM_API_KEY', 'upstream', model);
	const retry = providerRetryPolicy(timing);
	const credentials = hostCredentials(root, { authorization: `Bearer ${apiKey}` });
	return {
		name: 'upstream',
		async generate(request, context) {
			const images = request.images ? (await loadInputImages(request, context)).map(dataUri) : undefined;
			const answer = await providerImageJson<UpstreamAnswer>({
				provider: 'upstream',
				method: 'POST',
				url: `${root}/images/generations`,
				credentials,
				// The settled ratio, which any version of this API takes; our own flag is not a field of it (undefined is not written).
				json: { ...request, matchInputImage: undefined, ...(images ? { images } : {}), response_format: 'b64_json' },
				signal: context.signal,
				deadline: context.deadline,
				retry,
				submit: true,
			});
			if (!Array.isArray(answer?.data)) {
				throw new ImageGenError(502, 'The upstream provider answered without a data array', { code: 'upstream_invalid_output' });
			}
			return answer.data.map<ProviderImage>((image) =>
				'b64_json' in image ? ImageBytes.owned(base64Bytes(image.b64_json) ?? Buffer.alloc(0)) : { url: image.url as string },
			);
		},
	};
}
