/** GET /v1/models: the catalog from core, as narrowed by the configured providers, with the operator's prices and those providers. */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';
import { specsInForce } from '../generation/provider-limits';
import { chainMembers } from '../generation/provider-chain';

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const described = describeCatalog(v1.config.priceOverrides, specsInForce(v1.providers));
	// `providers`: the hosts that serve each model, in the order a fallback chain tries them.
	const catalog = { ...described, data: described.data.map((model) => ({ ...model, providers: chainMembers(v1.providers[model.id]) })) };
	v1.get('/models', async () => catalog);
}
