/**
 * Pages the service serves from its own package (the operator page): static HTML,
 * CSS and ES modules with no build step, and their libraries, all from this package, with no CDN.
 * So a page works offline, under a Content-Security-Policy that allows only this origin and no
 * inline script or style. The files are read once at start and served from memory. Only the names
 * a page lists are served, so no request path ever reaches the file system.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errorResponses, noBody } from '../schema-docs/route-schemas';

export const CONTENT_SECURITY_POLICY = [
	"default-src 'none'",
	"script-src 'self'",
	"style-src 'self'",
	"connect-src 'self'",
	"img-src 'self' data:",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
	'.html': 'text/html; charset=utf-8',
	'.js': 'text/javascript; charset=utf-8',
	'.css': 'text/css; charset=utf-8',
};

interface Asset {
	body: Buffer;
	type: string;
	etag: string;
}

interface StaticSite {
	/** Where the page is served, e.g. '/admin'; its assets are served under `${path}/assets/`. */
	path: string;
	/** The page's folder in this package (e.g. 'admin'), holding index.html and `files`. */
	folder: string;
	/** Asset names served from the page's folder. */
	files: string[];
	/** Asset names served from elsewhere (libraries in node_modules): name → absolute file. */
	libraries?: Record<string, string>;
	/** How the OpenAPI document lists the page and its assets. */
	documented: { tag: string; operationId: string; summary: string; assetSummary: string };
}

/** The package's root (the folder of its package.json), from src (tests) or dist (the CLI). */
function packageRoot(from: string, folder: string): string {
	if (existsSync(join(from, 'package.json')) && existsSync(join(from, folder))) return from;
	if (dirname(from) === from) throw new Error(`the page files (${folder}/) are missing from the imagegen-server package`);
	return packageRoot(dirname(from), folder);
}

function readAsset(file: string): Asset {
	const body = readFileSync(file);
	const type = TYPES[file.slice(file.lastIndexOf('.'))];
	if (!type) throw new Error(`no content type for ${file}`);
	return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

/** What every page and asset is sent with, beside its Content-Security-Policy. */
export const PAGE_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

function send(reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined) {
	reply
		.header('content-security-policy', CONTENT_SECURITY_POLICY)
		.headers(PAGE_HEADERS)
		.header('cache-control', 'no-cache')
		.header('etag', asset.etag);
	if (ifNoneMatch === asset.etag) return reply.status(304).send();
	return reply.type(asset.type).send(asset.body);
}

/** Registers GET `site.path` (the page) and GET `${site.path}/assets/:name`. */
export function serveStaticSite(fastify: FastifyInstance, site: StaticSite): void {
	const folder = join(packageRoot(__dirname, site.folder), site.folder);
	const page = readAsset(join(folder, 'index.html'));
	const assets = new Map<string, Asset>([
		...site.files.map((name): [string, Asset] => [name, readAsset(join(folder, name))]),
		...Object.entries(site.libraries ?? {}).map(([name, file]): [string, Asset] => [name, readAsset(file)]),
	]);
	const { tag, operationId, summary, assetSummary } = site.documented;
	const notModified = noBody('Not modified (ETag)');
	const pageSchema = { tags: [tag], operationId, summary, response: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } }, 304: notModified } };
	fastify.get(site.path, { schema: pageSchema }, async (request, reply) => send(reply, page, request.headers['if-none-match']));
	const assetSchema = {
		tags: [tag],
		operationId: `${operationId}Asset`,
		summary: assetSummary,
		params: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
		response: { 200: { description: 'The asset', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } }, 304: notModified, ...errorResponses([404, 'Unknown asset']) },
	};
	fastify.get<{ Params: { name: string } }>(`${site.path}/assets/:name`, { schema: assetSchema }, async (request, reply) => {
		const asset = assets.get(request.params.name);
		if (!asset) return reply.callNotFound();
		return send(reply, asset, request.headers['if-none-match']);
	});
}
