/** GET /v1/models: the catalog from core, with the operator's price overrides. */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';
import type { PriceOverrides } from '../prices';

export async function registerModelRoutes(v1: FastifyInstance, prices: PriceOverrides): Promise<void> {
	const catalog = describeCatalog(prices);
	v1.get('/models', async () => catalog);
}
