/**
 * What the SQLite file metadata adds to the contract: a batch taken by a sweeper that died is
 * taken over once its lease has passed, and the pages of swept rows go back to the file system.
 */
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import type { ExpiredEntry } from '../../../server/src/storage/file-metadata';
import { SqliteFileMetadata, SWEEP_LEASE_MS } from '../../../server/src/storage/sqlite-file-metadata';
import { pngFileRecord } from '../support/file-records';
import { useSqliteDataDir } from '../support/sqlite-data-dir';

const T0 = new Date('2030-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

const dataDir = useSqliteDataDir('imagegen-sqlite-files-');
function open(): { database: SqliteDatabase; store: SqliteFileMetadata } {
	const database = dataDir.openDatabase();
	return { database, store: new SqliteFileMetadata(database) };
}

async function storeFiles(store: SqliteFileMetadata, prefix: string, count: number, expiresAt: Date): Promise<void> {
	for (let index = 0; index < count; index += 1) {
		const id = `${prefix}-${String(index).padStart(20, '0')}`;
		await store.reserve({ id, storageKey: `${id}.png`, ownerKeyId: 'owner', expiresAt });
		await store.publish(pngFileRecord(id, { size: 1000, createdAt: T0, expiresAt }));
	}
}

it('a batch whose sweeper died is left alone during its lease and taken over after it', async () => {
	const { store } = open();
	await storeFiles(store, 'dying', 3, at(1000));
	// The first sweeper takes its batch and its process is killed while it deletes the bytes.
	const dying = store.sweepExpired(() => new Promise<void>(() => undefined), { now: at(2000), batchSize: 10 });
	void dying;

	const survivor = open().store;
	const handed: ExpiredEntry[] = [];
	const collect = async (batch: ExpiredEntry[]) => void handed.push(...batch);
	expect(await survivor.sweepExpired(collect, { now: at(2000 + SWEEP_LEASE_MS - 1), batchSize: 10 })).toBe(0);
	expect(await survivor.sweepExpired(collect, { now: at(2000 + SWEEP_LEASE_MS), batchSize: 10 })).toBe(3);
	expect(handed.map((entry) => entry.id).sort()).toEqual(['dying-00000000000000000000', 'dying-00000000000000000001', 'dying-00000000000000000002']);
});

it('gives the pages of swept rows back, so the file shrinks once a burst has expired', async () => {
	const { database, store } = open();
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
