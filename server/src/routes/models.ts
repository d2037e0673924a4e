/**
 * GET /v1/models: the catalog in force (generation/catalog-in-force.ts); a key limited to some
 * models sees only those.
 */
import type { FastifyInstance } from 'fastify';
import { catalogFor, catalogInForce } from '../generation/catalog-in-force';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses } from '../schema-docs/route-schemas';

const schema = {
	tags: ['Images'],
	operationId: 'listModels',
	summary: 'The models this key may use, with their fields, limits, prices and hosts',
	...API_KEY_AUTH,
	response: { 200: { description: 'The catalog', type: 'object', required: ['object', 'data'], properties: { object: { const: 'list' }, data: { type: 'array', items: { type: 'object' } } } }, ...errorResponses(...AUTH_ERRORS) },
};

export default async function modelRoutes(v1: FastifyInstance): Promise<void> {
	const catalog = catalogInForce(v1.config.priceOverrides, v1.providers);
	v1.get('/models', { schema }, async (request) => catalogFor(catalog, request.apiKey?.models));
}
