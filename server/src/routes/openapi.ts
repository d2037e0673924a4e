/**
 * GET /v1/openapi.json: the OpenAPI 3.1 document, drawn by @fastify/swagger from the routes' own
 * schemas (schema-docs/). Public: registered outside the /v1 guard.
 */
import type { FastifyInstance } from 'fastify';

const OPENAPI_PATH = '/v1/openapi.json';

export default async function openApiRoutes(app: FastifyInstance): Promise<void> {
	const schema = { tags: ['Agents'], operationId: 'openapi', summary: 'This document (public, no auth)', response: { 200: { description: 'OpenAPI 3.1', type: 'object' } } };
	app.get(OPENAPI_PATH, { schema }, async (_request, reply) => {
		reply.header('cache-control', 'public, max-age=300');
		return app.swagger();
	});
}
