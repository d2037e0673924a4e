/** Managed keys in PostgreSQL: the KeyStore contract, with each open() a pool of its own (another replica). */
import { PgKeyStore } from '../../../server/src/keys/pg-key-store';
import { openDatabase, type Database } from '../../../server/src/db/postgres';
import { describeKeyStoreContract } from '../support/key-store-contract';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

let cluster: TestPostgres;
beforeAll(async () => {
	cluster = await startTestPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

describeKeyStoreContract('PgKeyStore', async () => {
	const databaseUrl = await cluster.createDatabase();
	const pools: Database[] = [];
	return {
		open: async () => {
			const database = await openDatabase(databaseUrl);
			pools.push(database);
			return new PgKeyStore(database.pool);
		},
		shared: true,
		cleanup: async () => {
			await Promise.all(pools.splice(0).map((database) => database.close()));
		},
	};
});
