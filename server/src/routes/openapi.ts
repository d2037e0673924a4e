/** GET /v1/openapi.json: the OpenAPI 3.1 document (schema-docs/openapi.ts). Public: registered outside the /v1 guard. */
import type { FastifyInstance } from 'fastify';
import { buildOpenApiDocument } from '../schema-docs/openapi';

export const OPENAPI_PATH = '/v1/openapi.json';

export default async function openApiRoutes(app: FastifyInstance): Promise<void> {
	const document = buildOpenApiDocument({ retentionSeconds: app.config.retentionSeconds });
	app.get(OPENAPI_PATH, async (_request, reply) => {
		reply.header('cache-control', 'public, max-age=300');
		return document;
	});
}
