/**
 * Two replicas (two CLI processes on one PostgreSQL and one data dir) behind no balancer: the
 * tests choose the replica. A delete on one is a 404 on the other at once; an idempotent request
 * repeated on the other replays, and concurrent repeats on both generate once (provider calls
 * counted at an upstream stand-in).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../helpers/server';
import { startCountingUpstream, type CountingUpstream } from '../support/counting-upstream';
import { call, download, postJson, type ApiAnswer } from '../support/http';
import { makeImage } from '../support/media';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

jest.setTimeout(120_000);

const API_KEY = 'replica-key-0123456789';
let postgres: TestPostgres;
let upstream: CountingUpstream;
let dataDir: string;
let a: RunningServer;
let b: RunningServer;

beforeAll(async () => {
	[postgres, upstream] = await Promise.all([startTestPostgres(), startCountingUpstream()]);
	const databaseUrl = await postgres.createDatabase();
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-replicas-'));
	const { args, env } = upstream.serverOptions();
	const replica = () => startServer({ apiKey: API_KEY, dataDir, args: [...args, '--database-url', databaseUrl], env });
	// One after the other: the first brings the schema up to date.
	a = await replica();
	b = await replica();
});
afterAll(async () => {
	await Promise.all([a?.stop(), b?.stop()]);
	await Promise.all([upstream?.close(), postgres?.stop()]);
	if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(() => {
	upstream.delayMs = 0;
});

let counter = 0;
const newKey = () => `replica-${Date.now()}-${++counter}`;

async function generate(server: RunningServer, key: string, prompt = 'two replicas'): Promise<ApiAnswer<string>> {
	const response = await fetch(`${server.baseUrl}/images/generations`, {
		method: 'POST',
		headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}`, 'idempotency-key': key },
		body: JSON.stringify({ model: 'p-image', prompt, response_format: 'url' }),
	});
	return { status: response.status, headers: response.headers, body: await response.text() };
}

test('a file uploaded on A is seen on B; deleted on B, it is a 404 on A at once', async () => {
	const uploaded = await postJson(a, '/v1/uploads', { file: (await makeImage('png', 20, 20)).toString('base64') });
	expect(uploaded.status).toBe(200);
	const { id, imageUrl } = uploaded.body;
	const onB = imageUrl.replace(a.origin, b.origin);
	expect(existsSync(join(dataDir, 'files', imageUrl.split('/').pop()))).toBe(true);
	expect((await download(onB)).status).toBe(200);
	expect((await call(b, `/v1/files/${id}`)).body.id).toBe(id);

	expect((await call(b, `/v1/files/${id}`, { method: 'DELETE' })).status).toBe(204);
	expect((await download(imageUrl)).status).toBe(404);
	expect((await download(onB)).status).toBe(404);
	expect((await call(a, `/v1/files/${id}`)).status).toBe(404);
	expect((await call(a, `/v1/files/${id}`, { method: 'DELETE' })).status).toBe(404);
	expect(existsSync(join(dataDir, 'files', imageUrl.split('/').pop()))).toBe(false);
});

test('a generation repeated on the other replica is replayed, not generated again', async () => {
	const key = newKey();
	const before = upstream.calls;
	const first = await generate(a, key);
	const repeat = await generate(b, key);
	expect(first.status).toBe(200);
	expect(repeat.headers.get('idempotent-replayed')).toBe('true');
	expect(repeat.body).toBe(first.body);
	expect(upstream.calls - before).toBe(1);
	const usage = (await call(b, '/v1/usage')).body.total.images;
	expect(usage).toBe(upstream.calls);
});

test('concurrent repeats on both replicas run one generation', async () => {
	upstream.delayMs = 800;
	const key = newKey();
	const before = upstream.calls;
	const answers = await Promise.all([generate(a, key, 'at once'), generate(b, key, 'at once'), generate(a, key, 'at once'), generate(b, key, 'at once')]);
	expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
	expect(new Set(answers.map((answer) => answer.body)).size).toBe(1);
	expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(3);
	expect(upstream.calls - before).toBe(1);
});

test('the same key with another body on the other replica → 422', async () => {
	const key = newKey();
	await generate(a, key, 'first body');
	const reused = await generate(b, key, 'second body');
	expect(reused.status).toBe(422);
	expect(JSON.parse(reused.body).error.code).toBe('idempotency_key_reused');
});
