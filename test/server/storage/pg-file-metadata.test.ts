/**
 * PostgreSQL file metadata: the shared contract, with every `open()` a separate pool (a replica)
 * on one database, plus what only a database can do wrong: a sweeper's connection dying mid-batch.
 */
import { openDatabase, type Database } from '../../../server/src/db/postgres/postgres';
import { PgFileMetadataStore } from '../../../server/src/storage/pg-file-metadata';
import type { ExpiredEntry } from '../../../server/src/storage/file-metadata';
import { describeFileMetadataContract } from '../support/file-metadata-contract';
import { usePostgresCluster } from '../support/postgres';

const postgres = usePostgresCluster();
let url: string;
beforeAll(async () => {
	url = await postgres.createDatabase();
	await (await openDatabase(url)).close();
});

async function replicas() {
	const databases: Database[] = [];
	const open = async () => {
		const database = await openDatabase(url);
		databases.push(database);
		return new PgFileMetadataStore(database.pool);
	};
	return {
		open,
		databases,
		close: async () => {
			await Promise.all(databases.map((database) => database.close()));
		},
	};
}

describeFileMetadataContract('PostgreSQL', async () => {
	await postgres.admin(url, 'TRUNCATE files');
	return replicas();
});

describe('PostgreSQL file metadata', () => {
	it('a sweeper whose connection dies while disposing leaves its batch to the next sweeper', async () => {
		await postgres.admin(url, 'TRUNCATE files');
		const fleet = await replicas();
		try {
			const store = await fleet.open();
			const expiresAt = new Date('2030-01-01T00:00:00Z');
			for (const id of ['a1', 'a2', 'a3']) await store.reserve({ id, storageKey: `k/${id}`, ownerKeyId: 'key', expiresAt });
			const now = new Date('2030-01-02T00:00:00Z');

			const dying = store.sweepExpired(
				async () => {
					// The replica is killed: its connections go, whatever it was doing.
					await fleet.databases[0]!.pool.query(
						"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'imagegen-server' AND state = 'idle in transaction'",
					);
				},
				{ now, batchSize: 10 },
			);
			await expect(dying).rejects.toThrow();

			const survivor = await fleet.open();
			const handed: ExpiredEntry[] = [];
			expect(await survivor.sweepExpired(async (batch) => void handed.push(...batch), { now, batchSize: 10 })).toBe(3);
			expect(handed.map((entry) => entry.id).sort()).toEqual(['a1', 'a2', 'a3']);
		} finally {
			await fleet.close();
		}
	});
});
