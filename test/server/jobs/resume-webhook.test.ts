/**
 * A job taken over after a restart is not refused again for its `webhook_url`: the address was
 * checked when the job was asked for, and a check that fails now (a DNS hiccup, a policy that
 * changed) must not fail a job whose host is working and charging. The delivery is checked when it
 * is sent, as every delivery is.
 */
import { parseGenerationRequest } from '../../../core/schemas';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { newJobId } from '../../../server/src/jobs/job-runner';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { eventually } from '../support/http';
import { makeImage } from '../support/media';

let fake: FakeHosts;
let server: InProcessServer;
beforeAll(async () => {
	fake = await startFakeHosts();
	fake.setImage(await makeImage('png', 64, 64));
	server = await startInProcessServer({
		args: ['--log-level', 'silent', '--providers', 'p-image=replicate', '--allow-private-urls'],
		env: { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1` },
		parts: { providerTiming: { pollIntervalMs: 10, retryBaseDelayMs: 5 } },
	});
});
afterAll(async () => {
	await server.stop({ removeData: true });
	await fake.close();
});

test('a job left by a stopped process, whose webhook_url the address check now refuses, is followed to its end', async () => {
	const made = await fetch(`${fake.origin}/v1/models/prunaai/p-image/predictions`, {
		method: 'POST',
		headers: { authorization: 'Bearer r8_test_token', 'content-type': 'application/json' },
		body: JSON.stringify({ input: { prompt: 'a lighthouse' } }),
	}).then(async (response) => (await response.json()) as { id: string });
	// Loopback: refused by the address check of webhook targets (no --webhook-allow-private).
	const request = parseGenerationRequest({ model: 'p-image', prompt: 'a lighthouse', response_format: 'url', webhook_url: 'http://127.0.0.1:9/hook', seed: 7 });
	const id = newJobId();
	const apiKeyId = apiKeyIdOf(server.apiKey);
	const { jobStore, jobs } = server.app;
	await jobStore.create({ id, apiKeyId, model: 'p-image', request: request as unknown as Record<string, unknown>, webhookUrl: request.webhook_url!, chargedMicros: 0, createdAt: new Date(), owner: 'another-machine/1/stopped', leaseUntil: new Date(Date.now() - 1000) });
	await jobStore.hostJobStarted(id, { provider: 'replicate', id: made.id });
	expect(await jobs.recover()).toBeGreaterThanOrEqual(1);
	expect(await eventually(async () => (await jobStore.get(id, apiKeyId))?.status !== 'running', 15_000)).toBe(true);
	expect(await jobStore.get(id, apiKeyId)).toMatchObject({ status: 'succeeded', error: null });
	expect(fake.predictionsMade()).toEqual([made.id]);
});
