/** The data dir's job store (SQLite): the contract, each open() a connection of its own (another process). */
import { SqliteJobStore } from '../../../server/src/jobs/sqlite-job-store';
import { SqliteKeyStore } from '../../../server/src/keys/sqlite-key-store';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { describeJobStoreContract } from '../support/job-store-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

describeJobStoreContract('SqliteJobStore', () =>
	connectionPerOpen(
		'job-store-contract-',
		(database) => ({ jobs: new SqliteJobStore(database), keys: new SqliteKeyStore(database) }),
		async (database) => {
			await groupCommitOf(database).close();
			database.close();
		},
	),
);
