/**
 * GET /v1/openapi.json: public, valid OpenAPI 3.1 (checked by an OpenAPI validator), every route
 * the service registers is documented (read from the running app, so a route added later without
 * documentation fails here), and the rules are the validators' own: per-model request bodies,
 * limits and enums from the catalog, the bearer scheme and the error shape.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { EXTENDED_ASPECT_RATIOS, MODEL_IDS, MODELS, PROMPT_MAX_LENGTH, STANDARD_ASPECT_RATIOS, STYLE_TYPES } from '../../../core/models';
import { buildTestApp, type InProcessApp } from '../support/app';

/** HEAD routes are the GET routes' automatic twins; nothing else is left out. */
const UNDOCUMENTED_METHODS = new Set(['HEAD']);

let service: InProcessApp;
let document: any;

beforeAll(async () => {
	service = await buildTestApp(['--admin-key', 'admin-secret-0123456789']);
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
			.filter(({ method }) => !UNDOCUMENTED_METHODS.has(method))
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
		expect(declared).toEqual(['Images', 'Files', 'Usage', 'Agents', 'Operators']);
		const operations = Object.values(document.paths).flatMap((item) => Object.values(item as Record<string, { tags: string[] }>));
		for (const operation of operations) expect(operation.tags).toHaveLength(1);
		expect(new Set(operations.map((operation) => operation.tags[0]))).toEqual(new Set(declared));
		expect(document.paths['/v1/images/generations'].post.tags).toEqual(['Images']);
		expect(document.paths['/v1/admin/keys'].post.tags).toEqual(['Operators']);
	});

	it('states the bearer scheme on /v1 routes and the error shape', () => {
		expect(document.components.securitySchemes.bearerAuth).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
		expect(document.paths['/v1/images/generations'].post.security).toEqual([{ bearerAuth: [] }]);
		expect(document.paths['/v1/openapi.json'].get.security).toBeUndefined();
		expect(document.components.schemas.Error.properties.error.required).toEqual(['message', 'type', 'param', 'code']);
		expect(document.paths['/v1/images/generations'].post.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
	});

	it('gives each model its own generation body with the catalog\'s fields, limits and enums', () => {
		const { schemas } = document.components;
		expect(schemas.GenerationRequest.oneOf).toHaveLength(MODEL_IDS.length);
		expect(Object.keys(schemas.GenerationRequest.discriminator.mapping)).toEqual([...MODEL_IDS]);
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
		expect(document.paths['/v1/uploads'].post.requestBody.content['multipart/form-data']).toBeDefined();
		expect(schemas.UploadJsonRequest.properties.expires_in.maximum).toBe(service.config.retentionSeconds);
	});
});
