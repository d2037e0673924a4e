/**
 * GET /docs: the API reference, drawn in the browser from GET /v1/openapi.json by the page's own
 * script (server/docs/), so it always shows the rules the running service enforces. Public, like
 * the document it reads.
 */
import type { FastifyInstance } from 'fastify';
import { serveStaticSite } from './static-site';

export const DOCS_PATH = '/docs';

export default async function docsPageRoutes(fastify: FastifyInstance): Promise<void> {
	serveStaticSite(fastify, { path: DOCS_PATH, folder: 'docs', files: ['docs.css', 'docs.js', 'schema-text.js'] });
}
