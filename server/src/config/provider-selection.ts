/**
 * The `--providers` value, parsed without loading any provider: `p-image=replicate,textimage-v2=ideogram`
 * (unlisted models stay on `sandbox`); `p-image=pruna|replicate` is a fallback chain. The names
 * live here so that reading the configuration (`keys list`, `--help`) never loads the provider
 * registry; generation/providers.ts maps each name to its factory and the compiler keeps both in step.
 */
import { MODEL_IDS, isModelId, type ModelId } from '../../../core/models';
import { listOf } from './value-types';

export const PROVIDER_NAMES = [
	'sandbox',
	'upstream',
	'replicate',
	'pruna',
	'ideogram',
	'openai',
	'automatic1111',
	'comfyui',
] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Separates the hosts of a chain in `--providers` and in a chain's name. */
export const CHAIN_SEPARATOR = '|';

/** Which provider each listed model uses (by name, or names joined by `|` for a chain); unlisted models use `sandbox`. */
export type ProviderSelection = Partial<Record<ModelId, string>>;

/** Whether `--providers` names `provider` for some model, alone or in a chain. */
export function selectsProvider(selection: ProviderSelection | undefined, provider: ProviderName): boolean {
	return Object.values(selection ?? {}).some((chain) => chain.split(CHAIN_SEPARATOR).includes(provider));
}

const isProviderName = (name: string): name is ProviderName => (PROVIDER_NAMES as readonly string[]).includes(name);

/** Parses `--providers`; throws an Error that names the wrong entry and lists what is accepted. */
export function parseProviderSelection(text: string): ProviderSelection {
	return parseModelEntries(text, '<provider> or <model>=<provider>|<provider>…', (chain, model) => {
		const names = chain.split(CHAIN_SEPARATOR).map((name) => name.trim());
		for (const name of names) {
			if (!isProviderName(name)) throw new Error(`unknown provider '${name}' for ${model} (known: ${PROVIDER_NAMES.join(', ')})`);
		}
		if (new Set(names).size !== names.length) throw new Error(`${model} lists a provider twice in '${chain}'`);
		return names.join(CHAIN_SEPARATOR);
	});
}

/**
 * A `<model>=<value>,…` list (`--providers`, `--prices`), each value read by `valueOf`; throws an
 * Error naming an entry not of the form `<model>=<form>`, an unknown model or one listed twice.
 */
export function parseModelEntries<Value>(text: string, form: string, valueOf: (value: string, model: ModelId) => Value): Partial<Record<ModelId, Value>> {
	const entries: Partial<Record<ModelId, Value>> = {};
	for (const entry of listOf(text)) {
		const match = /^([^=\s]+)\s*=\s*([^=]+)$/.exec(entry);
		if (!match) throw new Error(`'${entry}' is not of the form <model>=${form}`);
		const [, model, value] = match as unknown as [string, string, string];
		if (!isModelId(model)) throw new Error(`unknown model '${model}' (known: ${MODEL_IDS.join(', ')})`);
		if (entries[model] !== undefined) throw new Error(`${model} is listed twice`);
		entries[model] = valueOf(value.trim(), model);
	}
	return entries;
}
