/**
 * The admin API over real HTTP on both metadata engines: who may call it, the key object, every
 * bad field named, and managed keys authenticating /v1 from the next request on.
 */
import type { FastifyRequest } from 'fastify';
import type { ImageGenError } from '../../../core/errors';
import { buildTestApp, type InProcessApp } from '../support/app';
import { metadataEngines, usePostgresCluster } from '../support/postgres';

const ADMIN_KEY = 'admin-secret-0123456789';

const cluster = usePostgresCluster();

const engines = metadataEngines(cluster);

describe.each(engines)('admin API on the %s', (_engine, engineArgs) => {
	let service: InProcessApp;
	const admin = { authorization: `Bearer ${ADMIN_KEY}` };
	const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = admin) => {
		const response = await service.request(path, {
			method,
			headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		return { status: response.status, body: text ? JSON.parse(text) : undefined };
	};
	const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

	beforeEach(async () => {
		service = await buildTestApp(['--admin-key', ADMIN_KEY, ...(await engineArgs())]);
	});
	afterEach(() => service.close());

	it('creates a key shown once, lists, reads, changes and revokes it', async () => {
		const created = await call('POST', '/v1/admin/keys', { name: ' CI pipeline ', models: ['p-image'], budget_usd: 5, budget_period: 'month', rate_limit_per_minute: 30, expires_at: '2099-01-01T00:00:00Z' });
		expect(created.status).toBe(201);
		const secret: string = created.body.key;
		expect(secret).toMatch(/^igk_[A-Za-z0-9_-]{32,}$/);
		expect(created.body).toMatchObject({
			object: 'api_key',
			name: 'CI pipeline',
			prefix: secret.slice(0, 12),
			expires_at: '2099-01-01T00:00:00.000Z',
			blocked: false,
			models: ['p-image'],
			rate_limit_per_minute: 30,
			budget: { limit_usd: 5, period: 'month', spent_usd: 0 },
		});
		expect(created.body.id).toMatch(/^key_/);
		expect(new Date(created.body.budget.resets_at).getUTCDate()).toBe(1);
		const id: string = created.body.id;

		const listed = await call('GET', '/v1/admin/keys');
		expect(listed.status).toBe(200);
		expect(listed.body.object).toBe('list');
		expect(listed.body.data).toHaveLength(1);
		expect(listed.body.data[0]).toEqual({ ...created.body, key: undefined });
		expect(JSON.stringify(listed.body)).not.toContain(secret);
		expect((await call('GET', `/v1/admin/keys/${id}`)).body).toEqual(listed.body.data[0]);

		// The managed key works on /v1 at once; /v1/models shows its models only.
		const models = await call('GET', '/v1/models', undefined, bearer(secret));
		expect(models.status).toBe(200);

		const patched = await call('PATCH', `/v1/admin/keys/${id}`, { blocked: true, budget_usd: null, models: null, rate_limit_per_minute: null, expires_at: null, name: 'renamed' });
		expect(patched.status).toBe(200);
		expect(patched.body).toMatchObject({ name: 'renamed', blocked: true, budget: null, models: null, rate_limit_per_minute: null, expires_at: null });
		const blocked = await call('GET', '/v1/models', undefined, bearer(secret));
		expect(blocked.status).toBe(401);
		expect(blocked.body.error.code).toBe('key_blocked');
		await call('PATCH', `/v1/admin/keys/${id}`, { blocked: false });
		expect((await call('GET', '/v1/models', undefined, bearer(secret))).status).toBe(200);

		expect((await call('DELETE', `/v1/admin/keys/${id}`)).status).toBe(204);
		const revoked = await call('GET', '/v1/models', undefined, bearer(secret));
		expect(revoked.status).toBe(401);
		expect(revoked.body.error.code).toBe('invalid_api_key');
		expect((await call('GET', `/v1/admin/keys/${id}`)).status).toBe(404);
		expect((await call('DELETE', `/v1/admin/keys/${id}`)).status).toBe(404);
		expect((await call('GET', '/v1/admin/keys')).body.data).toEqual([]);
	});

	it('rotates: a new secret, the same id; the old secret only within the grace time', async () => {
		const created = await call('POST', '/v1/admin/keys', { name: 'rotating' });
		const rotated = await call('POST', `/v1/admin/keys/${created.body.id}/rotate`, { grace_seconds: 60 });
		expect(rotated.status).toBe(200);
		expect(rotated.body.id).toBe(created.body.id);
		expect(rotated.body.key).not.toBe(created.body.key);
		expect(rotated.body.prefix).toBe(rotated.body.key.slice(0, 12));
		expect((await call('GET', '/v1/models', undefined, bearer(created.body.key))).status).toBe(200);
		expect((await call('GET', '/v1/models', undefined, bearer(rotated.body.key))).status).toBe(200);
		const again = await call('POST', `/v1/admin/keys/${created.body.id}/rotate`);
		expect(again.status).toBe(200);
		expect((await call('GET', '/v1/models', undefined, bearer(rotated.body.key))).body.error.code).toBe('invalid_api_key');
		expect((await call('GET', '/v1/models', undefined, bearer(again.body.key))).status).toBe(200);
	});

	it('takes the admin key only on /v1/admin/*, and API keys everywhere else', async () => {
		const onModels = await call('GET', '/v1/models', undefined, bearer(ADMIN_KEY));
		expect(onModels.status).toBe(403);
		expect(onModels.body.error).toMatchObject({ type: 'permission_error', code: 'admin_key_not_accepted' });
		const apiKeyOnAdmin = await call('GET', '/v1/admin/keys', undefined, service.auth);
		expect(apiKeyOnAdmin.status).toBe(403);
		expect(apiKeyOnAdmin.body.error).toMatchObject({ type: 'permission_error', code: 'admin_only' });
		const created = await call('POST', '/v1/admin/keys', { name: 'x' });
		const managedOnAdmin = await call('POST', '/v1/admin/keys', { name: 'y' }, { ...admin, authorization: `Bearer ${created.body.key}` });
		expect(managedOnAdmin.body.error.code).toBe('admin_only');
		expect((await call('GET', '/v1/admin/keys', undefined, {})).status).toBe(401);
		expect((await call('GET', '/v1/admin/keys', undefined, bearer('igk_wrong-wrong-wrong-wrong-wrong-wrong'))).status).toBe(401);
		// Unknown admin routes are 404 for the admin, 403 for an API key.
		expect((await call('GET', '/v1/admin/nothing')).status).toBe(404);
		expect((await call('GET', '/v1/admin/nothing', undefined, service.auth)).status).toBe(403);
		// The flat key keeps working unchanged.
		expect((await call('GET', '/v1/models', undefined, service.auth)).status).toBe(200);
	});

	it.each([
		['name', {}, 'missing_field'],
		['name', { name: '' }, 'invalid_value'],
		['name', { name: 'x'.repeat(101) }, 'invalid_value'],
		['name', { name: 7 }, 'invalid_type'],
		['models[0]', { name: 'a', models: ['dall-e'] }, 'invalid_value'],
		['models', { name: 'a', models: [] }, 'invalid_value'],
		['models', { name: 'a', models: 'p-image' }, 'invalid_type'],
		['budget_usd', { name: 'a', budget_usd: 0 }, 'invalid_value'],
		['budget_usd', { name: 'a', budget_usd: '5' }, 'invalid_type'],
		['budget_period', { name: 'a', budget_usd: 1, budget_period: 'week' }, 'invalid_value'],
		['budget_period', { name: 'a', budget_period: 'day' }, 'invalid_value'],
		['rate_limit_per_minute', { name: 'a', rate_limit_per_minute: 1.5 }, 'invalid_type'],
		['rate_limit_per_minute', { name: 'a', rate_limit_per_minute: 0 }, 'invalid_value'],
		['expires_at', { name: 'a', expires_at: 'tomorrow' }, 'invalid_value'],
		['expires_at', { name: 'a', expires_at: '2099-01-01T00:00:00' }, 'invalid_value'],
		['expires_at', { name: 'a', expires_at: '2001-01-01T00:00:00Z' }, 'invalid_value'],
		// Control characters and bidi overrides would rewrite an operator's terminal or page.
		['name', { name: 'nul\u0000byte' }, 'invalid_value'],
		['name', { name: '\u001b]0;pwned\u0007title' }, 'invalid_value'],
		['name', { name: '\u001b[2Jcleared' }, 'invalid_value'],
		['name', { name: 'a\r\nkey_fake  igk_fake  admin' }, 'invalid_value'],
		['name', { name: 'tab\there' }, 'invalid_value'],
		['name', { name: 'c1\u0085next line' }, 'invalid_value'],
		['name', { name: 'invoice\u202egnp.exe' }, 'invalid_value'],
		['name', { name: 'isolate\u2066x\u2069' }, 'invalid_value'],
		['models[1]', { name: 'a', models: ['p-image', 'p-image', 'p-image'] }, 'invalid_value'],
		// Dates that do not exist are refused, not rolled over into the next month or day.
		['expires_at', { name: 'a', expires_at: '2030-02-31T00:00:00Z' }, 'invalid_value'],
		['expires_at', { name: 'a', expires_at: '2031-02-29T00:00:00Z' }, 'invalid_value'],
		['expires_at', { name: 'a', expires_at: '2030-01-01T24:00:00Z' }, 'invalid_value'],
		['blocked', { name: 'a', blocked: true }, 'unknown_field'],
		['owner', { name: 'a', owner: 'x' }, 'unknown_field'],
	])('POST /v1/admin/keys refuses a bad %s', async (param, body, code) => {
		const answer = await call('POST', '/v1/admin/keys', body);
		expect(answer.status).toBe(400);
		expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', param, code });
		expect((await call('GET', '/v1/admin/keys')).body.data).toEqual([]);
	});

	it('refuses bad PATCH, rotate, id and usage fields, naming them', async () => {
		const { body: key } = await call('POST', '/v1/admin/keys', { name: 'a' });
		const cases: Array<[string, string, unknown, string]> = [
			['PATCH', `/v1/admin/keys/${key.id}`, { blocked: 'yes' }, 'blocked'],
			['PATCH', `/v1/admin/keys/${key.id}`, { budget_period: 'day' }, 'budget_period'],
			['PATCH', `/v1/admin/keys/${key.id}`, { budget_usd: null, budget_period: 'day' }, 'budget_period'],
			['PATCH', `/v1/admin/keys/${key.id}`, { secret: 'x' }, 'secret'],
			['PATCH', `/v1/admin/keys/${key.id}`, [], 'body'],
			['POST', `/v1/admin/keys/${key.id}/rotate`, { grace_seconds: 86_401 }, 'grace_seconds'],
			['POST', `/v1/admin/keys/${key.id}/rotate`, { grace_seconds: -1 }, 'grace_seconds'],
			['GET', '/v1/admin/keys/not-an-id', undefined, 'id'],
			['PATCH', `/v1/admin/keys/${key.id}`, { name: 'x\u0000y' }, 'name'],
			['PATCH', `/v1/admin/keys/${key.id}`, { name: '\u001b[2J', blocked: true }, 'name'],
			['PATCH', `/v1/admin/keys/${key.id}`, { name: 'rtl\u202d', blocked: true }, 'name'],
			['PATCH', `/v1/admin/keys/${key.id}`, { expires_at: '2030-02-31T00:00:00Z', blocked: true }, 'expires_at'],
			['PATCH', `/v1/admin/keys/${key.id}`, { models: ['textimage-v2', 'textimage-v2'], blocked: true }, 'models[1]'],
			['GET', '/v1/admin/usage?from=2030-13-01', undefined, 'from'],
			['GET', '/v1/admin/usage?from=2026-02-30', undefined, 'from'],
			['GET', '/v1/admin/usage?to=2026-04-31', undefined, 'to'],
			['GET', '/v1/admin/usage?from=2030-02-01&to=2030-01-01', undefined, 'from'],
			['GET', '/v1/admin/usage?key_id=nope', undefined, 'key_id'],
			['GET', '/v1/admin/usage?day=2030-01-01', undefined, 'day'],
		];
		for (const [method, path, body, param] of cases) {
			const answer = await call(method, path, body);
			expect({ method, path, status: answer.status, param: answer.body?.error?.param }).toEqual({ method, path, status: 400, param });
		}
		expect((await call('GET', `/v1/admin/keys/${key.id}`)).body).toMatchObject({ name: 'a', blocked: false, budget: null, models: null, expires_at: null });
		expect((await call('PATCH', '/v1/admin/keys/key_doesnotexist', { blocked: true })).status).toBe(404);
		expect((await call('POST', '/v1/admin/keys/key_doesnotexist/rotate', {})).status).toBe(404);
	});

	it('reports usage per day, key and model over every key, or one', async () => {
		const { body: key } = await call('POST', '/v1/admin/keys', { name: 'a' });
		const generate = (authorization: string) =>
			service.request('/v1/images/generations', { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'p-image', prompt: 'a red square' }) });
		expect((await generate(`Bearer ${key.key}`)).status).toBe(200);
		expect((await generate(service.auth.authorization)).status).toBe(200);
		expect((await generate(service.auth.authorization)).status).toBe(200);
		const today = new Date().toISOString().slice(0, 10);
		const all = await call('GET', `/v1/admin/usage?from=${today}&to=${today}`);
		expect(all.status).toBe(200);
		expect(all.body.data).toHaveLength(2);
		expect(all.body.data).toEqual(
			expect.arrayContaining([
				{ date: today, key_id: key.id, model: 'p-image', images: 1, cost_usd: 0.0035 },
				{ date: today, key_id: expect.stringMatching(/^[0-9a-f]{16}$/), model: 'p-image', images: 2, cost_usd: 0.007 },
			]),
		);
		expect(all.body.total).toEqual({ images: 3, cost_usd: 0.0105 });
		const one = await call('GET', `/v1/admin/usage?key_id=${key.id}`);
		expect(one.body.data).toEqual([{ date: today, key_id: key.id, model: 'p-image', images: 1, cost_usd: 0.0035 }]);
	});
});

