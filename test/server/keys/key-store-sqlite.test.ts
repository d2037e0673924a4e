/** Managed keys on the data dir's SQLite database: the contract, plus what only a store shared by processes on one file must do. */
import { waitFromTimers } from '../../../server/src/db/sqlite/busy';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlKeyStore } from '../../../server/src/keys/sql-key-store';
import { describeKeyStoreContract, managedKey } from '../support/key-store-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

async function closeConnection(database: SqliteDatabase): Promise<void> {
	if (!database.open) return;
	await groupCommitOf(database).close();
	database.close();
}

/**
 * Each store over its own connection to the file, as each service process has: one that waits for
 * another's lock from timers, so that the stores of this one process wait for each other's
 * transactions without stopping the event loop the holder needs to finish. Its close() is the
 * process going away.
 */
async function sqliteHarness() {
	const harness = await connectionPerOpen(
		'key-store-contract-',
		(database) => {
			waitFromTimers(database);
			return Object.assign(new SqlKeyStore(new SqliteAdapter(database)), { close: () => closeConnection(database) });
		},
		closeConnection,
	);
	return { ...harness, shared: true };
}

describeKeyStoreContract('SqlKeyStore on SQLite', sqliteHarness);

describe('SqlKeyStore on a file several processes share', () => {
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
