/** The provenance records on PostgreSQL: the contract, each open() a pool of its own (another replica). */
import type { ProvenanceStoreOptions } from '../../../server/src/provenance/provenance-records';
import { SqlProvenanceStore } from '../../../server/src/provenance/sql-provenance-store';
import { describeProvenanceStoreContract } from '../support/provenance-store-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const cluster = usePostgresCluster();

describeProvenanceStoreContract('SqlProvenanceStore on PostgreSQL', async () => {
	const pools = await poolPerOpen(cluster, (database) => database);
	return {
		open: async (options: ProvenanceStoreOptions) => new SqlProvenanceStore(await pools.open(), options),
		cleanup: () => pools.cleanup(),
	};
});
