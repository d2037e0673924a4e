/**
 * GET /docs: the API reference, drawn in the browser by Swagger UI (@fastify/swagger-ui) from
 * this service's own OpenAPI document, so it always shows the rules the running service enforces.
 * Every file comes from the package (no CDN), so the page works offline. Public, like the document.
 */
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { CONTENT_SECURITY_POLICY, PAGE_HEADERS } from './static-site';

const DOCS_PATH = '/docs';

export default async function docsPageRoutes(fastify: FastifyInstance): Promise<void> {
	// The same strict policy as every page of the service, and Swagger UI needs nothing beyond it:
	// its scripts and style sheets are files with no inline script or style element
	// (script-src/style-src 'self'), it fetches only this origin (connect-src 'self': the document
	// and "Try it out"), and the icons its style sheet inlines are data: images (img-src data:).
	fastify.addHook('onSend', async (_request, reply) => {
		reply.headers(PAGE_HEADERS);
	});
	await fastify.register(swaggerUi, {
		routePrefix: DOCS_PATH,
		staticCSP: CONTENT_SECURITY_POLICY,
		// No online validator badge: it would send the document to a third party.
		validatorUrl: false,
		theme: { title: 'ImageGen API' },
		// BaseLayout: no top bar, whose box would load any document by URL.
		uiConfig: { layout: 'BaseLayout', deepLinking: true, docExpansion: 'list', tryItOutEnabled: false },
	});
}
