/** The job store on the data dir's SQLite database: the contract, each open() a connection of its own (another process). */
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlJobStore } from '../../../server/src/jobs/sql-job-store';
import { SqliteKeyStore } from '../../../server/src/keys/sqlite-key-store';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { describeJobStoreContract } from '../support/job-store-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

describeJobStoreContract('SqlJobStore on SQLite', () =>
	connectionPerOpen(
		'job-store-contract-',
		(database) => ({ jobs: new SqlJobStore(new SqliteAdapter(database)), keys: new SqliteKeyStore(database) }),
		async (database) => {
			await groupCommitOf(database).close();
			database.close();
		},
	),
);
