/**
 * The catalog as this service offers it: core's models narrowed by the configured providers, with
 * the operator's prices and the hosts that serve each model (`providers`, in the order a fallback
 * chain tries them). One answer for GET /v1/models and the MCP tool `list_models`.
 */
import { describeCatalog, type ModelId } from '../../../core/models';
import { VIDEO_MODEL_IDS, VIDEO_MODELS, describeVideoModel, type CatalogModelId, type VideoModelId } from '../../../core/video-models';
import type { PriceOverrides } from '../config';
import { CHAIN_SEPARATOR } from '../config/provider-selection';
import { chainMembers } from './provider-chain';
import { specsInForce } from './provider-limits';
import type { ProviderTable } from './providers';

type DescribedModel = ReturnType<typeof describeCatalog>['data'][number];

/** An entry of the catalog; an alias's (generation/model-aliases.ts) carries the model it stands for. */
export type CatalogEntry = Omit<DescribedModel, 'id' | 'defaults'> & {
	id: string;
	alias_of?: ModelId;
	defaults: Omit<DescribedModel['defaults'], 'response_format'> & { response_format: 'url' | 'b64_json' };
	providers: string[];
};
/** A video model's entry (`type: video`): its fields, limits and prices per second. */
export type VideoCatalogEntry = ReturnType<typeof describeVideoModel> & { alias_of?: undefined; providers: string[] };
export type CatalogInForce = { object: 'list'; data: (CatalogEntry | VideoCatalogEntry)[] };

/** The host serving each video model, by its name (`pruna|replicate` for a chain). */
export type VideoHostNames = Readonly<Record<VideoModelId, { name: string }>>;

export function catalogInForce(prices: PriceOverrides, providers: ProviderTable, videoHosts?: VideoHostNames): CatalogInForce {
	const described = describeCatalog(prices, specsInForce(providers));
	const images = described.data.map((model) => ({ ...model, providers: chainMembers(providers[model.id]) }));
	const videos = videoHosts ? VIDEO_MODEL_IDS.map((id) => ({ ...describeVideoModel(VIDEO_MODELS[id], prices[id]), providers: videoHosts[id].name.split(CHAIN_SEPARATOR) })) : [];
	return { ...described, data: [...images, ...videos] };
}

/** What a key limited to some models sees: only those (and their aliases) (`null` or absent: every model). */
export function catalogFor(catalog: CatalogInForce, allowed: readonly CatalogModelId[] | null | undefined): CatalogInForce {
	return allowed ? { ...catalog, data: catalog.data.filter((model) => allowed.includes(model.alias_of ?? (model.id as CatalogModelId))) } : catalog;
}
