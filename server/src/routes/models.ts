/** GET /v1/models: the catalog from core, with the operator's price overrides. */
import type { FastifyInstance } from 'fastify';
import { describeCatalog } from '../../../core/models';

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const catalog = describeCatalog(v1.config.priceOverrides);
	v1.get('/models', async () => catalog);
}
