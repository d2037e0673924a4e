/** Managed keys on PostgreSQL: the KeyStore contract, with each open() a pool of its own (another replica). */
import { SqlKeyStore } from '../../../server/src/keys/sql-key-store';
import { describeKeyStoreContract } from '../support/key-store-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const cluster = usePostgresCluster();

describeKeyStoreContract('SqlKeyStore on PostgreSQL', async () => ({ ...(await poolPerOpen(cluster, (database) => new SqlKeyStore(database))), shared: true }));
