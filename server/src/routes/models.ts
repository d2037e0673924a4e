/** GET /v1/models: the catalog from core, as narrowed by the configured providers, with the operator's prices. */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';
import type { GenerationSettings } from '../context';
import { specsInForce } from '../generation/provider-limits';
import { providerTableFor } from '../generation/providers';
import type { PriceOverrides } from '../prices';

export async function registerModelRoutes(v1: FastifyInstance, prices: PriceOverrides, generation: GenerationSettings): Promise<void> {
	const catalog = describeCatalog(prices, specsInForce(providerTableFor(generation)));
	v1.get('/models', async () => catalog);
}
