/** Managed keys in PostgreSQL: the KeyStore contract, with each open() a pool of its own (another replica). */
import { PgKeyStore } from '../../../server/src/keys/pg-key-store';
import { describeKeyStoreContract } from '../support/key-store-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const cluster = usePostgresCluster();

describeKeyStoreContract('PgKeyStore', async () => ({ ...(await poolPerOpen(cluster, (database) => new PgKeyStore(database.pool))), shared: true }));
