/**
 * GET /v1/models: the catalog in force (generation/catalog-in-force.ts); a key limited to some
 * models sees only those.
 */
import type { FastifyInstance } from 'fastify';
import { catalogFor, catalogInForce } from '../generation/catalog-in-force';

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const catalog = catalogInForce(v1.config.priceOverrides, v1.providers);
	v1.get('/models', async (request) => catalogFor(catalog, request.apiKey?.models));
}
