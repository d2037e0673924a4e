/** The data dir's key store (SQLite): the contract, plus what only a store shared by processes on one file must do. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteKeyStore } from '../../../server/src/keys/sqlite-key-store';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/sqlite/database';
import { describeKeyStoreContract, managedKey } from '../support/key-store-contract';

/** Each store on its own connection to the file, as each process has. */
async function sqliteHarness() {
	const dataDir = await mkdtemp(join(tmpdir(), 'key-store-contract-'));
	const databases: SqliteDatabase[] = [];
	const open = async () => {
		const database = openSqliteDatabase(dataDir);
		databases.push(database);
		const store = new SqliteKeyStore(database);
		return Object.assign(store, { close: async () => void (database.open && database.close()) });
	};
	return { dataDir, open, shared: true, cleanup: async () => {
		for (const database of databases) if (database.open) database.close();
		await rm(dataDir, { recursive: true, force: true });
	} };
}

describeKeyStoreContract('SqliteKeyStore', sqliteHarness);

describe('SqliteKeyStore on a file several processes share', () => {
	let harness: Awaited<ReturnType<typeof sqliteHarness>>;
	beforeEach(async () => {
		harness = await sqliteHarness();
	});
	afterEach(() => harness.cleanup());

	it('stores only the hash of a secret', async () => {
		const store = await harness.open();
		const { secret, ...key } = managedKey();
		await store.create(key);
		const database = openSqliteDatabase(harness.dataDir);
		const stored = JSON.stringify(database.prepare('SELECT * FROM api_keys').all());
		database.close();
		expect(stored).toContain(key.secretHash);
		expect(stored).not.toContain(secret);
	});
});
