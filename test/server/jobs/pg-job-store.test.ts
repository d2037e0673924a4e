/** Jobs in PostgreSQL: the JobStore contract, each open() a pool of its own (another replica). */
import { PgJobStore } from '../../../server/src/jobs/pg-job-store';
import { PgKeyStore } from '../../../server/src/keys/pg-key-store';
import { describeJobStoreContract } from '../support/job-store-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const cluster = usePostgresCluster();

describeJobStoreContract('PgJobStore', () => poolPerOpen(cluster, (database) => ({ jobs: new PgJobStore(database.pool), keys: new PgKeyStore(database.pool) })));
