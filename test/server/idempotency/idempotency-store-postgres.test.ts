/**
 * Idempotency keys in PostgreSQL: the contract (each open() a pool of its own, as another replica
 * has), and what the store does there beyond it: its sweep keeps a running claim whose lease still
 * runs, and without a `now` the database's clock decides.
 */
import { SqlIdempotencyStore } from '../../../server/src/idempotency/sql-idempotency-store';
import type { IdempotencyClaim, StoredAnswer } from '../../../server/src/idempotency/idempotency-store';
import { describeIdempotencyStoreContract } from '../support/idempotency-contract';
import { poolPerOpen, useDatabasePerTest } from '../support/postgres';

const database = useDatabasePerTest();

async function replicas(count: number): Promise<SqlIdempotencyStore[]> {
	return (await database.replicas(count)).map((replica) => new SqlIdempotencyStore(replica));
}

const T0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const DAY = 86_400_000;

function claimOf(overrides: Partial<IdempotencyClaim> = {}): IdempotencyClaim {
	return { apiKeyId: 'key-a', key: 'req-1', fingerprint: 'f'.repeat(64), expiresAt: at(DAY), leaseUntil: at(30_000), ...overrides };
}

const ANSWER: StoredAnswer = {
	status: 200,
	contentType: 'application/json; charset=utf-8',
	body: '{"created":1,  "data":[{"url":"http://x/\u00e9\u{1F600}.png"}]}\n',
};

describe('PostgreSQL idempotency store', () => {
	it('sweep deletes expired answers and abandoned expired claims, and nothing else', async () => {
		const [a] = await replicas(1);
		await a!.claim(claimOf({ key: 'done-expired', expiresAt: at(1000) }), T0);
		await a!.complete('key-a', 'done-expired', ANSWER);
		await a!.claim(claimOf({ key: 'running-expired', expiresAt: at(1000), leaseUntil: at(1000) }), T0);
		await a!.claim(claimOf({ key: 'running-leased', expiresAt: at(1000), leaseUntil: at(DAY) }), T0);
		await a!.claim(claimOf({ key: 'done-live', expiresAt: at(DAY) }), T0);
		await a!.complete('key-a', 'done-live', ANSWER);

		expect(await a!.sweep(at(999))).toBe(0);
		expect(await a!.sweep(at(2000))).toBe(2);
		expect(await a!.sweep(at(2000))).toBe(0);
		const rows = await (await database.replicas(1))[0]!.all<{ key: string }>('SELECT key FROM idempotency_keys ORDER BY key');
		expect(rows.map((row) => row.key)).toEqual(['done-live', 'running-leased']);
		expect(await a!.claim(claimOf({ key: 'done-live' }), at(2000))).toEqual({ state: 'replay', answer: ANSWER });
	});

	it('without a `now`, the database clock decides', async () => {
		const [a] = await replicas(1);
		const past = new Date(Date.now() - 1000);
		await a!.claim(claimOf({ expiresAt: past, leaseUntil: past }));
		expect(await a!.claim(claimOf({ expiresAt: new Date(Date.now() + DAY), leaseUntil: new Date(Date.now() + 60_000) }))).toEqual({ state: 'claimed' });
		expect(await a!.claim(claimOf())).toEqual({ state: 'in_progress' });
		expect(await a!.sweep()).toBe(0);
	});
});

// Each open() is its own pool on one database: a restart, or another replica.
describeIdempotencyStoreContract('SqlIdempotencyStore on PostgreSQL', async () => ({ ...(await poolPerOpen(database.postgres(), (opened) => new SqlIdempotencyStore(opened))), shared: true }));
