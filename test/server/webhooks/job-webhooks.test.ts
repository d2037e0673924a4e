/**
 * Job endings as webhooks through the whole service in process: `GET /v1/webhooks/secret`, the
 * delivery of a job's end (enqueued here directly, as the runner writes it with the end), the
 * event's shape, a body without base64, and a pending delivery that a restart on the same data dir
 * sends — all to a receiver on loopback, on a fake clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GenerationResponse } from '../../../core/api';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { RETRY_PAUSES_MS } from '../../../server/src/webhooks/outbox';
import type { GenerationObject } from '../../../server/src/jobs/job-store';
import { TEST_API_KEY } from '../../helpers/server';
import { enqueueJobEnd } from '../support/job-ends';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { useFakeClock } from '../support/clock';
import { call, eventually } from '../support/http';
import { startReceiver, verifyStandardWebhook, type Receiver } from '../support/webhook-receiver';

const OTHER_KEY = 'other-test-key-0001';
let dataDir: string;
let receiver: Receiver;
const servers: InProcessServer[] = [];

beforeEach(async () => {
	useFakeClock();
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-job-webhooks-'));
	receiver = await startReceiver();
});
afterEach(async () => {
	for (const server of servers.splice(0)) await server.stop();
	await receiver.close();
	rmSync(dataDir, { recursive: true, force: true });
	jest.useRealTimers();
});

async function start(args: string[] = ['--webhook-allow-private']): Promise<InProcessServer> {
	const server = await startInProcessServer({ dataDir, args: ['--log-level', 'silent', ...args] });
	servers.push(server);
	return server;
}

const secretOf = async (server: InProcessServer, key = server.apiKey) => {
	const answer = await call<{ secret: string }>(server, '/v1/webhooks/secret', { auth: `Bearer ${key}` });
	expect(answer.status).toBe(200);
	return answer.body.secret;
};

function generation(overrides: Partial<GenerationObject> = {}): GenerationObject {
	const result: GenerationResponse = {
		created: 1_900_000_000,
		model: 'p-image',
		output_format: 'png',
		data: [{ url: 'https://files.example/f/abc.png', expires_at: '2030-01-02T00:00:00.000Z', seed: 7 }],
		usage: { images: 1, cost_usd: 0.005 },
	};
	return { object: 'generation', id: 'gen_abc', status: 'succeeded', model: 'p-image', created: 1_900_000_000, finished_at: 1_900_000_003, result, error: null, ...overrides };
}

it('GET /v1/webhooks/secret: a whsec_ secret per key, not cached, the same after a restart', async () => {
	const first = await start(['--api-keys', `${TEST_API_KEY},${OTHER_KEY}`]);
	const secret = await secretOf(first);
	expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
	expect(Buffer.from(secret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);
	const answer = await call(first, '/v1/webhooks/secret');
	expect(answer.headers.get('cache-control')).toBe('no-store');
	expect(await secretOf(first, OTHER_KEY)).not.toBe(secret);
	expect((await call(first, '/v1/webhooks/secret', { auth: null })).status).toBe(401);
	await first.stop();
	const second = await start(['--api-keys', `${TEST_API_KEY},${OTHER_KEY}`]);
	expect(await secretOf(second)).toBe(secret);
});

it('a job’s end is delivered as { type, timestamp, data }, signed with the secret of the key that made it', async () => {
	const server = await start();
	const apiKeyId = apiKeyIdOf(server.apiKey);
	await enqueueJobEnd(server, { apiKeyId, webhookUrl: receiver.url, generation: generation() });
	expect(await eventually(() => receiver.received.length === 1)).toBe(true);
	const [delivery] = receiver.received;
	verifyStandardWebhook(await secretOf(server), delivery!.headers, delivery!.body, Math.floor(Date.now() / 1000));
	expect(JSON.parse(delivery!.body)).toEqual({ type: 'generation.succeeded', timestamp: new Date(Date.now()).toISOString(), data: generation() });
});

it('a generation asked for with webhook_url is delivered by the job runner when it ends: the object GET answers, signed', async () => {
	const server = await start();
	const created = await call<{ id: string; status: string }>(server, '/v1/images/generations', {
		method: 'POST',
		headers: { prefer: 'respond-async', 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', response_format: 'url', webhook_url: receiver.url }),
	});
	expect(created.status).toBe(202);
	expect(await eventually(() => receiver.received.length === 1)).toBe(true);
	const [delivery] = receiver.received;
	verifyStandardWebhook(await secretOf(server), delivery!.headers, delivery!.body, Math.floor(Date.now() / 1000));
	const fetched = await call<{ status: string }>(server, `/v1/generations/${created.body.id}`);
	expect(fetched.body.status).toBe('succeeded');
	expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'generation.succeeded', data: fetched.body });
});

it('failed and canceled jobs name their end; a job without webhook_url or not ended sends nothing', async () => {
	const server = await start();
	const apiKeyId = apiKeyIdOf(server.apiKey);
	const error = { message: 'The provider failed', type: 'provider_error', param: null, code: 'provider_error' };
	await enqueueJobEnd(server, { apiKeyId, generation: generation() });
	await enqueueJobEnd(server, { apiKeyId, webhookUrl: receiver.url, generation: generation({ status: 'running', result: null, finished_at: null }) });
	await enqueueJobEnd(server, { apiKeyId, webhookUrl: receiver.url, generation: generation({ id: 'gen_f', status: 'failed', result: null, error }) });
	await enqueueJobEnd(server, { apiKeyId, webhookUrl: receiver.url, generation: generation({ id: 'gen_c', status: 'canceled', result: null }) });
	expect(await eventually(() => receiver.received.length === 2)).toBe(true);
	const events = receiver.received.map((delivery) => JSON.parse(delivery.body)).sort((a, b) => a.data.id.localeCompare(b.data.id));
	expect(events.map((event) => [event.type, event.data.id])).toEqual([
		['generation.canceled', 'gen_c'],
		['generation.failed', 'gen_f'],
	]);
	expect(events[1].data.error).toEqual(error);
});

it('a result with inline images is delivered without its base64: result null, the id to fetch it by', async () => {
	const server = await start();
	const inline = generation();
	inline.result = { ...inline.result!, data: [{ b64_json: 'A'.repeat(400_000), seed: 7 }] };
	await enqueueJobEnd(server, { apiKeyId: apiKeyIdOf(server.apiKey), webhookUrl: receiver.url, generation: inline });
	expect(await eventually(() => receiver.received.length === 1)).toBe(true);
	const delivery = receiver.received[0]!;
	expect(delivery.body.length).toBeLessThan(2_000);
	expect(JSON.parse(delivery.body).data).toEqual({ ...inline, result: null });
});

it('a delivery pending when the service stops is sent by the next start on the same data dir, with the same id', async () => {
	const first = await start();
	receiver.answer(500);
	await enqueueJobEnd(first, { apiKeyId: apiKeyIdOf(first.apiKey), webhookUrl: receiver.url, generation: generation() });
	expect(await eventually(() => receiver.received.length === 1)).toBe(true);
	await first.app.webhooks.outbox.settled();
	await first.stop();

	receiver.answer(200);
	const second = await start();
	jest.advanceTimersByTime(RETRY_PAUSES_MS[0]);
	expect(await eventually(() => receiver.received.length === 2)).toBe(true);
	const [before, after] = receiver.received;
	expect(after!.headers['webhook-id']).toBe(before!.headers['webhook-id']);
	expect(after!.body).toBe(before!.body);
	verifyStandardWebhook(await secretOf(second), after!.headers, after!.body, Math.floor(Date.now() / 1000));
	await second.app.webhooks.outbox.settled();
	const metrics = await second.app.metrics.text();
	expect(metrics).toMatch(/imagegen_webhook_deliveries_total\{outcome="delivered"\} 1/);
});
