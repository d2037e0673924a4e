/**
 * Which provider serves which model: `--providers p-image=replicate,textimage-v2=ideogram`;
 * models not listed stay on `sandbox`. `p-image=pruna|replicate` is a fallback chain
 * (provider-chain.ts). Checked at start-up so a typo fails loudly, not per request.
 */
import { MODEL_IDS, isModelId, type ModelId } from '../../../core/models';
import type { GenerationProvider } from './provider';
import { CHAIN_SEPARATOR, providerChain } from './provider-chain';
import { ideogramProvider } from './providers/ideogram';
import { prunaProvider } from './providers/pruna';
import { replicateProvider } from './providers/replicate';
import { upstreamProvider } from './providers/upstream';
import { sandboxProvider } from './sandbox-provider';

/** Builds a provider for one model; throws at start-up when its configuration is incomplete. */
export type ProviderFactory = (model: ModelId, env: NodeJS.ProcessEnv) => GenerationProvider;

export const PROVIDER_FACTORIES: Readonly<Record<string, ProviderFactory>> = {
	sandbox: () => sandboxProvider,
	upstream: upstreamProvider,
	replicate: replicateProvider,
	pruna: prunaProvider,
	ideogram: ideogramProvider,
};

export type ProviderTable = Readonly<Record<ModelId, GenerationProvider>>;

/** Which provider each listed model uses (by name, or names joined by `|` for a chain); unlisted models use `sandbox`. */
export type ProviderSelection = Partial<Record<ModelId, string>>;

/** Parses `--providers`; throws an Error that names the wrong entry and lists what is accepted. */
export function parseProviderSelection(text: string): ProviderSelection {
	const selection: ProviderSelection = {};
	for (const entry of text.split(',').map((part) => part.trim()).filter(Boolean)) {
		const match = /^([^=\s]+)\s*=\s*([^=]+)$/.exec(entry);
		if (!match) throw new Error(`'${entry}' is not of the form <model>=<provider> or <model>=<provider>|<provider>…`);
		const [, model, chain] = match as unknown as [string, string, string];
		if (!isModelId(model)) throw new Error(`unknown model '${model}' (known: ${MODEL_IDS.join(', ')})`);
		if (selection[model] !== undefined) throw new Error(`${model} is listed twice`);
		const names = chain.split(CHAIN_SEPARATOR).map((name) => name.trim());
		for (const name of names) {
			if (!PROVIDER_FACTORIES[name]) {
				throw new Error(`unknown provider '${name}' for ${model} (known: ${Object.keys(PROVIDER_FACTORIES).join(', ')})`);
			}
		}
		if (new Set(names).size !== names.length) throw new Error(`${model} lists a provider twice in '${chain.trim()}'`);
		selection[model] = names.join(CHAIN_SEPARATOR);
	}
	return selection;
}

/** Builds the providers once; throws when one's settings in `env` are incomplete (a start-up error). */
export function buildProviderTable(selection: ProviderSelection, env: NodeJS.ProcessEnv): ProviderTable {
	const table = Object.fromEntries(MODEL_IDS.map((id) => [id, sandboxProvider])) as Record<ModelId, GenerationProvider>;
	for (const model of MODEL_IDS) {
		const name = selection[model];
		if (name !== undefined) table[model] = providerChain(name.split(CHAIN_SEPARATOR).map((member) => PROVIDER_FACTORIES[member]!(model, env)));
	}
	return table;
}
