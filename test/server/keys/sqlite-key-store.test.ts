/** The data dir's key store (SQLite): the contract, plus what only a store shared by processes on one file must do. */
import { SqliteKeyStore } from '../../../server/src/keys/sqlite-key-store';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { describeKeyStoreContract, managedKey } from '../support/key-store-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

/** Each store on its own connection to the file, as each process has. */
async function sqliteHarness() {
	const harness = await connectionPerOpen('key-store-contract-', (database) => Object.assign(new SqliteKeyStore(database), { close: async () => void (database.open && database.close()) }));
	return { ...harness, shared: true };
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
