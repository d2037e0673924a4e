/**
 * GET /v1/openapi.json: public, valid OpenAPI 3.1 (checked by an OpenAPI validator), every route
 * the service registers is documented (read from the running app, so a route added later without
 * documentation fails here), and the rules are the validators' own: per-model request bodies,
 * limits and enums from the catalog, the error shape, and for each route the key it really takes
 * (checked by calling every documented operation without a key and with the other kind of key).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXTENDED_ASPECT_RATIOS, MODEL_IDS, MODELS, PROMPT_MAX_LENGTH, STANDARD_ASPECT_RATIOS, STYLE_TYPES } from '../../../core/models';
import { buildTestApp, type InProcessApp } from '../support/app';

/** HEAD routes are the GET routes' automatic twins; nothing else is left out. */
const UNDOCUMENTED_METHODS = new Set(['HEAD']);
/** The reference page's own files and copies of this document (the renderer hides them). */
const isReferencePage = (path: string) => path === '/docs' || path.startsWith('/docs/');
const ADMIN_KEY = 'admin-secret-0123456789';

let service: InProcessApp;
let document: any;

beforeAll(async () => {
	service = await buildTestApp(['--admin-key', ADMIN_KEY]);
	const response = await service.request('/v1/openapi.json');
	expect(response.status).toBe(200);
	expect(response.headers.get('content-type')).toMatch(/^application\/json/);
	document = await response.json();
}, 60_000);
afterAll(async () => {
	await service?.close();
});

/** Every method and path the app answers, read from Fastify's route tree. */
function registeredRoutes(): Array<{ method: string; path: string }> {
	const tree = service.app.printRoutes({ commonPrefix: false });
	const stack: string[] = [];
	const routes: Array<{ method: string; path: string }> = [];
	for (const line of tree.split('\n')) {
		const match = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)$/.exec(line);
		if (!match) continue;
		const depth = match[1]!.length / 4;
		stack.length = depth;
		stack.push(match[2]!);
		const path = stack.join('').replace(/:(\w+)/g, '{$1}');
		for (const method of match[3]!.split(', ')) routes.push({ method, path });
	}
	return routes;
}

