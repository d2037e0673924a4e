/** The job store on PostgreSQL: the contract, each open() a pool of its own (another replica). */
import { SqlJobStore } from '../../../server/src/jobs/sql-job-store';
import { PgKeyStore } from '../../../server/src/keys/pg-key-store';
import { describeJobStoreContract } from '../support/job-store-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const cluster = usePostgresCluster();

describeJobStoreContract('SqlJobStore on PostgreSQL', () => poolPerOpen(cluster, (database) => ({ jobs: new SqlJobStore(database), keys: new PgKeyStore(database.pool) })));
