/**
 * File metadata in the data dir's SQLite database: the shared contract, with every `open()` a
 * connection of its own (another process on the data dir), plus what only the embedded database
 * does: the pages of swept rows go back to the file system.
 */
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqlFileMetadata, SWEEP_LEASE_MS } from '../../../server/src/storage/sql-file-metadata';
import { describeFileMetadataContract } from '../support/file-metadata-contract';
import { pngFileRecord } from '../support/file-records';
import { connectionPerOpen, useSqliteDataDir } from '../support/sqlite-data-dir';

/** Its connection in the process's commit thread too, as the service's close does. */
async function closeDatabase(database: SqliteDatabase): Promise<void> {
	if (!database.open) return;
	await groupCommitOf(database).close();
	database.close();
}

describeFileMetadataContract(
	'SQLite',
	async () => {
		const dataDir = await connectionPerOpen('imagegen-files-contract-', (database) => new SqlFileMetadata(new SqliteAdapter(database)), closeDatabase);
		return { open: dataDir.open, close: dataDir.cleanup };
	},
	{ sweepLeaseMs: SWEEP_LEASE_MS },
);

const T0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

const dataDir = useSqliteDataDir('imagegen-sqlite-files-');

async function storeFiles(store: SqlFileMetadata, prefix: string, count: number, expiresAt: Date): Promise<void> {
	for (let index = 0; index < count; index += 1) {
		const id = `${prefix}-${String(index).padStart(20, '0')}`;
		await store.reserve({ id, storageKey: `${id}.png`, ownerKeyId: 'owner', expiresAt });
		await store.publish(pngFileRecord(id, { size: 1000, createdAt: T0, expiresAt }));
	}
}

describe('SQLite file metadata', () => {
	it('gives the pages of swept rows back, so the file shrinks once a burst has expired', async () => {
		const database = dataDir.openDatabase();
		const store = new SqlFileMetadata(new SqliteAdapter(database));
		const pagesEmpty = database.pragma('page_count', { simple: true }) as number;
		await storeFiles(store, 'burst', 1200, at(1000));
		await storeFiles(store, 'live', 5, at(10_000_000));
		const pagesFull = database.pragma('page_count', { simple: true }) as number;
		expect(pagesFull).toBeGreaterThan(pagesEmpty + 40);

		expect(await store.sweepExpired(async () => undefined, { now: at(2000), batchSize: 100 })).toBe(1200);
		expect(database.pragma('freelist_count', { simple: true })).toBe(0);
		expect(database.pragma('page_count', { simple: true }) as number).toBeLessThan(pagesEmpty + 10);
		expect(await store.get('live-00000000000000000004', at(2000))).not.toBeNull();
	});
});
