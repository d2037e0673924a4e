/**
 * The `--providers` value, parsed without loading any provider: `p-image=replicate,textimage-v2=ideogram`
 * (unlisted models stay on `sandbox`); `p-image=pruna|replicate` is a fallback chain. The names
 * live here so that reading the configuration (`keys list`, `--help`) never loads the provider
 * registry; generation/providers.ts and video/video-providers.ts map each name to its factory and
 * the compiler keeps them in step.
 */
import { CATALOG_MODEL_IDS, isCatalogModelId, isVideoModelId, type CatalogModelId } from '../../../core/video-models';
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

/**
 * The hosts that run p-video: Pruna itself, Replicate (prunaai/p-video), another server with this
 * API's videos routes, and the sandbox. The others (Ideogram, OpenAI's images, a WebUI, ComfyUI)
 * make no video.
 */
export const VIDEO_PROVIDER_NAMES = ['sandbox', 'upstream', 'replicate', 'pruna'] as const satisfies readonly ProviderName[];
export type VideoProviderName = (typeof VIDEO_PROVIDER_NAMES)[number];

/** Every model of the catalog, images and videos, is what `--providers` and `--prices` may list. */
export { CATALOG_MODEL_IDS, type CatalogModelId };

/** Separates the hosts of a chain in `--providers` and in a chain's name. */
export const CHAIN_SEPARATOR = '|';

/** Which provider each listed model uses (by name, or names joined by `|` for a chain); unlisted models use `sandbox`. */
export type ProviderSelection = Partial<Record<CatalogModelId, string>>;

/** Whether `--providers` names `provider` for some model, alone or in a chain. */
export function selectsProvider(selection: ProviderSelection | undefined, provider: ProviderName): boolean {
	return Object.values(selection ?? {}).some((chain) => chain.split(CHAIN_SEPARATOR).includes(provider));
}

const isProviderName = (name: string): name is ProviderName => (PROVIDER_NAMES as readonly string[]).includes(name);
export const isVideoProviderName = (name: string): name is VideoProviderName => (VIDEO_PROVIDER_NAMES as readonly string[]).includes(name);

/** Parses `--providers`; throws an Error that names the wrong entry and lists what is accepted. */
export function parseProviderSelection(text: string): ProviderSelection {
	return parseModelEntries(text, '<provider> or <model>=<provider>|<provider>…', (chain, model) => {
		const names = chain.split(CHAIN_SEPARATOR).map((name) => name.trim());
		for (const name of names) {
			if (!isProviderName(name)) throw new Error(`unknown provider '${name}' for ${model} (known: ${PROVIDER_NAMES.join(', ')})`);
			if (isVideoModelId(model) && !isVideoProviderName(name)) {
				throw new Error(`${name} makes no video: ${model} is served by ${VIDEO_PROVIDER_NAMES.join(', ')}`);
			}
		}
		if (new Set(names).size !== names.length) throw new Error(`${model} lists a provider twice in '${chain}'`);
		return names.join(CHAIN_SEPARATOR);
	});
}

/**
 * A `<model>=<value>,…` list (`--providers`, `--prices`), each value read by `valueOf`; throws an
 * Error naming an entry not of the form `<model>=<form>`, an unknown model or one listed twice.
 * Any model of the catalog, image or video, unless `models` names fewer (a setting only image
 * hosts have, such as a ComfyUI workflow, passes MODEL_IDS).
 */
export function parseModelEntries<Value>(text: string, form: string, valueOf: (value: string, model: CatalogModelId) => Value): Partial<Record<CatalogModelId, Value>>;
export function parseModelEntries<Value, Model extends CatalogModelId>(
	text: string,
	form: string,
	valueOf: (value: string, model: Model) => Value,
	models: readonly Model[],
): Partial<Record<Model, Value>>;
export function parseModelEntries<Value>(
	text: string,
	form: string,
	valueOf: (value: string, model: CatalogModelId) => Value,
	models: readonly CatalogModelId[] = CATALOG_MODEL_IDS,
): Partial<Record<CatalogModelId, Value>> {
	const entries: Partial<Record<CatalogModelId, Value>> = {};
	for (const entry of listOf(text)) {
		const match = /^([^=\s]+)\s*=\s*([^=]+)$/.exec(entry);
		if (!match) throw new Error(`'${entry}' is not of the form <model>=${form}`);
		const [, model, value] = match as unknown as [string, string, string];
		if (!isCatalogModelId(model) || !models.includes(model)) {
			const why = isCatalogModelId(model) ? `${model} takes no ${form} (models that do: ${models.join(', ')})` : `unknown model '${model}' (known: ${models.join(', ')})`;
			throw new Error(why);
		}
		if (entries[model] !== undefined) throw new Error(`${model} is listed twice`);
		entries[model] = valueOf(value.trim(), model);
	}
	return entries;
}
