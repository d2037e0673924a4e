/**
 * `--model-aliases`: other clients' model names (OpenAI's `dall-e-3`, `gpt-image-1`) standing for
 * ours, so an OpenAI images client works with its own model list. A request naming an alias is the
 * request for its model; `GET /v1/models` lists each alias as its model's entry under the alias's id.
 */
import type { ModelAliases } from '../config';
import type { CatalogInForce } from './catalog-in-force';

/**
 * OpenAI's gpt-image models always answer `b64_json` (they take no `response_format`), and clients
 * made for them read only that: an alias named like them answers so unless the request says otherwise.
 */
const INLINE_BY_DEFAULT = /^gpt-image/;

/** The body with an alias's model put in its place (and its answer form); any other body as it came. */
export function resolveModelAlias(body: unknown, aliases: ModelAliases): unknown {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
	const { model } = body as { model?: unknown };
	if (typeof model !== 'string' || !Object.hasOwn(aliases, model)) return body;
	const inline = INLINE_BY_DEFAULT.test(model) && (body as { response_format?: unknown }).response_format === undefined;
	return { ...body, model: aliases[model], ...(inline ? { response_format: 'b64_json' } : {}) };
}

/** The catalog with an entry per alias after the models: its model's, under the alias's id. */
export function withAliases(catalog: CatalogInForce, aliases: ModelAliases): CatalogInForce {
	const entries = Object.entries(aliases).flatMap(([alias, model]) => {
		const target = catalog.data.find((entry) => entry.id === model);
		// Aliases stand for image models: a video model is never one's target.
		if (!target || 'type' in target) return [];
		const defaults = INLINE_BY_DEFAULT.test(alias) ? { ...target.defaults, response_format: 'b64_json' as const } : target.defaults;
		return [{ ...target, id: alias, alias_of: model, defaults }];
	});
	return { ...catalog, data: [...catalog.data, ...entries] };
}
