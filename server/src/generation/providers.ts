/**
 * Which provider serves which model: `--providers p-image=replicate,textimage-v2=ideogram`;
 * models not listed stay on `sandbox`. `p-image=pruna|replicate` is a fallback chain
 * (provider-chain.ts). The value, and each host's settings, are parsed (and a typo refused) with
 * the configuration, in config/provider-selection.ts and config/provider-options.ts; this module
 * builds the providers it names.
 */
import { MODEL_IDS, type ModelId } from '../../../core/models';
import type { ServiceConfig } from '../config';
import { CHAIN_SEPARATOR, type ProviderName } from '../config/provider-selection';
import type { GenerationProvider } from './provider';
import { providerChain } from './provider-chain';
import { automatic1111Provider } from './providers/automatic1111';
import { comfyuiProvider } from './providers/comfyui';
import { ideogramProvider } from './providers/ideogram';
import { openaiProvider } from './providers/openai';
import type { ProviderTiming } from './providers/provider-http';
import { prunaProvider } from './providers/pruna';
import { replicateProvider } from './providers/replicate';
import { upstreamProvider } from './providers/upstream';
import { sandboxProvider } from './providers/sandbox';
import { tracedProvider } from './traced-provider';

/** What the providers are built from: the parsed configuration's provider options. */
export type ProviderConfig = Pick<ServiceConfig, 'providerSelection' | 'providerSettings' | 'sandboxDelayMs' | 'comfyuiWorkflows' | 'allowPrivateUrls'>;

export type { ProviderTiming };

/** Builds a provider for one model; throws at start-up when its configuration is incomplete. */
type ProviderFactory = (model: ModelId, config: ProviderConfig, timing: ProviderTiming) => GenerationProvider;

const PROVIDER_FACTORIES: Readonly<Record<ProviderName, ProviderFactory>> = {
	sandbox: (_model, config) => sandboxProvider(config.sandboxDelayMs),
	upstream: (model, config, timing) => upstreamProvider(model, config.providerSettings.upstream, timing),
	replicate: (model, config, timing) => replicateProvider(model, config.providerSettings.replicate, timing),
	pruna: (model, config, timing) => prunaProvider(model, config.providerSettings.pruna, timing),
	ideogram: (model, config, timing) => ideogramProvider(model, config.providerSettings.ideogram, timing),
	openai: (model, config, timing) => openaiProvider(model, config.providerSettings.openai, timing),
	automatic1111: (model, config, timing) => automatic1111Provider(model, config.providerSettings.automatic1111, timing),
	comfyui: (model, config, timing) => comfyuiProvider(model, config.providerSettings.comfyui, config.comfyuiWorkflows[model], timing),
};

export type ProviderTable = Readonly<Record<ModelId, GenerationProvider>>;

/**
 * Builds the providers once, at start (the CLI, or createService for a caller that built none);
 * throws an Error naming the setting when a selected provider lacks one it needs. `timing` is the
 * hosts' pace unless a caller in process sets it.
 */
export function buildProviderTable(config: ProviderConfig, timing: ProviderTiming = {}): ProviderTable {
	const sandbox = sandboxProvider(config.sandboxDelayMs);
	const hosts: ProviderTiming = { allowPrivateRedirects: config.allowPrivateUrls, ...timing };
	const table = Object.fromEntries(MODEL_IDS.map((model) => [model, tracedProvider(sandbox, { model, outputType: 'image' })])) as Record<ModelId, GenerationProvider>;
	for (const model of MODEL_IDS) {
		const name = config.providerSelection[model];
		if (name !== undefined) table[model] = providerChain(name.split(CHAIN_SEPARATOR).map((member) => hostOf(member as ProviderName, model, config, hosts)));
	}
	return table;
}

/** A member of a model's chain, each of its calls traced (traced-provider.ts). */
function hostOf(name: ProviderName, model: ModelId, config: ProviderConfig, timing: ProviderTiming): GenerationProvider {
	const settings: { baseUrl?: string } | undefined = name === 'sandbox' ? undefined : config.providerSettings[name];
	return tracedProvider(PROVIDER_FACTORIES[name](model, config, timing), { model, outputType: 'image', ...(settings?.baseUrl !== undefined && { baseUrl: settings.baseUrl }) });
}
