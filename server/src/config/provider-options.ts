/**
 * The settings of the hosts `--providers` can name, one option row each (see option-row.ts). Their
 * variables keep the names operators already use (REPLICATE_API_TOKEN, OPENAI_BASE_URL, …), a
 * credential has its variable only, and a row is read only when `--providers` names its provider.
 * generation/providers.ts builds the providers from what providerSettings assembles here, and
 * refuses there a provider whose required settings are missing.
 */
import type { ImageSize } from '../../../core/openai-images';
import { MODEL_IDS, type ModelId } from '../../../core/models';
import { option } from './option-row';
import { parseModelEntries, type ProviderName } from './provider-selection';
import type { OptionValues } from './read-options';
import { isHttpUrl, mustBe, onOff, oneOf, parsedBy, text, wholeNumber } from './value-types';

/** What each host is reached with; a setting a host cannot do without is undefined when not given. */
export interface ProviderSettings {
	upstream: { baseUrl?: string; apiKey?: string };
	replicate: { apiToken?: string; baseUrl: string; modelVersions: Partial<Record<ModelId, string>> };
	pruna: { apiKey?: string; baseUrl: string };
	ideogram: { apiKey?: string; baseUrl: string };
	openai: { baseUrl: string; apiKey?: string; server: OpenAiServer; imageModel: string; imageSizes?: ImageSize[]; negativePrompt: boolean };
	automatic1111: { baseUrl?: string; steps?: number; apiAuth?: string };
	comfyui: { baseUrl?: string };
}

/** Which API the openai provider speaks: OpenAI's own (and gateways that copy it), or LocalAI's version of it. */
export const OPENAI_SERVERS = ['openai', 'localai'] as const;
export type OpenAiServer = (typeof OPENAI_SERVERS)[number];

/** A host's base URL; one without a default is required by its provider (generation/providers.ts says so at start). */
function baseUrlRow<const Flag extends string, Default extends string | undefined>(flag: Flag, env: string, provider: ProviderName, defaultUrl: Default, help: string) {
	const required = defaultUrl === undefined ? { defaultText: `(required with ${provider})` } : {};
	return option<Flag, string | Default>({ flag, env, provider, placeholder: '<url>', type: mustBe('an http(s) URL', isHttpUrl), default: defaultUrl, ...required, help });
}

/** A key or token: taken as given (any text), and never part of a message. */
function credentialRow<const Flag extends string>(flag: Flag, env: string, provider: ProviderName, help: string, defaultText = `(required with ${provider})`) {
	return option<Flag, string | undefined>({ flag, env, provider, environmentOnly: true, type: text, default: undefined, defaultText, help });
}

export const PROVIDER_OPTIONS = [
	baseUrlRow('upstream-base-url', 'UPSTREAM_BASE_URL', 'upstream', undefined, 'Base URL of the host implementing this API for the upstream provider (ends in /v1)'),
	credentialRow('upstream-api-key', 'UPSTREAM_API_KEY', 'upstream', 'API key the upstream provider sends to that host'),
	credentialRow('replicate-api-token', 'REPLICATE_API_TOKEN', 'replicate', 'Replicate API token of the replicate provider'),
	baseUrlRow('replicate-base-url', 'REPLICATE_BASE_URL', 'replicate', 'https://api.replicate.com/v1', "Base URL of Replicate's API"),
	option({
		flag: 'replicate-model-versions',
		env: 'REPLICATE_MODEL_VERSIONS',
		provider: 'replicate',
		placeholder: '<spec>',
		type: parsedBy(parseModelVersions),
		default: {} as Partial<Record<ModelId, string>>,
		defaultText: "(each model's official-model route)",
		help: 'Replicate model version per model, e.g. p-image=owner/name:<64-hex version id>, for a model (a fork, a fine-tune) without an official-model route',
	}),
	credentialRow('pruna-api-key', 'PRUNA_API_KEY', 'pruna', "API key of Pruna's P-API for the pruna provider"),
	baseUrlRow('pruna-base-url', 'PRUNA_BASE_URL', 'pruna', 'https://api.pruna.ai/v1', "Base URL of Pruna's P-API"),
	credentialRow('ideogram-api-key', 'IDEOGRAM_API_KEY', 'ideogram', "API key of Ideogram's API for the ideogram provider"),
	baseUrlRow('ideogram-base-url', 'IDEOGRAM_BASE_URL', 'ideogram', 'https://api.ideogram.ai', "Base URL of Ideogram's API"),
	baseUrlRow('openai-base-url', 'OPENAI_BASE_URL', 'openai', 'https://api.openai.com/v1', 'Base URL of the OpenAI-compatible images API (OpenAI, LocalAI, a gateway)'),
	credentialRow('openai-api-key', 'OPENAI_API_KEY', 'openai', 'API key the openai provider sends (hosts on a private network often take none)', '(required with OpenAI itself)'),
	option({ flag: 'openai-server', env: 'OPENAI_SERVER', provider: 'openai', type: oneOf(OPENAI_SERVERS), default: 'openai' as OpenAiServer, help: "The server behind OPENAI_BASE_URL: openai (OpenAI, gateways that copy its API) or localai (LocalAI: no /images/edits, the negative prompt after '|', seed)" }),
	option({ flag: 'openai-image-model', env: 'OPENAI_IMAGE_MODEL', provider: 'openai', placeholder: '<model>', type: text, default: 'gpt-image-1', help: 'Model the openai provider asks that host for' }),
	option({
		flag: 'openai-image-sizes',
		env: 'OPENAI_IMAGE_SIZES',
		provider: 'openai',
		placeholder: '<sizes>',
		type: parsedBy(parseImageSizes),
		default: undefined as ImageSize[] | undefined,
		defaultText: "(the model's: dall-e-3 1024x1024,1792x1024,1024x1792, dall-e-2 1024x1024, any other gpt-image-1's 1024x1024,1536x1024,1024x1536)",
		help: 'Sizes (WIDTHxHEIGHT) that host takes; the one nearest the asked ratio is sent',
	}),
	option({ flag: 'openai-negative-prompt', env: 'OPENAI_NEGATIVE_PROMPT', provider: 'openai', type: onOff, default: false, help: 'Send negative_prompt as a field, to a gateway that takes one (OpenAI refuses unknown fields; LocalAI ignores it and reads the prompt after |, see --openai-server)' }),
	baseUrlRow('a1111-base-url', 'A1111_BASE_URL', 'automatic1111', undefined, 'Base URL of the Stable Diffusion WebUI (AUTOMATIC1111, Forge) started with --api'),
	option({ flag: 'a1111-steps', env: 'A1111_STEPS', provider: 'automatic1111', type: wholeNumber(1, 150), default: undefined, defaultText: "(20, the WebUI form's default)", help: 'Sampling steps asked of the WebUI (1 to 150)' }),
	option({
		flag: 'a1111-api-auth',
		env: 'A1111_API_AUTH',
		provider: 'automatic1111',
		environmentOnly: true,
		type: mustBe("user:password, as given to the WebUI's --api-auth", (auth) => auth.includes(':'), true),
		default: undefined,
		defaultText: '(none)',
		help: "user:password of the WebUI's --api-auth",
	}),
	baseUrlRow('comfyui-base-url', 'COMFYUI_BASE_URL', 'comfyui', undefined, 'Base URL of the ComfyUI server, e.g. http://127.0.0.1:8188'),
] as const;

