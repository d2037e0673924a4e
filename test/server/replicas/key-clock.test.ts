/**
 * Managed keys judged by one clock: a replica whose own clock is a day ahead of the database's
 * still accepts a key that expires in an hour, and counts a daily budget in the database's day,
 * so it neither refuses a valid key nor admits a second day's spend today.
 */
import type { RunningServer } from '../../helpers/server';
import { callAs } from '../support/http';
import { startFleet, startInfrastructure, skewedClock, type Fleet, type FleetInfrastructure } from '../support/replicas';

jest.setTimeout(180_000);

const ADMIN_KEY = 'clock-admin-key-0123456789';
const DAY_AND_AN_HOUR_MS = 25 * 3_600_000;

let infrastructure: FleetInfrastructure;
let fleet: Fleet;
let ahead: RunningServer;

beforeAll(async () => {
	infrastructure = await startInfrastructure();
	fleet = await startFleet(infrastructure, { count: 1, storage: 'disk', args: ['--admin-key', ADMIN_KEY] });
	ahead = await fleet.startReplica([], skewedClock(DAY_AND_AN_HOUR_MS));
});
afterAll(async () => {
	await ahead?.stop({ signal: 'SIGKILL' });
	await fleet?.stop();
	await infrastructure?.stop();
});

const call = callAs;

const generate = (replica: RunningServer, secret: string) =>
	call(replica, 'POST', '/v1/images/generations', secret, { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json' });

it('a replica a day ahead accepts a key that expires in an hour', async () => {
	const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
	const key = (await call(fleet.replicas[0]!, 'POST', '/v1/admin/keys', ADMIN_KEY, { name: 'expiring', expires_at: expiresAt })).body;
	const answer = await call(ahead, 'GET', '/v1/models', key.key);
	expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 200, code: undefined });
});

it('a replica a day ahead counts a daily budget in the database day', async () => {
	const key = (await call(fleet.replicas[0]!, 'POST', '/v1/admin/keys', ADMIN_KEY, { name: 'daily', budget_usd: 0.0035, budget_period: 'day' })).body;
	expect((await generate(fleet.replicas[0]!, key.key)).status).toBe(200);
	const second = await generate(ahead, key.key);
	expect({ status: second.status, code: second.body.error?.code }).toEqual({ status: 402, code: 'budget_exceeded' });
	expect((await call(ahead, 'GET', `/v1/admin/keys/${key.id}`, ADMIN_KEY)).body.budget.spent_usd).toBe(0.0035);
});
