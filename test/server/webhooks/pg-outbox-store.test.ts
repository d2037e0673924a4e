/** The outbox in PostgreSQL: the contract, each open() a pool of its own as another replica has. */
import { PgOutboxStore } from '../../../server/src/webhooks/pg-outbox-store';
import { describeOutboxStoreContract } from '../support/outbox-store-contract';
import { useDatabasePerTest } from '../support/postgres';

const database = useDatabasePerTest();

describeOutboxStoreContract('PostgreSQL', () => ({
	async open() {
		const [replica] = await database.replicas(1);
		return new PgOutboxStore(replica!.pool);
	},
	async cleanup() {},
}));
