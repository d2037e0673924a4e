/** The data dir's key store (SQLite): the contract, plus what only a store shared by processes on one file must do. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteKeyStore } from '../../../server/src/keys/sqlite-key-store';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/sqlite/database';
import { describeKeyStoreContract, managedKey, withoutSecret } from '../support/key-store-contract';

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

	it('a reservation left by a process that died stops counting when its lease ends', async () => {
		const dead = await harness.open();
		const alive = await harness.open();
		const key = withoutSecret(managedKey());
		await alive.create(key);
		const now = new Date();
		const reservation = { keyId: key.id, amountUsd: 0.01, limitUsd: 0.01, since: new Date(0) };
		expect(await dead.reserve({ ...reservation, id: 'left-behind', leaseUntil: new Date(now.getTime() + 1_000) }, now)).toEqual({ admitted: true });
		await dead.close?.();
		expect((await alive.reserve({ ...reservation, id: 'during-lease', leaseUntil: new Date(now.getTime() + 60_000) }, new Date(now.getTime() + 999))).admitted).toBe(false);
		expect(await alive.reserve({ ...reservation, id: 'after-lease', leaseUntil: new Date(now.getTime() + 60_000) }, new Date(now.getTime() + 1_000))).toEqual({ admitted: true });
		// The dead process's reservation can no longer be settled into spend.
		await alive.settle('left-behind', 0.01);
		expect(await alive.spent(key.id, new Date(0))).toBe(0);
	});
});
