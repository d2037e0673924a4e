/**
 * Price overrides (`--prices p-image=0.004,textimage-v2=0.08`): the catalog's prices are the
 * default, an operator who pays a different provider rate can state their own.
 */
import { MODEL_IDS, isModelId, type ModelId } from '../../../core/models';

export type PriceOverrides = Partial<Record<ModelId, number>>;

/** Throws an Error whose message says which entry is wrong and what is expected. */
export function parsePriceOverrides(text: string): PriceOverrides {
	const prices: PriceOverrides = {};
	for (const entry of text.split(',').map((part) => part.trim()).filter(Boolean)) {
		const match = /^([^=\s]+)\s*=\s*(\S+)$/.exec(entry);
		if (!match) throw new Error(`'${entry}' is not of the form <model>=<usd per image>`);
		const [, model, price] = match as unknown as [string, string, string];
		if (!isModelId(model)) throw new Error(`unknown model '${model}' (known: ${MODEL_IDS.join(', ')})`);
		const value = Number(price);
		if (!/^\d+(\.\d+)?$/.test(price) || !Number.isFinite(value)) {
			throw new Error(`the price of '${model}' must be a non-negative number of USD; got '${price}'`);
		}
		prices[model] = value;
	}
	return prices;
}
