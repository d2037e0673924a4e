/**
 * Videos on the jobs, through the HTTP API against stand-ins of the hosts' published APIs: the
 * budget reserves price × seconds before the host is called (402 when it does not fit) and keeps
 * only what the video cost; a host's failure and a cancel give it all back; a cancel reaches the
 * host; a host's answer that is not an MP4 is never hosted; the end is a signed `video.completed`
 * / `video.failed` webhook; usage counts the seconds.
 */
import { startInProcessServer, type InProcessServer } from '../support/app';
import { createManagedKey, eventually } from '../support/http';
import { PRUNA_KEY, startPrunaVideoHost, type PrunaVideoHost } from '../support/pruna-video-host';
import { REPLICATE_TOKEN, startReplicateVideoHost, type ReplicateVideoHost } from '../support/replicate-video-host';
import { testMp4 } from '../support/video-hosts';
import { startReceiver, verifyStandardWebhook, type Receiver } from '../support/webhook-receiver';

const ADMIN_KEY = 'admin-key-for-video-job-tests-0123456789';
let pruna: PrunaVideoHost;
let replicate: ReplicateVideoHost;
let receiver: Receiver;
let server: InProcessServer;

beforeAll(async () => {
	const mp4 = await testMp4();
	[pruna, replicate, receiver] = await Promise.all([startPrunaVideoHost(mp4), startReplicateVideoHost(mp4), startReceiver()]);
	server = await startInProcessServer({
		args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--providers', 'p-video=pruna', '--allow-private-urls', '--webhook-allow-private'],
		env: { PRUNA_API_KEY: PRUNA_KEY, PRUNA_BASE_URL: `${pruna.origin}/v1` },
		parts: { providerTiming: { pollIntervalMs: 5, retryBaseDelayMs: 5 } },
	});
});
afterAll(async () => {
	await server.stop({ removeData: true });
	await Promise.all([pruna.close(), replicate.close(), receiver.close()]);
});

