/**
 * Which provider serves which model: `--providers p-image=replicate,textimage-v2=ideogram`;
 * models not listed stay on `sandbox`. `p-image=pruna|replicate` is a fallback chain
 * (provider-chain.ts). The value is parsed (and a typo refused) with the configuration, in
 * config/provider-selection.ts; this module builds the providers it names.
 */
import { MODEL_IDS, type ModelId } from '../../../core/models';
import { CHAIN_SEPARATOR, type ProviderName, type ProviderSelection } from '../config/provider-selection';
import type { GenerationProvider } from './provider';
import { providerChain } from './provider-chain';
import { automatic1111Provider } from './providers/automatic1111';
import { comfyuiProvider } from './providers/comfyui';
import { ideogramProvider } from './providers/ideogram';
import { openaiProvider } from './providers/openai';
import { prunaProvider } from './providers/pruna';
import { replicateProvider } from './providers/replicate';
import { upstreamProvider } from './providers/upstream';
import { sandboxProvider } from './providers/sandbox';

/** What the service's options say about providers (the rest of their settings live in the environment). */
interface ProviderOptions {
	/** `--sandbox-delay-ms`: how long the sandbox waits before it draws. */
	sandboxDelayMs?: number;
	/** `--comfyui-workflow`: the workflow file (resolved path) of each model the comfyui provider serves. */
	comfyuiWorkflows?: Partial<Record<ModelId, string>>;
}

/** Builds a provider for one model; throws at start-up when its configuration is incomplete. */
type ProviderFactory = (model: ModelId, env: NodeJS.ProcessEnv, options: ProviderOptions) => GenerationProvider;

const PROVIDER_FACTORIES: Readonly<Record<ProviderName, ProviderFactory>> = {
	sandbox: (_model, _env, options) => sandboxProvider(options.sandboxDelayMs),
	upstream: upstreamProvider,
	replicate: replicateProvider,
	pruna: prunaProvider,
	ideogram: ideogramProvider,
	openai: openaiProvider,
	automatic1111: automatic1111Provider,
	comfyui: (model, env, options) => comfyuiProvider(model, env, options.comfyuiWorkflows?.[model]),
};

export type ProviderTable = Readonly<Record<ModelId, GenerationProvider>>;

/** Builds the providers once; throws when one's settings in `env` are incomplete (a start-up error). */
export function buildProviderTable(selection: ProviderSelection, env: NodeJS.ProcessEnv, options: ProviderOptions = {}): ProviderTable {
	const sandbox = sandboxProvider(options.sandboxDelayMs);
	const table = Object.fromEntries(MODEL_IDS.map((id) => [id, sandbox])) as Record<ModelId, GenerationProvider>;
	for (const model of MODEL_IDS) {
		const name = selection[model];
		if (name !== undefined) table[model] = providerChain(name.split(CHAIN_SEPARATOR).map((member) => PROVIDER_FACTORIES[member as ProviderName](model, env, options)));
	}
	return table;
}
