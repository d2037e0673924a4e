/**
 * The outbox in the data dir's SQLite database: the contract, each open() a connection of its own
 * as another process on the data dir has.
 */
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { SqlOutboxStore } from '../../../server/src/webhooks/sql-outbox-store';
import { describeOutboxStoreContract } from '../support/outbox-store-contract';
import { useSqliteDataDir } from '../support/sqlite-data-dir';

const dataDir = useSqliteDataDir('imagegen-outbox-');

describeOutboxStoreContract('SQLite', () => {
	const opened: SqliteDatabase[] = [];
	return {
		async open() {
			const database = dataDir.openDatabase();
			opened.push(database);
			return new SqlOutboxStore(new SqliteAdapter(database));
		},
		async cleanup() {
			for (const database of opened.splice(0)) if (database.open) await groupCommitOf(database).close();
		},
	};
});