describe('GET /v1/openapi.json', () => {
	it('is a valid OpenAPI 3.1 document, served without a key', () => {
		expect(document.openapi).toBe('3.1.0');
		const verdict = JSON.parse(
			execFileSync(process.execPath, [join(__dirname, 'validate-openapi.mjs')], { input: JSON.stringify(document), encoding: 'utf8' }),
		);
		expect(verdict.errors).toBeNull();
		expect(verdict).toMatchObject({ valid: true, version: '3.1' });
	});

	it('the validator refuses a broken document (the check can fail)', () => {
		const broken = { ...document, paths: { '/x': { get: { responses: { '200': { content: 'not an object' } } } } } };
		const verdict = JSON.parse(execFileSync(process.execPath, [join(__dirname, 'validate-openapi.mjs')], { input: JSON.stringify(broken), encoding: 'utf8' }));
		expect(verdict.valid).toBe(false);
	});

	it('documents every registered route', () => {
		const routes = registeredRoutes();
		expect(routes.length).toBeGreaterThan(10);
		expect(routes).toContainEqual({ method: 'POST', path: '/mcp' });
		expect(routes).toContainEqual({ method: 'GET', path: '/v1/openapi.json' });
		const missing = routes
			.filter(({ method, path }) => !UNDOCUMENTED_METHODS.has(method) && !isReferencePage(path))
			.filter(({ method, path }) => !document.paths[path]?.[method.toLowerCase()])
			.map(({ method, path }) => `${method} ${path}`);
		expect(missing).toEqual([]);
	});

	it('documents only routes that exist', () => {
		const routes = new Set(registeredRoutes().map(({ method, path }) => `${method} ${path}`));
		const documented = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`));
		expect(documented.filter((route) => !routes.has(route))).toEqual([]);
	});

	it('puts every operation in exactly one declared group (the sections of the /docs page)', () => {
		const declared = document.tags.map((tag: { name: string }) => tag.name);
		expect(declared).toEqual(['Images', 'Videos', 'Files', 'Usage', 'Agents', 'Operators']);
		const operations = Object.values(document.paths).flatMap((item) => Object.values(item as Record<string, { tags: string[] }>));
		for (const operation of operations) expect(operation.tags).toHaveLength(1);
		expect(new Set(operations.map((operation) => operation.tags[0]))).toEqual(new Set(declared));
		expect(document.paths['/v1/images/generations'].post.tags).toEqual(['Images']);
		expect(document.paths['/v1/admin/keys'].post.tags).toEqual(['Operators']);
	});

	it('states the error shape, shared by every error answer', () => {
		expect(document.components.schemas.Error.properties.error.required).toEqual(['message', 'type', 'param', 'code']);
		expect(document.paths['/v1/images/generations'].post.responses['400'].content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
		expect(document.paths['/v1/admin/keys/{id}'].patch.responses['404'].content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
	});

	it('names the package version of imagegen-server as its version', () => {
		const manifest = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'server', 'package.json'), 'utf8'));
		expect(manifest.name).toBe('imagegen-server');
		expect(document.info.version).toBe(manifest.version);
	});

	it('badges the admin routes and /metrics with the admin key, the API routes and /mcp with an API key, and public routes with none', () => {
		expect(document.components.securitySchemes).toEqual({
			apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
			adminKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
		});
		expect(document.security).toBeUndefined();
		const security = (path: string, method: string) => document.paths[path][method].security;
		expect(security('/metrics', 'get')).toEqual([{ adminKey: [] }]);
		for (const [, item] of Object.entries(document.paths).filter(([path]) => path.startsWith('/v1/admin/'))) {
			for (const operation of Object.values(item as Record<string, { security: unknown }>)) expect(operation.security).toEqual([{ adminKey: [] }]);
		}
		expect(security('/v1/images/generations', 'post')).toEqual([{ apiKey: [] }]);
		expect(security('/mcp', 'post')).toEqual([{ apiKey: [] }]);
		for (const [path, method] of [['/v1/openapi.json', 'get'], ['/healthz', 'get'], ['/files/{name}', 'get'], ['/admin', 'get']]) expect(security(path!, method!)).toBeUndefined();
	});

	it('each badge is the key the route really takes: none refused, the other kind of key refused, the badged one let through', async () => {
		const apiKey = service.config.apiKeys[0]!;
		const operations = Object.entries(document.paths).flatMap(([path, item]) =>
			Object.entries(item as Record<string, { security?: Array<Record<string, unknown>> }>).map(([method, operation]) => ({
				method: method.toUpperCase(),
				url: path.replace(/\{(\w+)\}/g, (_match, name) => (name === 'id' ? 'key_AbCdEfGh12' : 'missing.png')),
				scheme: operation.security ? Object.keys(operation.security[0]!)[0] : 'public',
			})),
		);
		const status = async (method: string, url: string, key?: string) =>
			(await service.request(url, { method, headers: key ? { authorization: `Bearer ${key}` } : {} })).status;
		const refused = (code: number) => code === 401 || code === 403;
		const wrong: unknown[] = [];
		for (const { method, url, scheme } of operations) {
			const unauthenticated = await status(method, url);
			const withApiKey = await status(method, url, apiKey);
			const withAdminKey = await status(method, url, ADMIN_KEY);
			const honest =
				scheme === 'public'
					? !refused(unauthenticated)
					: scheme === 'apiKey'
						? unauthenticated === 401 && withAdminKey === 403 && !refused(withApiKey)
						: unauthenticated === 401 && withApiKey === 403 && !refused(withAdminKey);
			if (!honest) wrong.push({ route: `${method} ${url}`, scheme, unauthenticated, withApiKey, withAdminKey });
		}
		expect(wrong).toEqual([]);
		expect(new Set(operations.map(({ scheme }) => scheme))).toEqual(new Set(['public', 'apiKey', 'adminKey']));
	});

	it('gives each model its own generation body with the catalog\'s fields, limits and enums', () => {
		const { schemas } = document.components;
		expect(document.paths['/v1/images/generations'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/GenerationRequest' });
		expect(schemas.GenerationRequest.oneOf).toEqual(MODEL_IDS.map((id) => ({ $ref: `#/components/schemas/GenerationRequest_${id}` })));
		const pImage = schemas['GenerationRequest_p-image'];
		const edit = schemas['GenerationRequest_p-image-edit'];
		const text = schemas['GenerationRequest_textimage-v2'];
		expect(pImage.additionalProperties).toBe(false);
		expect(pImage.properties.negative_prompt).toBeUndefined();
		expect(pImage.properties.aspect_ratio.enum).toEqual([...STANDARD_ASPECT_RATIOS]);
		expect(text.properties.aspect_ratio.enum).toEqual([...EXTENDED_ASPECT_RATIOS]);
		expect(text.properties.style_type.enum).toEqual([...STYLE_TYPES]);
		expect(text.properties.prompt.maxLength).toBe(PROMPT_MAX_LENGTH);
		expect(edit.required).toEqual(['model', 'prompt', 'images']);
		expect(edit.properties.images.oneOf[1].maxItems).toBe(MODELS['p-image-edit'].maxInputImages);
		const upload = document.paths['/v1/uploads'].post.requestBody.content;
		expect(upload['multipart/form-data'].schema.required).toEqual(['file']);
		expect(upload['application/json'].schema.properties.expires_in.maximum).toBe(service.config.retentionSeconds);
	});
});
