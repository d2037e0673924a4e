/** GET /v1/models: the catalog from core, as narrowed by the configured providers, with the operator's prices. */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';
import { specsInForce } from '../generation/provider-limits';

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const catalog = describeCatalog(v1.config.priceOverrides, specsInForce(v1.providers));
	v1.get('/models', async () => catalog);
}
