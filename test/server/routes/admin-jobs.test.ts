/**
 * GET /v1/admin/jobs: every key's newest jobs for the operator, the admin key only, through
 * app.inject on the data dir (the store's engines are held to the same `recent` by the contract).
 */
import { buildTestApp, type InProcessApp } from '../support/app';

const ADMIN_KEY = 'admin-secret-0123456789';
const admin = { authorization: `Bearer ${ADMIN_KEY}` };

let service: InProcessApp;
beforeEach(async () => {
	service = await buildTestApp(['--admin-key', ADMIN_KEY, '--sandbox-delay-ms', '600000']);
});
afterEach(() => service.close());

async function json(path: string, headers: Record<string, string>, init: RequestInit = {}) {
	const response = await service.request(path, { ...init, headers: { ...headers, ...(init.body ? { 'content-type': 'application/json' } : {}) } });
	return { status: response.status, body: (await response.json()) as any };
}

const submit = async (headers: Record<string, string>) =>
	(await json('/v1/images/generations', { ...headers, prefer: 'respond-async' }, { method: 'POST', body: JSON.stringify({ model: 'p-image', prompt: 'A lighthouse' }) })).body;

it("lists every key's jobs newest first, with their state and error code, without results", async () => {
	const { body: managed } = await json('/v1/admin/keys', admin, { method: 'POST', body: JSON.stringify({ name: 'team' }) });
	const first = await submit(service.auth);
	const second = await submit({ authorization: `Bearer ${managed.key}` });
	await json(`/v1/generations/${first.id}/cancel`, service.auth, { method: 'POST' });

	const { status, body } = await json('/v1/admin/jobs', admin);
	expect(status).toBe(200);
	expect(body.object).toBe('list');
	expect(body.data.map((job: { id: string }) => job.id)).toEqual([second.id, first.id]);
	expect(body.data[0]).toEqual({ id: second.id, key_id: managed.id, model: 'p-image', status: 'running', created: second.created, finished_at: null, error_code: null });
	expect(body.data[1]).toMatchObject({ id: first.id, status: 'canceled', error_code: 'canceled' });
	expect(body.data[1].key_id).not.toBe(managed.id);
	expect(body.data[1].finished_at).toBeGreaterThanOrEqual(first.created);
	expect((await json('/v1/admin/jobs?limit=1', admin)).body.data).toHaveLength(1);
	await json(`/v1/generations/${second.id}/cancel`, { authorization: `Bearer ${managed.key}` }, { method: 'POST' });
});

it('is for the admin key only', async () => {
	expect((await json('/v1/admin/jobs', service.auth)).body.error).toMatchObject({ type: 'permission_error', code: 'admin_only' });
	expect((await json('/v1/admin/jobs', service.auth)).status).toBe(403);
	expect((await json('/v1/admin/jobs', {})).status).toBe(401);
});

it('names a bad limit', async () => {
	for (const limit of ['0', '101', 'ten', '2.5']) {
		const { status, body } = await json(`/v1/admin/jobs?limit=${limit}`, admin);
		expect(status).toBe(400);
		expect(body.error.param).toBe('limit');
	}
	const unknown = await json('/v1/admin/jobs?status=running', admin);
	expect(unknown.status).toBe(400);
	expect(unknown.body.error.param).toBe('status');
});

it('does not exist without --admin-key', async () => {
	const plain = await buildTestApp();
	try {
		expect((await plain.request('/v1/admin/jobs', { headers: plain.auth })).status).toBe(404);
	} finally {
		await plain.close();
	}
});
