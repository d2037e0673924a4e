/** Jobs in PostgreSQL: the JobStore contract, each open() a pool of its own (another replica). */
import { openDatabase, type Database } from '../../../server/src/db/postgres';
import { PgJobStore } from '../../../server/src/jobs/pg-job-store';
import { PgKeyStore } from '../../../server/src/keys/pg-key-store';
import { describeJobStoreContract } from '../support/job-store-contract';
import { startTestPostgres, type TestPostgres } from '../support/postgres';

let cluster: TestPostgres;
beforeAll(async () => {
	cluster = await startTestPostgres();
}, 60_000);
afterAll(() => cluster?.stop());

describeJobStoreContract('PgJobStore', async () => {
	const databaseUrl = await cluster.createDatabase();
	const pools: Database[] = [];
	return {
		open: async () => {
			const database = await openDatabase(databaseUrl);
			pools.push(database);
			return { jobs: new PgJobStore(database.pool), keys: new PgKeyStore(database.pool) };
		},
		cleanup: async () => {
			await Promise.all(pools.splice(0).map((database) => database.close()));
		},
	};
});
