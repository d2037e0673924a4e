/**
 * A managed key's webhook secret goes with its secret: rotating the key (POST
 * /v1/admin/keys/{id}/rotate) gives it a new webhook secret, so whoever held the old key cannot
 * sign deliveries its receivers accept once they verify with the new one. Over the whole service in
 * process, to a receiver on loopback.
 */
import type { GenerationObject } from '../../../server/src/jobs/job-store';
import { RETRY_PAUSES_MS } from '../../../server/src/webhooks/outbox';
import { enqueueJobEnd } from '../support/job-ends';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { useFakeClock } from '../support/clock';
import { call, createManagedKey, eventually, postJson } from '../support/http';
import { startReceiver, verifyStandardWebhook, type Receiver, type Received } from '../support/webhook-receiver';

const ADMIN_KEY = 'admin-secret-0123456789';
let receiver: Receiver;
let server: InProcessServer;

beforeEach(async () => {
	useFakeClock();
	receiver = await startReceiver();
	server = await startInProcessServer({ args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--webhook-allow-private'] });
});
afterEach(async () => {
	await server.stop();
	await receiver.close();
	jest.useRealTimers();
});

const secretWith = async (key: string) => {
	const answer = await call<{ secret: string }>(server, '/v1/webhooks/secret', { auth: `Bearer ${key}` });
	expect(answer.status).toBe(200);
	return answer.body.secret;
};

const generation = (id: string): GenerationObject => ({ object: 'generation', id, status: 'canceled', model: 'p-image', created: 1_900_000_000, finished_at: 1_900_000_003, result: null, error: null });

/** A job of the key ends with a webhook, as the job runner reports it; answers the delivery received. */
async function deliveryFor(keyId: string, jobId: string): Promise<Received> {
	const before = receiver.received.length;
	await enqueueJobEnd(server, { apiKeyId: keyId, webhookUrl: receiver.url, generation: generation(jobId) });
	expect(await eventually(() => receiver.received.length === before + 1)).toBe(true);
	await server.app.webhooks.outbox.settled();
	return receiver.received[before]!;
}

const verifies = (secret: string, delivery: Received) => {
	try {
		verifyStandardWebhook(secret, delivery.headers, delivery.body, Number(delivery.headers['webhook-timestamp']));
		return true;
	} catch {
		return false;
	}
};

it('rotating a key gives it a new webhook secret: deliveries after it verify with the new one only', async () => {
	const created = await createManagedKey(server, ADMIN_KEY, { name: 'rotating' });
	const oldSecret = await secretWith(created.key);
	expect(await secretWith(created.key)).toBe(oldSecret);
	expect(verifies(oldSecret, await deliveryFor(created.id, 'gen_before'))).toBe(true);

	const rotated = await postJson<{ id: string; key: string }>(server, `/v1/admin/keys/${created.id}/rotate`, { grace_seconds: 60 }, { auth: `Bearer ${ADMIN_KEY}` });
	expect(rotated.status).toBe(200);
	expect(rotated.body.id).toBe(created.id);
	const newSecret = await secretWith(rotated.body.key);
	expect(newSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
	expect(newSecret).not.toBe(oldSecret);
	// The old key still authenticates within its grace time, but asking with it gives the old secret, never the new one.
	expect(await secretWith(created.key)).toBe(oldSecret);

	const after = await deliveryFor(created.id, 'gen_after');
	expect(verifies(newSecret, after)).toBe(true);
	expect(verifies(oldSecret, after)).toBe(false);
});

it('a delivery enqueued before the rotation and retried after it is signed with the new secret', async () => {
	const created = await createManagedKey(server, ADMIN_KEY, { name: 'rotating' });
	const oldSecret = await secretWith(created.key);
	receiver.answer(500);
	const first = await deliveryFor(created.id, 'gen_retried');
	expect(verifies(oldSecret, first)).toBe(true);

	const rotated = await postJson<{ key: string }>(server, `/v1/admin/keys/${created.id}/rotate`, {}, { auth: `Bearer ${ADMIN_KEY}` });
	const newSecret = await secretWith(rotated.body.key);
	receiver.answer(200);
	jest.advanceTimersByTime(RETRY_PAUSES_MS[0]);
	expect(await eventually(() => receiver.received.length === 2)).toBe(true);
	const retry = receiver.received[1]!;
	expect(retry.headers['webhook-id']).toBe(first.headers['webhook-id']);
	expect(verifies(newSecret, retry)).toBe(true);
	expect(verifies(oldSecret, retry)).toBe(false);
});

it('a flat key’s secret is unchanged: it is derived from the key’s id, which a new key changes', async () => {
	const secret = await secretWith(server.apiKey);
	expect(await secretWith(server.apiKey)).toBe(secret);
	const created = await createManagedKey(server, ADMIN_KEY, { name: 'another' });
	expect(await secretWith(created.key)).not.toBe(secret);
});