type Values = OptionValues<typeof PROVIDER_OPTIONS>;

/** A base URL as the providers join paths to it: without a trailing slash. */
const root = <Url extends string | undefined>(url: Url): Url => url?.replace(/\/+$/, '') as Url;

export function providerSettings(values: Values): ProviderSettings {
	return {
		upstream: { baseUrl: root(values['upstream-base-url']), apiKey: values['upstream-api-key'] },
		replicate: { apiToken: values['replicate-api-token'], baseUrl: root(values['replicate-base-url']), modelVersions: values['replicate-model-versions'] },
		pruna: { apiKey: values['pruna-api-key'], baseUrl: root(values['pruna-base-url']) },
		ideogram: { apiKey: values['ideogram-api-key'], baseUrl: root(values['ideogram-base-url']) },
		openai: {
			baseUrl: root(values['openai-base-url']),
			apiKey: values['openai-api-key'],
			server: values['openai-server'],
			imageModel: values['openai-image-model'],
			imageSizes: values['openai-image-sizes'],
			negativePrompt: values['openai-negative-prompt'],
		},
		automatic1111: { baseUrl: root(values['a1111-base-url']), steps: values['a1111-steps'], apiAuth: values['a1111-api-auth'] },
		comfyui: { baseUrl: root(values['comfyui-base-url']) },
	};
}

/** `owner/name:version_id` (the id is 64 hex digits), or the bare version id. */
const VERSION_PATTERN = /^(?:[\w.-]+\/[\w.-]+:)?[0-9a-f]{64}$/;

/** `p-image=owner/name:version_id,…`: the version each listed model runs as on Replicate. */
function parseModelVersions(text: string): Partial<Record<ModelId, string>> {
	return parseModelEntries(text, 'owner/name:version', (version, model) => {
		if (!VERSION_PATTERN.test(version)) throw new Error(`${model} must be owner/name:version (a 64-digit hex version id); got '${version}'`);
		return version;
	}, MODEL_IDS);
}

/** `WIDTHxHEIGHT` entries separated by commas; the error names a bad one. */
export function parseImageSizes(text: string): ImageSize[] {
	const sizes = text
		.split(',')
		.map((entry) => entry.trim())
		.filter(Boolean)
		.map((entry) => {
			const match = /^(\d{1,5})x(\d{1,5})$/.exec(entry);
			const size = match ? { width: Number(match[1]), height: Number(match[2]) } : undefined;
			if (!size || size.width === 0 || size.height === 0) throw new Error(`'${entry}' is not WIDTHxHEIGHT (e.g. 1024x1024)`);
			return size;
		});
	if (sizes.length === 0) throw new Error('lists no size');
	return sizes;
}
