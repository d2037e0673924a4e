/**
 * Idempotency keys in PostgreSQL: claims are atomic across replicas (each store has its own pool),
 * answers replay byte for byte, and a claim abandoned by a dead replica can be taken over.
 */
import { PgIdempotencyStore } from '../../../server/src/idempotency/pg-idempotency-store';
import { openDatabase, type Database } from '../../../server/src/db/postgres';
import type { IdempotencyClaim, StoredAnswer } from '../../../server/src/idempotency/idempotency-store';
import { describeIdempotencyStoreContract } from '../support/idempotency-contract';
import { useDatabasePerTest } from '../support/postgres';

const database = useDatabasePerTest();

async function replicas(count: number): Promise<PgIdempotencyStore[]> {
	return (await database.replicas(count)).map((replica) => new PgIdempotencyStore(replica.pool));
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
	it('claims once; a repeat is in progress, then replays the answer byte for byte; another body is a mismatch', async () => {
		const [a, b] = await replicas(2);
		expect(await a!.claim(claimOf(), T0)).toEqual({ state: 'claimed' });
		expect(await b!.claim(claimOf(), at(1))).toEqual({ state: 'in_progress' });
		expect(await b!.claim(claimOf({ fingerprint: 'e'.repeat(64) }), at(1))).toEqual({ state: 'mismatch' });

		await a!.complete('key-a', 'req-1', ANSWER);
		expect(await b!.claim(claimOf(), at(2))).toEqual({ state: 'replay', answer: ANSWER });
		expect(await a!.claim(claimOf({ leaseUntil: at(DAY * 2) }), at(DAY - 1))).toEqual({ state: 'replay', answer: ANSWER });
		expect(await b!.claim(claimOf({ fingerprint: 'e'.repeat(64) }), at(2))).toEqual({ state: 'mismatch' });
	});

	it('keys are scoped to the API key', async () => {
		const [a] = await replicas(1);
		expect(await a!.claim(claimOf(), T0)).toEqual({ state: 'claimed' });
		expect(await a!.claim(claimOf({ apiKeyId: 'key-b' }), T0)).toEqual({ state: 'claimed' });
		expect(await a!.claim(claimOf({ key: 'req-2' }), T0)).toEqual({ state: 'claimed' });
	});

	it('a released claim (the first request failed) runs again; release never forgets a completed answer', async () => {
		const [a, b] = await replicas(2);
		await a!.claim(claimOf(), T0);
		await a!.release('key-a', 'req-1');
		expect(await b!.claim(claimOf({ fingerprint: 'e'.repeat(64) }), at(1))).toEqual({ state: 'claimed' });
		await b!.complete('key-a', 'req-1', ANSWER);
		await b!.release('key-a', 'req-1');
		expect(await a!.claim(claimOf({ fingerprint: 'e'.repeat(64) }), at(2))).toEqual({ state: 'replay', answer: ANSWER });
	});

	it('a claim whose lease passed is taken over by the same request, by exactly one replica', async () => {
		const stores = await replicas(3);
		expect(await stores[0]!.claim(claimOf({ leaseUntil: at(10_000) }), T0)).toEqual({ state: 'claimed' });
		expect(await stores[1]!.claim(claimOf(), at(9_999))).toEqual({ state: 'in_progress' });
		expect(await stores[1]!.claim(claimOf({ fingerprint: 'e'.repeat(64) }), at(10_000))).toEqual({ state: 'mismatch' });

		const outcomes = await Promise.all(
			Array.from({ length: 30 }, (_, index) => stores[index % 3]!.claim(claimOf({ leaseUntil: at(40_000) }), at(10_000))),
		);
		expect(outcomes.filter((outcome) => outcome.state === 'claimed')).toHaveLength(1);
		expect(outcomes.filter((outcome) => outcome.state === 'in_progress')).toHaveLength(29);

		// The dead replica's late complete may only answer this very request, which the taker also runs.
		await stores[2]!.complete('key-a', 'req-1', ANSWER);
		expect(await stores[0]!.claim(claimOf(), at(50_000))).toEqual({ state: 'replay', answer: ANSWER });
	});

	it('concurrent first claims on many replicas: exactly one wins', async () => {
		const stores = await replicas(3);
		const outcomes = await Promise.all(Array.from({ length: 30 }, (_, index) => stores[index % 3]!.claim(claimOf({ key: 'burst' }), T0)));
		expect(outcomes.filter((outcome) => outcome.state === 'claimed')).toHaveLength(1);
		expect(new Set(outcomes.map((outcome) => outcome.state))).toEqual(new Set(['claimed', 'in_progress']));
	});

	it('past its expiry a key is free again, whatever the body', async () => {
		const [a] = await replicas(1);
		await a!.claim(claimOf(), T0);
		await a!.complete('key-a', 'req-1', ANSWER);
		expect(await a!.claim(claimOf({ fingerprint: 'e'.repeat(64), expiresAt: at(3 * DAY), leaseUntil: at(DAY + 30_000) }), at(DAY))).toEqual({
			state: 'claimed',
		});
		expect(await a!.claim(claimOf({ fingerprint: 'e'.repeat(64) }), at(DAY + 1))).toEqual({ state: 'in_progress' });
	});

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
		const { rows } = await (await database.replicas(1))[0]!.pool.query<{ key: string }>('SELECT key FROM idempotency_keys ORDER BY key');
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

describeIdempotencyStoreContract('PgIdempotencyStore', async () => {
	const databaseUrl = await database.postgres().createDatabase();
	const pools: Database[] = [];
	return {
		// Each open() is its own pool on one database: a restart, or another replica.
		open: async () => {
			const database = await openDatabase(databaseUrl);
			pools.push(database);
			return new PgIdempotencyStore(database.pool);
		},
		shared: true,
		cleanup: async () => {
			await Promise.all(pools.map((database) => database.close()));
		},
	};
});
