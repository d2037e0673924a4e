/**
 * GET /v1/models: the catalog from core, as narrowed by the configured providers, with the
 * operator's prices; a key limited to some models sees only those.
 */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';
import { specsInForce } from '../generation/provider-limits';

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const catalog = describeCatalog(v1.config.priceOverrides, specsInForce(v1.providers));
	v1.get('/models', async (request) => {
		const allowed = request.apiKey?.models;
		if (!allowed) return catalog;
		return { ...catalog, data: catalog.data.filter((model) => allowed.includes(model.id)) };
	});
}