describe('fastify.requireAdmin (the guard of routes outside /v1 that only the admin may use, such as GET /metrics)', () => {
	let service: InProcessApp;
	beforeAll(async () => {
		service = await buildTestApp(['--admin-key', ADMIN_KEY]);
	});
	afterAll(() => service.close());
	const guard = (authorization?: string) =>
		service.app.requireAdmin({ headers: authorization === undefined ? {} : { authorization } } as FastifyRequest).then(
			() => 'admitted',
			(error: ImageGenError) => `${error.status} ${error.code}`,
		);

	it('admits the admin key only', async () => {
		expect(await guard(`Bearer ${ADMIN_KEY}`)).toBe('admitted');
		expect(await guard(service.auth.authorization)).toBe('403 admin_only');
		expect(await guard('Bearer not-a-key-at-all')).toBe('401 invalid_api_key');
		expect(await guard()).toBe('401 missing_api_key');
	});

	it('fastify.requireApiKey (for /v1 and other ways in such as /mcp) refuses the admin key and sets the key policy', async () => {
		const request = { headers: { authorization: `Bearer ${ADMIN_KEY}` } } as FastifyRequest;
		await expect(service.app.requireApiKey(request)).rejects.toMatchObject({ status: 403, code: 'admin_key_not_accepted' });
		const flat = { headers: service.auth } as unknown as FastifyRequest;
		await service.app.requireApiKey(flat);
		expect(flat.apiKey).toEqual({ id: flat.apiKeyId, managed: false, models: null, rateLimitPerMinute: null, budget: null });
	});
});

describe('without --admin-key', () => {
	let service: InProcessApp;
	beforeAll(async () => {
		service = await buildTestApp();
	});
	afterAll(() => service.close());

	it('has no admin API', async () => {
		const answer = await service.request('/v1/admin/keys', { headers: service.auth });
		expect(answer.status).toBe(404);
		const created = await service.request('/v1/admin/keys', { method: 'POST', headers: { ...service.auth, 'content-type': 'application/json' }, body: '{"name":"x"}' });
		expect(created.status).toBe(404);
	});
});
