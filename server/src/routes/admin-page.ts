/**
 * GET /admin: the operator page (server/admin/) and its assets, uPlot included, served as a static
 * site (static-site.ts). Exists only with --admin-key; the page itself is public (it holds no
 * data), everything it shows comes from the admin API.
 */
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { serveStaticSite } from './static-site';

export default async function adminPageRoutes(fastify: FastifyInstance): Promise<void> {
	if (fastify.config.adminKey === undefined) return;
	const uplot = dirname(require.resolve('uplot/dist/uPlot.esm.js'));
	serveStaticSite(fastify, {
		path: '/admin',
		folder: 'admin',
		files: ['admin.css', 'admin.js', 'api.js', 'chart.js', 'format.js'],
		libraries: { 'uPlot.esm.js': join(uplot, 'uPlot.esm.js'), 'uPlot.min.css': join(uplot, 'uPlot.min.css') },
		documented: {
			tag: 'Operators',
			operationId: 'adminPage',
			summary: 'The operator web page (public: it signs in with the admin key in the browser; only with --admin-key)',
			assetSummary: 'A script, style sheet or chart library of the operator page',
		},
	});
}
