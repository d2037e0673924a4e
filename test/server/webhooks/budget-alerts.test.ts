/**
 * Budget alerts through the outbox: over the service with a managed key whose budget fills up
 * (threshold past 80 %, exhausted when a generation is refused for it, each sent once, and again
 * for a budget the operator raised), and on the alert gate itself for what needs no traffic: a
 * Slack URL's `{ text }` body and periods that start again.
 */
import type { ApiKeyPolicy } from '../../../server/src/keys/authenticate';
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { withBudgetAlerts } from '../../../server/src/webhooks/budget-alerts';
import { WebhookOutbox } from '../../../server/src/webhooks/outbox';
import { SqlOutboxStore } from '../../../server/src/webhooks/sql-outbox-store';
import { buildTestApp, type InProcessApp } from '../support/app';
import { eventually } from '../support/http';
import { useSqliteDataDir } from '../support/sqlite-data-dir';
import { startReceiver, type Receiver } from '../support/webhook-receiver';

const ADMIN_KEY = 'admin-secret-0123456789';

describe('over the service', () => {
	let receiver: Receiver;
	let service: InProcessApp;
	beforeEach(async () => {
		receiver = await startReceiver('/alerts');
		service = await buildTestApp(['--admin-key', ADMIN_KEY, '--alert-webhook', receiver.url, '--webhook-allow-private', '--prices', 'p-image=0.01']);
	});
	afterEach(async () => {
		await service.close();
		await receiver.close();
	});

	const createKey = async (fields: Record<string, unknown>) => {
		const response = await service.request('/v1/admin/keys', {
			method: 'POST',
			headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
			body: JSON.stringify({ name: 'alerts', ...fields }),
		});
		return (await response.json()) as { id: string; key: string };
	};
	const generate = async (secret: string) =>
		(
			await service.request('/v1/images/generations', {
				method: 'POST',
				headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
				body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse' }),
			})
		).status;
	const events = () => receiver.received.map((delivery) => JSON.parse(delivery.body) as { type: string; data: Record<string, unknown> });

	it('passing 80 % sends budget.threshold once; a refusal sends budget.exhausted once', async () => {
		const key = await createKey({ budget_usd: 0.05, budget_period: 'day' });
		for (let spent = 1; spent <= 3; spent++) expect(await generate(key.key)).toBe(200);
		await service.app.webhooks.outbox.settled();
		expect(receiver.received).toHaveLength(0);
		expect(await generate(key.key)).toBe(200);
		expect(await eventually(() => receiver.received.length === 1)).toBe(true);
		expect(events()[0]).toMatchObject({ type: 'budget.threshold', data: { key_id: key.id, period: 'day', budget_usd: 0.05, spent_usd: 0.04 } });
		expect(await generate(key.key)).toBe(200);
		expect(await eventually(() => receiver.received.length === 2)).toBe(true);
		expect(events()[1]).toMatchObject({ type: 'budget.exhausted', data: { spent_usd: 0.05 } });
		expect(await generate(key.key)).toBe(402);
		expect(await generate(key.key)).toBe(402);
		await service.app.webhooks.outbox.settled();
		expect(events().map((event) => event.type)).toEqual(['budget.threshold', 'budget.exhausted']);
		expect(receiver.received[0]!.headers['content-type']).toBe('application/json');
	});

	it('a refusal before the budget is full still says it is exhausted for that price, once', async () => {
		const key = await createKey({ budget_usd: 0.015, budget_period: 'month' });
		expect(await generate(key.key)).toBe(200);
		expect(await generate(key.key)).toBe(402);
		expect(await generate(key.key)).toBe(402);
		expect(await eventually(() => receiver.received.length === 1)).toBe(true);
		await service.app.webhooks.outbox.settled();
		expect(events()).toEqual([expect.objectContaining({ type: 'budget.exhausted', data: expect.objectContaining({ period: 'month', spent_usd: 0.01 }) })]);
	});

	it('a budget the operator raised is alerted again when it is passed, in the same period', async () => {
		const key = await createKey({ budget_usd: 0.05, budget_period: 'day' });
		for (let spent = 1; spent <= 4; spent++) expect(await generate(key.key)).toBe(200);
		expect(await eventually(() => receiver.received.length === 1)).toBe(true);
		const raised = await service.request(`/v1/admin/keys/${key.id}`, {
			method: 'PATCH',
			headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
			body: JSON.stringify({ budget_usd: 0.1 }),
		});
		expect(raised.status).toBe(200);
		// 0.05 and 0.06 of 0.10: below 80 % of the new budget, so nothing yet.
		for (let spent = 5; spent <= 7; spent++) expect(await generate(key.key)).toBe(200);
		await service.app.webhooks.outbox.settled();
		expect(receiver.received).toHaveLength(1);
		expect(await generate(key.key)).toBe(200);
		expect(await eventually(() => receiver.received.length === 2)).toBe(true);
		expect(events()[1]).toMatchObject({ type: 'budget.threshold', data: { key_id: key.id, budget_usd: 0.1, spent_usd: 0.08 } });
		for (let spent = 9; spent <= 10; spent++) expect(await generate(key.key)).toBe(200);
		expect(await generate(key.key)).toBe(402);
		expect(await eventually(() => receiver.received.length === 3)).toBe(true);
		await service.app.webhooks.outbox.settled();
		expect(events().map((event) => [event.type, event.data.budget_usd])).toEqual([
			['budget.threshold', 0.05],
			['budget.threshold', 0.1],
			['budget.exhausted', 0.1],
		]);
	});

	it('keys without a budget send nothing', async () => {
		expect(await generate((await createKey({})).key)).toBe(200);
		await service.app.webhooks.outbox.settled();
		expect(receiver.received).toHaveLength(0);
	});
});

