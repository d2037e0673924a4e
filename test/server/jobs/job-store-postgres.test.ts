/** The job store on PostgreSQL: the contract, each open() a pool of its own (another replica). */
import { SqlJobStore } from '../../../server/src/jobs/sql-job-store';
import { SqlKeyStore } from '../../../server/src/keys/sql-key-store';
import { describeJobStoreContract } from '../support/job-store-contract';
import { poolPerOpen, usePostgresCluster } from '../support/postgres';

const cluster = usePostgresCluster();

describeJobStoreContract('SqlJobStore on PostgreSQL', () => poolPerOpen(cluster, (database) => ({ jobs: new SqlJobStore(database), keys: new SqlKeyStore(database) })));
