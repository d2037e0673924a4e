/**
 * A process that loses a job's lease while alive (paused longer than the lease, as a stalled
 * machine or one cut off from the database is) stops quietly when it wakes: the replica that took
 * the job over follows the host's job to its end and charges it; the paused one neither cancels
 * that host job, nor gives the charge back a second time, nor writes a second usage line. Real
 * processes on one PostgreSQL database; the pause is a real SIGSTOP.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { MODELS } from '../../../core/models';
import type { RunningServer } from '../../helpers/server';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { call, createManagedKey, eventually } from '../support/http';
import { makeImage } from '../support/media';
import { startFleet, startInfrastructure, type Fleet, type FleetInfrastructure } from '../support/replicas';

const ADMIN_KEY = 'admin-key-for-lease-tests-0123456789abcdef';
let infrastructure: FleetInfrastructure;
let fake: FakeHosts;
let fleet: Fleet | undefined;
let paused: RunningServer | undefined;

beforeAll(async () => {
	[infrastructure, fake] = await Promise.all([startInfrastructure(), startFakeHosts()]);
	fake.setImage(await makeImage('png', 64, 64));
}, 120_000);
afterAll(async () => {
	if (paused?.process.pid) process.kill(paused.process.pid, 'SIGCONT');
	await fleet?.stop();
	await Promise.all([infrastructure?.stop(), fake?.close()]);
});

test('a paused owner that lost its lease stops quietly: no host cancel, no second refund, one usage line', async () => {
	fake.setPredictionMs(12_000);
	fleet = await startFleet(infrastructure, { count: 0, storage: 'disk', args: ['--job-lease-seconds', '3', '--providers', 'p-image=replicate', '--allow-private-urls', '--admin-key', ADMIN_KEY, '--log-level', 'warn'] });
	const env = { REPLICATE_API_TOKEN: 'r8_test_token', REPLICATE_BASE_URL: `${fake.origin}/v1` };
	const first = await fleet.startReplica([], env);
	const { id: keyId, key } = await createManagedKey(first, ADMIN_KEY, { name: 'paused owner', budget_usd: 1, budget_period: 'total' });
	const created = await call<{ id: string }>(first, '/v1/images/generations', {
		method: 'POST',
		auth: `Bearer ${key}`,
		headers: { 'content-type': 'application/json', prefer: 'respond-async' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', response_format: 'url' }),
	});
	expect(created.status).toBe(202);
	expect(await eventually(() => fake.callsTo('GET', '/v1/predictions/').length > 0, 15_000)).toBe(true);
	paused = first;
	process.kill(first.process.pid!, 'SIGSTOP');

	const second = await fleet.startReplica([], env);
	const status = async () => (await call<{ status: string }>(second, `/v1/generations/${created.body.id}`, { auth: `Bearer ${key}` })).body.status;
	expect(await eventually(async () => (await status()) === 'succeeded', 40_000, 250)).toBe(true);

	process.kill(first.process.pid!, 'SIGCONT');
	paused = undefined;
	// Time for the woken process to renew (a third of the lease), learn the job is not its own and stop.
	await delay(4_000);

	const price = MODELS['p-image'].priceUsd;
	const keyAnswer = await call<{ budget: { spent_usd: number } }>(second, `/v1/admin/keys/${keyId}`, { auth: `Bearer ${ADMIN_KEY}` });
	expect(keyAnswer.body.budget.spent_usd).toBeCloseTo(price, 6);
	expect(fake.callsTo('POST', '/v1/predictions/').filter((request) => request.path.endsWith('/cancel'))).toHaveLength(0);
	expect(fake.predictionsMade()).toHaveLength(1);
	const lines = await fleet.query<{ lines: string }>('SELECT count(*) AS lines FROM usage_lines WHERE api_key_id = $1', [keyId]);
	expect(Number(lines[0]!.lines)).toBe(1);
	expect(await status()).toBe('succeeded');
}, 150_000);
