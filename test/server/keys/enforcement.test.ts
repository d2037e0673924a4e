/**
 * What a managed key may do, enforced over real HTTP on both metadata engines: allowed models
 * (403 before any provider call; /v1/models narrowed), expiry, its own rate limit, and budgets
 * (402 with spent, limit and reset time; failures and idempotent replays cost nothing; concurrent
 * requests with room for k images give exactly k successes).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildTestApp, type InProcessApp } from '../support/app';
import { metadataEngines, usePostgresCluster } from '../support/postgres';

const ADMIN_KEY = 'admin-secret-0123456789';

const cluster = usePostgresCluster();
/** A host that answers every generation with a 500 after counting it: a provider that fails. */
let failingHost: Server;
let failingHostCalls = 0;
beforeAll(async () => {
	failingHost = createServer((request, response) => {
		failingHostCalls++;
		request.resume();
		response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"down","type":"server_error","param":null,"code":"x"}}');
	});
	await new Promise<void>((resolve) => failingHost.listen(0, '127.0.0.1', resolve));
	process.env.UPSTREAM_BASE_URL = `http://127.0.0.1:${(failingHost.address() as AddressInfo).port}/v1`;
	process.env.UPSTREAM_API_KEY = 'upstream-key-123';
}, 60_000);
afterAll(async () => {
	delete process.env.UPSTREAM_BASE_URL;
	delete process.env.UPSTREAM_API_KEY;
	await new Promise((resolve) => failingHost.close(resolve));
});

const engines = metadataEngines(cluster);

describe.each(engines)('managed keys enforced on the %s', (_engine, engineArgs) => {
	let service: InProcessApp;
	const json = async (response: Response) => ({ status: response.status, headers: response.headers, body: (await response.json()) as any });
	const createKey = async (fields: Record<string, unknown>) => {
		const response = await service.request('/v1/admin/keys', {
			method: 'POST',
			headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
			body: JSON.stringify({ name: 'test', ...fields }),
		});
		expect(response.status).toBe(201);
		return (await response.json()) as { id: string; key: string };
	};
	const readKey = async (id: string): Promise<any> => (await service.request(`/v1/admin/keys/${id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json();
	const generate = (secret: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
		service
			.request('/v1/images/generations', {
				method: 'POST',
				headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
				body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json', ...body }),
			})
			.then(json);

	beforeEach(async () => {
		service = await buildTestApp(['--admin-key', ADMIN_KEY, '--providers', 'textimage-v2=upstream', '--prices', 'textimage-v2=0.0035', ...(await engineArgs())]);
	});
	afterEach(() => service.close());

	it('refuses a model outside the key’s list with 403 naming model, before the provider is called', async () => {
		const key = await createKey({ models: ['p-image'] });
		const calls = failingHostCalls;
		const refused = await generate(key.key, { model: 'textimage-v2' });
		expect(refused.status).toBe(403);
		expect(refused.body.error).toMatchObject({ type: 'permission_error', code: 'model_not_allowed', param: 'model' });
		expect(failingHostCalls).toBe(calls);
		expect((await generate(key.key)).status).toBe(200);
		const models = await json(await service.request('/v1/models', { headers: { authorization: `Bearer ${key.key}` } }));
		expect(models.body.data.map((model: { id: string }) => model.id)).toEqual(['p-image']);
		const all = await json(await service.request('/v1/models', { headers: service.auth }));
		expect(all.body.data.map((model: { id: string }) => model.id)).toEqual(['p-image', 'p-image-edit', 'textimage-v2', 'p-video']);
	});

	it('charges a budget exactly: failures and replays are free, then 402 with spent, limit and reset time', async () => {
		const key = await createKey({ budget_usd: 0.0105, budget_period: 'day' });
		// Two generations whose provider fails: 502, nothing charged.
		for (let i = 0; i < 2; i++) expect((await generate(key.key, { model: 'textimage-v2' })).status).toBe(502);
		expect((await readKey(key.id)).budget.spent_usd).toBe(0);
		const first = await generate(key.key, {}, { 'idempotency-key': 'once' });
		expect(first.status).toBe(200);
		expect((await generate(key.key)).status).toBe(200);
		expect((await generate(key.key)).status).toBe(200);
		const refused = await generate(key.key);
		expect(refused.status).toBe(402);
		expect(refused.body.error).toMatchObject({ type: 'billing_error', code: 'budget_exceeded', param: null });
		const resetsAt = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)).toISOString();
		expect(refused.body.error.message).toContain('$0.0105');
		expect(refused.body.error.message).toContain('daily');
		expect(refused.body.error.message).toContain(resetsAt);
		// The replay of a request made before is free, even with the budget spent.
		const replay = await generate(key.key, {}, { 'idempotency-key': 'once' });
		expect(replay.status).toBe(200);
		expect(replay.headers.get('idempotent-replayed')).toBe('true');
		expect((await readKey(key.id)).budget).toEqual({ limit_usd: 0.0105, period: 'day', spent_usd: 0.0105, resets_at: resetsAt });
		// Raising the limit lets it generate again at once.
		await service.request(`/v1/admin/keys/${key.id}`, {
			method: 'PATCH',
			headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
			body: JSON.stringify({ budget_usd: 0.014 }),
		});
		expect((await generate(key.key)).status).toBe(200);
	});

	it('admits exactly k of many concurrent generations with room for k', async () => {
		const key = await createKey({ budget_usd: 0.014 });
		const answers = await Promise.all(Array.from({ length: 10 }, () => generate(key.key)));
		expect(answers.filter((answer) => answer.status === 200)).toHaveLength(4);
		expect(answers.filter((answer) => answer.status === 402)).toHaveLength(6);
		expect((await readKey(key.id)).budget.spent_usd).toBe(0.014);
	});

	it('applies the key’s own rate limit instead of the default', async () => {
		const key = await createKey({ rate_limit_per_minute: 2 });
		const models = (secret: string) => service.request('/v1/models', { headers: { authorization: `Bearer ${secret}` } });
		expect((await models(key.key)).status).toBe(200);
		expect((await models(key.key)).status).toBe(200);
		const limited = await models(key.key);
		expect(limited.status).toBe(429);
		expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
		expect((await json(limited)).body.error.message).toContain('2 requests per minute');
		// Other keys keep the default.
		for (let i = 0; i < 5; i++) expect((await models(service.config.apiKeys[0]!)).status).toBe(200);
	});

	it('refuses an expired key with key_expired', async () => {
		const expiresAt = Date.now() + 4_000;
		const key = await createKey({ expires_at: new Date(expiresAt).toISOString() });
		expect((await generate(key.key)).status).toBe(200);
		await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt + 200 - Date.now())));
		const expired = await generate(key.key);
		expect(expired.status).toBe(401);
		expect(expired.body.error).toMatchObject({ type: 'authentication_error', code: 'key_expired' });
	});

	it('keeps files and usage of a managed key under its stable id across rotation', async () => {
		const key = await createKey({});
		const made = await generate(key.key, { response_format: 'url' });
		const id = new URL(made.body.data[0].url).pathname.split('/').pop()!.split('.')[0]!;
		const rotated = await json(
			await service.request(`/v1/admin/keys/${key.id}/rotate`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}` } }),
		);
		const info = await service.request(`/v1/files/${id}`, { headers: { authorization: `Bearer ${rotated.body.key}` } });
		expect(info.status).toBe(200);
		const usage = await json(await service.request('/v1/usage', { headers: { authorization: `Bearer ${rotated.body.key}` } }));
		expect(usage.body.total.images).toBe(1);
	});
});
