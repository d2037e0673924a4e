/** The provenance records on the data dir's SQLite database: the contract, each open() a connection of its own (another process). */
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import type { ProvenanceStoreOptions } from '../../../server/src/provenance/provenance-records';
import { SqlProvenanceStore } from '../../../server/src/provenance/sql-provenance-store';
import { describeProvenanceStoreContract } from '../support/provenance-store-contract';
import { connectionPerOpen } from '../support/sqlite-data-dir';

describeProvenanceStoreContract('SqlProvenanceStore on SQLite', async () => {
	const dataDir = await connectionPerOpen(
		'provenance-store-contract-',
		(database: SqliteDatabase) => database,
		async (database) => {
			await groupCommitOf(database).close();
			database.close();
		},
	);
	return {
		open: async (options: ProvenanceStoreOptions) => new SqlProvenanceStore(new SqliteAdapter(await dataDir.open()), options),
		cleanup: () => dataDir.cleanup(),
	};
});
