/** The job store on the data dir's SQLite database: the contract, each open() a connection of its own (another process). */
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlJobStore } from '../../../server/src/jobs/sql-job-store';
import { SqlKeyStore } from '../../../server/src/keys/sql-key-store';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { describeJobStoreContract } from '../support/job-store-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

describeJobStoreContract('SqlJobStore on SQLite', () =>
	connectionPerOpen(
		'job-store-contract-',
		(database) => {
			const adapter = new SqliteAdapter(database);
			return { jobs: new SqlJobStore(adapter), keys: new SqlKeyStore(adapter) };
		},
		async (database) => {
			await groupCommitOf(database).close();
			database.close();
		},
	),
);
