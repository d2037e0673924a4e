/**
 * Managed keys across three replicas of the built CLI on one PostgreSQL: a revocation or block
 * made on one replica is refused by every replica within a second, a rotation's grace time holds
 * on all of them, and concurrent generations spread over the fleet with room for k images give
 * exactly k successes.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { RunningServer } from '../../helpers/server';
import { callAs } from '../support/http';
import { startFleet, startInfrastructure, type Fleet, type FleetInfrastructure } from '../support/replicas';

const ADMIN_KEY = 'fleet-admin-key-0123456789';
/** The contract: at most one second of caching. */
const PROPAGATION_MS = 1_000;

let infrastructure: FleetInfrastructure;
let fleet: Fleet;

beforeAll(async () => {
	infrastructure = await startInfrastructure();
	fleet = await startFleet(infrastructure, { storage: 'disk', args: ['--admin-key', ADMIN_KEY] });
}, 120_000);
afterAll(async () => {
	await fleet?.stop();
	await infrastructure?.stop();
});

const call = callAs;
const admin = (replica: RunningServer, method: string, path: string, body?: unknown) => call(replica, method, `/v1/admin${path}`, ADMIN_KEY, body);
const models = (replica: RunningServer, secret: string) => call(replica, 'GET', '/v1/models', secret);
const generate = (replica: RunningServer, secret: string) =>
	call(replica, 'POST', '/v1/images/generations', secret, { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json' });

async function createKey(fields: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
	const created = await admin(fleet.replicas[0]!, 'POST', '/keys', { name: 'fleet', ...fields });
	expect(created.status).toBe(201);
	return created.body;
}

/** Uses the key on every replica until each accepts it, so each has it cached. */
async function warm(secret: string): Promise<void> {
	for (const replica of fleet.replicas) expect((await models(replica, secret)).status).toBe(200);
}

describe('managed keys on a fleet', () => {
	it('a revoked key is refused by every replica within a second', async () => {
		const key = await createKey();
		await warm(key.key);
		expect((await admin(fleet.replicas[1]!, 'DELETE', `/keys/${key.id}`)).status).toBe(204);
		await delay(PROPAGATION_MS);
		for (const replica of fleet.replicas) {
			const answer = await models(replica, key.key);
			expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 401, code: 'invalid_api_key' });
		}
	});

	it('a blocked key is refused by every replica within a second, and accepted again once unblocked', async () => {
		const key = await createKey();
		await warm(key.key);
		expect((await admin(fleet.replicas[2]!, 'PATCH', `/keys/${key.id}`, { blocked: true })).status).toBe(200);
		await delay(PROPAGATION_MS);
		for (const replica of fleet.replicas) expect((await models(replica, key.key)).body.error.code).toBe('key_blocked');
		await admin(fleet.replicas[0]!, 'PATCH', `/keys/${key.id}`, { blocked: false });
		await delay(PROPAGATION_MS);
		await warm(key.key);
	});

	it('a rename on one replica and a block on another sent at once both hold, 20 rounds', async () => {
		const key = await createKey();
		const lost: number[] = [];
		for (let round = 0; round < 20; round++) {
			const [renamed, blocked] = await Promise.all([
				admin(fleet.replicas[1]!, 'PATCH', `/keys/${key.id}`, { name: `round ${round}` }),
				admin(fleet.replicas[0]!, 'PATCH', `/keys/${key.id}`, { blocked: round % 2 === 0 }),
			]);
			expect([renamed.status, blocked.status]).toEqual([200, 200]);
			const seen = (await admin(fleet.replicas[2]!, 'GET', `/keys/${key.id}`)).body;
			if (seen.name !== `round ${round}` || seen.blocked !== (round % 2 === 0)) lost.push(round);
		}
		expect(lost).toEqual([]);
	});

	it('a rotated key: the new secret works everywhere at once, the old one until its grace time ends', async () => {
		const key = await createKey();
		await warm(key.key);
		const graceSeconds = 5;
		const rotated = await admin(fleet.replicas[0]!, 'POST', `/keys/${key.id}/rotate`, { grace_seconds: graceSeconds });
		expect(rotated.status).toBe(200);
		const rotatedAt = Date.now();
		await warm(rotated.body.key);
		await warm(key.key);
		// Usage of either secret is the same key's.
		expect((await generate(fleet.replicas[1]!, key.key)).status).toBe(200);
		expect((await generate(fleet.replicas[2]!, rotated.body.key)).status).toBe(200);
		const usage = await admin(fleet.replicas[0]!, 'GET', `/usage?key_id=${key.id}`);
		expect(usage.body.total.images).toBe(2);
		await delay(Math.max(0, rotatedAt + graceSeconds * 1000 + PROPAGATION_MS - Date.now()));
		for (const replica of fleet.replicas) {
			expect((await models(replica, key.key)).body.error.code).toBe('invalid_api_key');
			expect((await models(replica, rotated.body.key)).status).toBe(200);
		}
	});

	it('N concurrent generations over the replicas with room for k images: exactly k succeed, the rest 402', async () => {
		const k = 5;
		const key = await createKey({ budget_usd: 0.0035 * k, budget_period: 'month' });
		const answers = await Promise.all(Array.from({ length: 18 }, (_, index) => generate(fleet.replicas[index % fleet.replicas.length]!, key.key)));
		const statuses = answers.map((answer) => answer.status);
		expect(statuses.filter((status) => status === 200)).toHaveLength(k);
		expect(statuses.filter((status) => status === 402)).toHaveLength(18 - k);
		for (const answer of answers.filter((each) => each.status === 402)) {
			expect(answer.body.error).toMatchObject({ type: 'billing_error', code: 'budget_exceeded' });
		}
		for (const replica of fleet.replicas) {
			const seen = await admin(replica, 'GET', `/keys/${key.id}`);
			expect(seen.body.budget.spent_usd).toBe(0.0175);
		}
	});

	it('a key made on one replica works on the others at once, and the admin key is never printed', async () => {
		const key = await createKey({ models: ['textimage-v2'] });
		for (const replica of fleet.replicas) {
			const answer = await models(replica, key.key);
			expect(answer.body.data.map((model: { id: string }) => model.id)).toEqual(['textimage-v2']);
			expect(replica.output()).not.toContain(ADMIN_KEY);
			expect(replica.output()).not.toContain(key.key);
		}
	});
});
