/**
 * The outbox in PostgreSQL: the contract, each open() a pool of its own as another replica has;
 * and three replicas' delivery loops on one database sending a burst, each delivery once.
 */
import { SqlOutboxStore } from '../../../server/src/webhooks/sql-outbox-store';
import { WebhookOutbox } from '../../../server/src/webhooks/outbox';
import { eventually } from '../support/http';
import { describeOutboxStoreContract } from '../support/outbox-store-contract';
import { useDatabasePerTest } from '../support/postgres';
import { startReceiver } from '../support/webhook-receiver';

const database = useDatabasePerTest();

describeOutboxStoreContract('PostgreSQL', () => ({
	async open() {
		const [replica] = await database.replicas(1);
		return new SqlOutboxStore(replica!);
	},
	async cleanup() {},
}));

it('three replicas delivering from one outbox send each of 30 deliveries once, with one secret', async () => {
	const receiver = await startReceiver();
	const log = { warn: jest.fn(), error: jest.fn() };
	const outboxes = (await database.replicas(3)).map((replica) => new WebhookOutbox(new SqlOutboxStore(replica), { allowPrivate: true, keepFailedMs: 60_000, log }));
	try {
		const secrets = await Promise.all(outboxes.map((outbox) => outbox.secretFor('key-a')));
		expect(new Set(secrets).size).toBe(1);
		for (let index = 0; index < 30; index++) {
			await outboxes[index % 3]!.store.enqueue({ id: `msg_${index}`, url: receiver.url, signingKeyId: 'key-a', body: `{"n":${index}}`, eventType: 'generation.succeeded' }, Date.now());
		}
		for (const outbox of outboxes) outbox.start();
		expect(await eventually(() => receiver.received.length >= 30)).toBe(true);
		await Promise.all(outboxes.map((outbox) => outbox.settled()));
		const ids = receiver.received.map((delivery) => delivery.headers['webhook-id']);
		expect(ids).toHaveLength(30);
		expect(new Set(ids).size).toBe(30);
		expect(log.error).not.toHaveBeenCalled();
	} finally {
		await Promise.all(outboxes.map((outbox) => outbox.stop()));
		await receiver.close();
	}
});
