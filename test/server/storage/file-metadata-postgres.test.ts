/**
 * File metadata in PostgreSQL: the shared contract, with every `open()` a separate pool (a replica)
 * on one database, plus what only a fleet can do wrong: a replica that dies mid-sweep.
 */
import { openDatabase } from '../../../server/src/db/postgres/postgres';
import type { ExpiredEntry } from '../../../server/src/storage/file-metadata';
import { SqlFileMetadata, SWEEP_LEASE_MS } from '../../../server/src/storage/sql-file-metadata';
import { describeFileMetadataContract } from '../support/file-metadata-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const postgres = usePostgresCluster();

describeFileMetadataContract(
	'PostgreSQL',
	async () => {
		const fleet = await poolPerOpen(postgres, (adapter) => new SqlFileMetadata(adapter));
		return { open: fleet.open, close: fleet.cleanup };
	},
	{ sweepLeaseMs: SWEEP_LEASE_MS },
);

describe('PostgreSQL file metadata', () => {
	it('a replica that dies while disposing leaves its batch to the next sweeper once its claim has lapsed', async () => {
		const url = await postgres.createDatabase();
		const [dying, surviving] = [await openDatabase(url), await openDatabase(url)];
		try {
			const store = new SqlFileMetadata(dying);
			const expiresAt = new Date('2030-01-01T00:00:00Z');
			for (const id of ['a1', 'a2', 'a3']) await store.reserve({ id, storageKey: `k/${id}`, ownerKeyId: 'key', expiresAt });
			const now = new Date('2030-01-02T00:00:00Z');

			// The replica is killed while it deletes the bytes: its connections go, whatever it was doing.
			const sweeping = store.sweepExpired(() => dying.close(), { now, batchSize: 10 });
			await expect(sweeping).rejects.toThrow();

			const survivor = new SqlFileMetadata(surviving);
			const handed: ExpiredEntry[] = [];
			const collect = async (batch: ExpiredEntry[]) => void handed.push(...batch);
			expect(await survivor.sweepExpired(collect, { now, batchSize: 10 })).toBe(0);
			expect(await survivor.sweepExpired(collect, { now: new Date(now.getTime() + SWEEP_LEASE_MS), batchSize: 10 })).toBe(3);
			expect(handed.map((entry) => entry.id).sort()).toEqual(['a1', 'a2', 'a3']);
			expect(handed.every((entry) => !entry.published)).toBe(true);
		} finally {
			await surviving.close();
		}
	});
});
