/**
 * GET /admin: the operator page (server/admin/: static HTML, CSS and ES modules, no build step)
 * and its assets, uPlot included, all served from this package: no CDN, so the page works
 * offline and under a Content-Security-Policy that allows only this origin and no inline script
 * or style. The files are read once at start and served from memory; only the names listed here
 * are served, so no request path ever reaches the file system. Exists only with --admin-key; the
 * page itself is public (it holds no data), everything it shows comes from the admin API.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

const CONTENT_SECURITY_POLICY = [
	"default-src 'none'",
	"script-src 'self'",
	"style-src 'self'",
	"connect-src 'self'",
	"img-src 'self' data:",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
].join('; ');

interface Asset {
	body: Buffer;
	type: string;
	etag: string;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** The package's root (the folder of its package.json), from src (tests) or dist (the CLI). */
function packageRoot(from: string): string {
	if (existsSync(join(from, 'package.json')) && existsSync(join(from, 'admin'))) return from;
	if (dirname(from) === from) throw new Error('the admin page files (admin/) are missing from the imagegen-server package');
	return packageRoot(dirname(from));
}

function loadAssets(): { page: Asset; assets: Map<string, Asset> } {
	const pageDir = join(packageRoot(__dirname), 'admin');
	const uplotDir = dirname(require.resolve('uplot/dist/uPlot.esm.js'));
	const asset = (file: string, type: string): Asset => {
		const body = readFileSync(file);
		return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
	};
	return {
		page: asset(join(pageDir, 'index.html'), 'text/html; charset=utf-8'),
		assets: new Map([
			['admin.css', asset(join(pageDir, 'admin.css'), CSS)],
			['admin.js', asset(join(pageDir, 'admin.js'), JS)],
			['api.js', asset(join(pageDir, 'api.js'), JS)],
			['chart.js', asset(join(pageDir, 'chart.js'), JS)],
			['uPlot.esm.js', asset(join(uplotDir, 'uPlot.esm.js'), JS)],
			['uPlot.min.css', asset(join(uplotDir, 'uPlot.min.css'), CSS)],
		]),
	};
}

export default async function adminPageRoutes(fastify: FastifyInstance): Promise<void> {
	if (fastify.config.adminKey === undefined) return;
	const { page, assets } = loadAssets();

	const send = (reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined) => {
		reply
			.header('content-security-policy', CONTENT_SECURITY_POLICY)
			.header('x-content-type-options', 'nosniff')
			.header('referrer-policy', 'no-referrer')
			.header('cache-control', 'no-cache')
			.header('etag', asset.etag);
		if (ifNoneMatch === asset.etag) return reply.status(304).send();
		return reply.type(asset.type).send(asset.body);
	};

	fastify.get('/admin', async (request, reply) => send(reply, page, request.headers['if-none-match']));
	fastify.get<{ Params: { name: string } }>('/admin/assets/:name', async (request, reply) => {
		const asset = assets.get(request.params.name);
		if (!asset) return reply.callNotFound();
		return send(reply, asset, request.headers['if-none-match']);
	});
}
