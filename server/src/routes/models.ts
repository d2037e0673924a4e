/**
 * GET /v1/models: the catalog from core, as narrowed by the configured providers, with the
 * operator's prices and the hosts that serve each model (`providers`, in the order a fallback
 * chain tries them); a key limited to some models sees only those.
 */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';
import { specsInForce } from '../generation/provider-limits';
import { chainMembers } from '../generation/provider-chain';

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const described = describeCatalog(v1.config.priceOverrides, specsInForce(v1.providers));
	const catalog = { ...described, data: described.data.map((model) => ({ ...model, providers: chainMembers(v1.providers[model.id]) })) };
	v1.get('/models', async (request) => {
		const allowed = request.apiKey?.models;
		if (!allowed) return catalog;
		return { ...catalog, data: catalog.data.filter((model) => allowed.includes(model.id)) };
	});
}