describe('the alert gate', () => {
	const dataDir = useSqliteDataDir('imagegen-budget-alerts-');
	let database: SqliteDatabase;
	afterEach(() => groupCommitOf(database).close());

	function alerting(url: string, spent: () => number, now: () => Date) {
		database = dataDir.openDatabase();
		const outbox = new WebhookOutbox(new SqlOutboxStore(new SqliteAdapter(database)), { allowPrivate: false, keepFailedMs: 1, log: { warn: jest.fn(), error: jest.fn() } });
		const reserving = { reserve: async () => ({ settle: async () => undefined, release: async () => undefined }) };
		const gate = withBudgetAlerts(reserving, { url, outbox, keyStore: { spent: async () => spent() }, now, log: { error: jest.fn() } });
		const queued = () => database.prepare<[], { event_type: string; body: string; url: string }>('SELECT event_type, body, url FROM webhook_outbox ORDER BY rowid').all();
		return { gate, queued };
	}
	const key: ApiKeyPolicy = { id: 'key_alerts01', managed: true, models: null, rateLimitPerMinute: null, budget: { limitUsd: 10, period: 'day' } };

	it('a Slack incoming webhook gets { text } naming the key, the spend and the budget', async () => {
		const { gate, queued } = alerting('https://hooks.slack.com/services/T000/B000/XXXX', () => 8.5, () => new Date('2030-01-01T12:00:00Z'));
		await (await gate.reserve(key, 1))!.settle(1);
		expect(queued()).toEqual([
			{
				event_type: 'budget.threshold',
				url: 'https://hooks.slack.com/services/T000/B000/XXXX',
				body: JSON.stringify({ text: 'imagegen: API key key_alerts01 has passed 80 % of its day budget: $8.5 of $10; it resets at 2030-01-02T00:00:00.000Z.' }),
			},
		]);
	});

	it('each period has its own alerts: the next day passing 80 % is told again', async () => {
		let now = new Date('2030-01-01T12:00:00Z');
		const { gate, queued } = alerting('https://alerts.example/budget', () => 9, () => now);
		await (await gate.reserve(key, 1))!.settle(1);
		await (await gate.reserve(key, 1))!.settle(1);
		now = new Date('2030-01-02T00:00:01Z');
		await (await gate.reserve(key, 1))!.settle(1);
		const bodies = queued().map((row) => JSON.parse(row.body) as { type: string; timestamp: string });
		expect(bodies.map((body) => [body.type, body.timestamp])).toEqual([
			['budget.threshold', '2030-01-01T12:00:00.000Z'],
			['budget.threshold', '2030-01-02T00:00:01.000Z'],
		]);
	});
});
