/**
 * Generations as jobs over HTTP (app.inject, the sandbox provider): `Prefer: respond-async` answers
 * 202 with the job at its Location; every generation, synchronous ones too, can be fetched and
 * listed by the key that made it and by no other; cancel, listing filters and their refusals.
 */
import { readdirSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { buildTestApp, inject, startInProcessServer, type InProcessApp, type InProcessServer } from '../support/app';
import { eventually } from '../support/http';

const OWNER = 'jobs-owner-key-0123456789';
const OTHER = 'jobs-other-key-0123456789';
let server: InProcessServer;

beforeAll(async () => {
	server = await startInProcessServer({ apiKey: `${OWNER},${OTHER}`, args: ['--log-level', 'silent'] });
}, 60_000);
afterAll(() => server?.stop({ removeData: true }));

interface Answer {
	status: number;
	headers: Headers;
	body: any;
	text: string;
}

async function request(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string>; key?: string } = {}): Promise<Answer> {
	const answer = await inject(server.app, path, {
		method: init.method ?? 'GET',
		headers: { authorization: `Bearer ${init.key ?? OWNER}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
		...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
	});
	const text = await answer.text();
	return { status: answer.status, headers: answer.headers, text, body: text ? JSON.parse(text) : undefined };
}

const generate = (body: Record<string, unknown> = {}, headers: Record<string, string> = {}, key?: string) =>
	request('/v1/images/generations', { method: 'POST', body: { model: 'p-image', prompt: 'a lighthouse', ...body }, headers, ...(key ? { key } : {}) });

const ended = async (id: string, key = OWNER) => {
	let job: any;
	await eventually(async () => {
		job = (await request(`/v1/generations/${id}`, { key })).body;
		return job.status !== 'running' && job.status !== 'queued';
	});
	return job;
};

describe('POST /v1/images/generations with Prefer: respond-async', () => {
	it('answers 202 with the running job at its Location, which then holds exactly the synchronous answer', async () => {
		const accepted = await generate({ seed: 11 }, { prefer: 'respond-async' });
		expect(accepted.status).toBe(202);
		expect(accepted.headers.get('preference-applied')).toBe('respond-async');
		expect(accepted.body).toMatchObject({ object: 'generation', status: 'running', model: 'p-image', finished_at: null, result: null, error: null });
		expect(accepted.body.id).toMatch(/^gen_[0-9a-f]{32}$/);
		expect(accepted.headers.get('location')).toBe(`/v1/generations/${accepted.body.id}`);
		const job = await ended(accepted.body.id);
		expect(job).toMatchObject({ status: 'succeeded', error: null });
		expect(job.finished_at).toBeGreaterThanOrEqual(job.created);
		const sync = await generate({ seed: 11 });
		expect(Object.keys(job.result)).toEqual(Object.keys(sync.body));
		expect(job.result.data[0]).toMatchObject({ seed: 11, url: expect.stringContaining('/files/') });
	});

	it('finds respond-async among other preferences, in any case, and not inside another token', async () => {
		expect((await generate({}, { prefer: 'wait=5, Respond-Async' })).status).toBe(202);
		expect((await generate({}, { prefer: 'respond-asynchronously' })).status).toBe(200);
	});

	it('with an Idempotency-Key, a repeat answers the same 202 and job, generating once', async () => {
		const headers = { prefer: 'respond-async', 'idempotency-key': `async-${Date.now()}` };
		const jobs = async () => (await request('/v1/generations?limit=100')).body.data.length;
		const before = await jobs();
		const first = await generate({ seed: 3 }, headers);
		const again = await generate({ seed: 3 }, headers);
		expect(await jobs()).toBe(before + 1);
		expect(again.status).toBe(202);
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.headers.get('location')).toBe(first.headers.get('location'));
		expect(again.text).toBe(first.text);
		// The synchronous request under the same key is another request.
		expect((await generate({ seed: 3 }, { 'idempotency-key': headers['idempotency-key'] })).status).toBe(422);
	});

	it('refuses before any job what it refused before: a bad body is a 400 naming the field, and no job', async () => {
		const before = (await request('/v1/generations?limit=100')).body.data.length;
		const refused = await generate({ prompt: 42 }, { prefer: 'respond-async' });
		expect(refused.status).toBe(400);
		expect(refused.body.error.param).toBe('prompt');
		expect((await request('/v1/generations?limit=100')).body.data.length).toBe(before);
	});
});

describe('GET /v1/generations/<id>', () => {
	it('a synchronous generation is a job too: its result is the body it answered, byte for byte, inline images included when they are kept', async () => {
		for (const [response_format, headers] of [['url', {}], ['b64_json', { 'idempotency-key': 'kept-inline-21' }]] as const) {
			const sync = await generate({ seed: 21, response_format }, headers);
			expect(sync.status).toBe(200);
			const [latest] = (await request('/v1/generations?limit=1')).body.data;
			const fetched = await request(`/v1/generations/${latest.id}`);
			expect(fetched.status).toBe(200);
			expect(fetched.text).toContain(`"result":${sync.text},"error":null}`);
			expect(Number(fetched.headers.get('content-length'))).toBe(Buffer.byteLength(fetched.text));
		}
	});

	it('keeps no inline image that nobody else can ask for (no Idempotency-Key, no webhook_url): the job succeeded with result null', async () => {
		const files = () => readdirSync(join(server.dataDir, 'files')).length;
		// Asynchronous jobs of earlier tests store their images as they end.
		await eventually(async () => (await request('/v1/generations?status=running')).body.data.length === 0);
		const before = files();
		const sync = await generate({ seed: 22, response_format: 'b64_json' });
		expect(sync.status).toBe(200);
		expect(Buffer.from(sync.body.data[0].b64_json, 'base64').length).toBeGreaterThan(1000);
		const [latest] = (await request('/v1/generations?limit=1')).body.data;
		expect(latest).toMatchObject({ status: 'succeeded', result: null, error: null });
		const fetched = await request(`/v1/generations/${latest.id}`);
		expect(fetched.status).toBe(200);
		expect(fetched.body).toMatchObject({ status: 'succeeded', result: null });
		expect(files()).toBe(before);
	});

	it("is 404 generation_not_found for another key's job, an unknown id and one that is no job id", async () => {
		const { body } = await generate({}, { prefer: 'respond-async' });
		for (const [id, key] of [[body.id, OTHER], [`gen_${'0'.repeat(32)}`, OWNER], ['gen_x', OWNER], ['..%2Fetc', OWNER]] as const) {
			const answer = await request(`/v1/generations/${id}`, { key });
			expect(answer.status).toBe(404);
			expect(answer.body.error).toMatchObject({ code: 'generation_not_found', type: 'not_found_error' });
			const cancel = await request(`/v1/generations/${id}/cancel`, { method: 'POST', key });
			expect(cancel.status).toBe(404);
			expect(cancel.body.error.code).toBe('generation_not_found');
		}
		expect((await request(`/v1/generations/${body.id}`)).status).toBe(200);
	});
});

describe('POST /v1/generations/<id>/cancel', () => {
	it('answers the final state of a job that had ended, unchanged', async () => {
		const { body } = await generate({}, { prefer: 'respond-async' });
		const job = await ended(body.id);
		const canceled = await request(`/v1/generations/${body.id}/cancel`, { method: 'POST' });
		expect(canceled.status).toBe(200);
		expect(canceled.body).toEqual(job);
	});

	it('takes an empty body sent as application/json (as n8n’s HTTP Request node and many clients send it)', async () => {
		const { body } = await generate({}, { prefer: 'respond-async' });
		const job = await ended(body.id);
		const emptyJson: Array<Record<string, string>> = [{ 'content-type': 'application/json' }, { 'content-type': 'application/json; charset=utf-8', 'content-length': '0' }];
		for (const headers of emptyJson) {
			const canceled = await request(`/v1/generations/${body.id}/cancel`, { method: 'POST', headers });
			expect(canceled.status).toBe(200);
			expect(canceled.body).toEqual(job);
		}
	});

	it('still refuses a body that is not JSON with a 400 invalid_json, and takes a JSON one', async () => {
		const { body } = await generate({}, { prefer: 'respond-async' });
		const answer = await inject(server.app, `/v1/generations/${body.id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${OWNER}`, 'content-type': 'application/json' }, body: '{"reason":' });
		expect(answer.status).toBe(400);
		expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
		expect((await request(`/v1/generations/${body.id}/cancel`, { method: 'POST', body: {} })).status).toBe(200);
	});
});

describe('GET /v1/generations', () => {
	it("lists the key's jobs newest first, filtered by status, at most `limit` (20 by default)", async () => {
		const mine = await request('/v1/generations?limit=100');
		expect(mine.body.object).toBe('list');
		const created = mine.body.data.map((job: { created: number }) => job.created);
		expect(created).toEqual([...created].sort((a: number, b: number) => b - a));
		expect((await request('/v1/generations')).body.data).toHaveLength(Math.min(20, mine.body.data.length));
		expect((await request('/v1/generations?limit=2')).body.data).toHaveLength(2);
		const succeeded = (await request('/v1/generations?status=succeeded&limit=100')).body.data;
		expect(succeeded.length).toBeGreaterThan(0);
		expect(succeeded.every((job: { status: string }) => job.status === 'succeeded')).toBe(true);
		const others = (await request('/v1/generations?limit=100', { key: OTHER })).body.data;
		expect(others.some((job: { id: string }) => mine.body.data.some((own: { id: string }) => own.id === job.id))).toBe(false);
	});

	it('refuses a bad status or limit with a 400 naming it', async () => {
		for (const [query, param] of [['status=done', 'status'], ['limit=0', 'limit'], ['limit=101', 'limit'], ['limit=ten', 'limit'], ['limit=2.5', 'limit'], ['order=asc', 'order']]) {
			const answer = await request(`/v1/generations?${query}`);
			expect(answer.status).toBe(400);
			expect(answer.body.error.param).toBe(param);
		}
	});
});

describe('a fresh service', () => {
	let service: InProcessApp;
	afterAll(() => service?.close());
	it('lists no jobs', async () => {
		service = await buildTestApp();
		const answer = await service.request('/v1/generations', { headers: service.auth });
		expect(await answer.json()).toEqual({ object: 'list', data: [] });
	});
});

describe('a job whose inline image is lost (a power cut: it is stored without a disk sync of its own)', () => {
	it('answers 404 result_gone instead of a 500 or a cut answer, while the first answer was whole', async () => {
		const sync = await generate({ response_format: 'b64_json', seed: 5 }, { 'idempotency-key': 'lost-inline-5' });
		expect(sync.status).toBe(200);
		expect(Buffer.from(sync.body.data[0].b64_json, 'base64').length).toBeGreaterThan(0);
		const [listed] = (await request('/v1/generations?limit=1')).body.data;
		const job = await server.app.jobStore.get(listed.id, apiKeyIdOf(OWNER));
		const file = await server.app.hostedFiles.info(job!.result!.inlineFiles![0]!.fileId, apiKeyIdOf(OWNER));
		truncateSync(join(server.dataDir, 'files', file!.storageKey), 0);
		const fetched = await request(`/v1/generations/${listed.id}`);
		expect(fetched.status).toBe(404);
		expect(fetched.body.error).toMatchObject({ code: 'result_gone' });
	});
});

describe('a job whose inline image expired before the job was swept', () => {
	it('is listed with result null, not a list that fails', async () => {
		const sync = await generate({ response_format: 'b64_json', seed: 6 }, { 'idempotency-key': 'expired-inline-6' });
		expect(sync.status).toBe(200);
		const [listed] = (await request('/v1/generations?limit=1')).body.data;
		const job = await server.app.jobStore.get(listed.id, apiKeyIdOf(OWNER));
		expect(await server.app.hostedFiles.remove(job!.result!.inlineFiles![0]!.fileId, apiKeyIdOf(OWNER))).toBe(true);
		const list = await request('/v1/generations?limit=1');
		expect(list.status).toBe(200);
		expect(list.body.data).toEqual([expect.objectContaining({ id: listed.id, status: 'succeeded', result: null })]);
	});
});
