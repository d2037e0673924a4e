/**
 * Which provider serves which model: `--providers p-image=replicate,textimage-v2=ideogram`;
 * models not listed stay on `sandbox`. Checked at start-up so a typo fails loudly, not per request.
 */
import { MODEL_IDS, isModelId, type ModelId } from '../../../core/models';
import type { GenerationSettings } from '../context';
import type { GenerationProvider } from './provider';
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

/** Throws an Error that names the wrong entry and lists what is accepted. */
export function buildProviderTable(selection: string | undefined, env: NodeJS.ProcessEnv): ProviderTable {
	const table = Object.fromEntries(MODEL_IDS.map((id) => [id, sandboxProvider])) as Record<ModelId, GenerationProvider>;
	for (const entry of (selection ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
		const match = /^([^=\s]+)\s*=\s*([^=\s]+)$/.exec(entry);
		if (!match) throw new Error(`providers: '${entry}' is not of the form <model>=<provider>`);
		const [, model, name] = match as unknown as [string, string, string];
		if (!isModelId(model)) throw new Error(`providers: unknown model '${model}' (known: ${MODEL_IDS.join(', ')})`);
		const factory = PROVIDER_FACTORIES[name];
		if (!factory) {
			throw new Error(`providers: unknown provider '${name}' for ${model} (known: ${Object.keys(PROVIDER_FACTORIES).join(', ')})`);
		}
		table[model] = factory(model, env);
	}
	return table;
}

const tables = new WeakMap<GenerationSettings, ProviderTable>();

/** One table per configuration, so the catalog we describe and the providers we run never differ. */
export function providerTableFor(settings: GenerationSettings): ProviderTable {
	let table = tables.get(settings);
	if (!table) {
		table = buildProviderTable(settings.providers, settings.env);
		tables.set(settings, table);
	}
	return table;
}