async function call(path: string, init: { method?: string; body?: unknown; key?: string; on?: InProcessServer } = {}): Promise<{ status: number; body: any }> {
	const response = await fetch(`${(init.on ?? server).origin}${path}`, {
		method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
		headers: { authorization: `Bearer ${init.key ?? server.apiKey}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
		...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
	});
	return { status: response.status, body: await response.json() };
}

async function ended(id: string, key?: string, on?: InProcessServer): Promise<any> {
	let video: any;
	expect(await eventually(async () => ((video = (await call(`/v1/videos/${id}`, { key, on })).body), video.status === 'completed' || video.status === 'failed'), 20_000)).toBe(true);
	return video;
}

async function spentOf(keyId: string): Promise<number> {
	const { body } = await fetch(`${server.origin}/v1/admin/keys/${keyId}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }).then(async (response) => ({ body: (await response.json()) as any }));
	return body.budget.spent_usd;
}

test('the budget reserves price × seconds before the host is called: 402 past it, the cost kept after', async () => {
	const { id: keyId, key } = await createManagedKey(server, ADMIN_KEY, { name: 'video budget', budget_usd: 0.05, budget_period: 'total' });
	const before = pruna.predictionsMade().length;
	const refused = await call('/v1/videos', { key, body: { model: 'p-video', prompt: 'too long for the budget', seconds: 3 } });
	expect(refused.status).toBe(402);
	expect(pruna.predictionsMade()).toHaveLength(before);
	const created = await call('/v1/videos', { key, body: { model: 'p-video', prompt: 'fits', seconds: 2 } });
	expect(created.status).toBe(200);
	const video = await ended(created.body.id, key);
	expect(video).toMatchObject({ status: 'completed', usage: { seconds: 2, cost_usd: 0.04 } });
	expect(await spentOf(keyId)).toBeCloseTo(0.04, 6);
	const usage = await call('/v1/usage', { key });
	expect(usage.body.data).toEqual([expect.objectContaining({ model: 'p-video', images: 0, seconds: 2, cost_usd: 0.04 })]);
});

test("a host's failure ends the video failed and gives the reservation back", async () => {
	const { id: keyId, key } = await createManagedKey(server, ADMIN_KEY, { name: 'video failure', budget_usd: 1, budget_period: 'total' });
	pruna.setOutcome('failed');
	try {
		const created = await call('/v1/videos', { key, body: { model: 'p-video', prompt: 'the host fails', seconds: 5 } });
		const video = await ended(created.body.id, key);
		expect(video).toMatchObject({ status: 'failed', url: null, usage: null, error: { code: 'upstream_failed' } });
		expect(await spentOf(keyId)).toBe(0);
	} finally {
		pruna.setOutcome('succeeded');
	}
});

test("a host's answer that is not an MP4 is never hosted, and costs nothing", async () => {
	const { id: keyId, key } = await createManagedKey(server, ADMIN_KEY, { name: 'not an mp4', budget_usd: 1, budget_period: 'total' });
	pruna.script('GET', '/v1/predictions/delivery/', { status: 200, body: '<html>an error page</html>', headers: { 'content-type': 'text/html' } });
	const created = await call('/v1/videos', { key, body: { model: 'p-video', prompt: 'a broken delivery', seconds: 1 } });
	const video = await ended(created.body.id, key);
	expect(video).toMatchObject({ status: 'failed', error: { code: 'upstream_invalid_output' } });
	expect(await spentOf(keyId)).toBe(0);
});

test('the end is a signed video.completed webhook with the Video object', async () => {
	const secret = (await call('/v1/webhooks/secret')).body.secret as string;
	const created = await call('/v1/videos', { body: { model: 'p-video', prompt: 'told by webhook', seconds: 1, webhook_url: receiver.url } });
	const video = await ended(created.body.id);
	expect(await eventually(() => receiver.received.some((delivery) => JSON.parse(delivery.body).data.id === video.id), 10_000)).toBe(true);
	const delivery = receiver.received.find((each) => JSON.parse(each.body).data.id === video.id)!;
	verifyStandardWebhook(secret, delivery.headers, delivery.body, Math.floor(Date.now() / 1000));
	expect(JSON.parse(delivery.body)).toMatchObject({ type: 'video.completed', data: { id: video.id, object: 'video', status: 'completed', url: video.url } });
});

describe('a cancel', () => {
	let canceler: InProcessServer;
	beforeAll(async () => {
		canceler = await startInProcessServer({
			args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--providers', 'p-video=replicate', '--allow-private-urls', '--webhook-allow-private'],
			env: { REPLICATE_API_TOKEN: REPLICATE_TOKEN, REPLICATE_BASE_URL: `${replicate.origin}/v1` },
			parts: { providerTiming: { pollIntervalMs: 20, retryBaseDelayMs: 5 } },
		});
	});
	afterAll(() => canceler.stop({ removeData: true }));

	test('reaches the host, reads failed with code canceled, and charges nothing', async () => {
		replicate.setPendingPolls(10_000);
		const { id: keyId, key } = await createManagedKey(canceler, ADMIN_KEY, { name: 'cancel', budget_usd: 1, budget_period: 'total' });
		const post = (path: string, body?: unknown) =>
			fetch(`${canceler.origin}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) }).then(async (response) => (await response.json()) as any);
		const created = await post('/v1/videos', { model: 'p-video', prompt: 'canceled', seconds: 4 });
		expect(await eventually(() => replicate.predictionsMade().length > 0 && replicate.callsTo('GET', '/v1/predictions/').length > 0, 10_000)).toBe(true);
		const prediction = replicate.predictionsMade().at(-1)!;
		const canceled = await post(`/v1/videos/${created.id}/cancel`);
		expect(canceled).toMatchObject({ id: created.id, status: 'failed', error: { code: 'canceled' } });
		expect(await eventually(() => replicate.statusOf(prediction) === 'canceled', 10_000)).toBe(true);
		const spent = () => fetch(`${canceler.origin}/v1/admin/keys/${keyId}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }).then(async (response) => ((await response.json()) as any).budget.spent_usd as number);
		// Given back by the run as it stops, just after the cancel's answer.
		expect(await eventually(async () => (await spent()) === 0, 10_000)).toBe(true);
		expect(await ended(created.id, key, canceler)).toMatchObject({ status: 'failed', error: { code: 'canceled' }, usage: null });
		replicate.setPendingPolls(1);
	});
});

test('metrics count videos by model, host and outcome, and their cost', async () => {
	const metrics = await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }).then((response) => response.text());
	expect(metrics).toMatch(/imagegen_generations_total\{model="p-video",provider="pruna",outcome="success"\} [1-9]/);
	expect(metrics).toMatch(/imagegen_generations_total\{model="p-video",provider="pruna",outcome="upstream_failed"\} [1-9]/);
	expect(metrics).toMatch(/imagegen_generation_cost_usd_total\{model="p-video"\} 0\.\d+/);
});
