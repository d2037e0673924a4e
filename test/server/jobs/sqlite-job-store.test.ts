/** The data dir's job store (SQLite): the contract, each open() a connection of its own (another process). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteJobStore } from '../../../server/src/jobs/sqlite-job-store';
import { SqliteKeyStore } from '../../../server/src/keys/sqlite-key-store';
import { groupCommitOf } from '../../../server/src/sqlite/group-commit';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/sqlite/database';
import { describeJobStoreContract } from '../support/job-store-contract';

describeJobStoreContract('SqliteJobStore', async () => {
	const dataDir = await mkdtemp(join(tmpdir(), 'job-store-contract-'));
	const databases: SqliteDatabase[] = [];
	return {
		open: async () => {
			const database = openSqliteDatabase(dataDir);
			databases.push(database);
			return { jobs: new SqliteJobStore(database), keys: new SqliteKeyStore(database) };
		},
		cleanup: async () => {
			for (const database of databases.splice(0)) {
				await groupCommitOf(database).close();
				database.close();
			}
			await rm(dataDir, { recursive: true, force: true });
		},
	};
});
