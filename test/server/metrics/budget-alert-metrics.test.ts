/**
 * imagegen_budget_alerts_total{kind}: one for each budget alert the service enqueued for
 * --alert-webhook (threshold past 80 %, exhausted), counted once as the alert is, never for an
 * alert already sent for that key, period and budget; both kinds read 0 before the first.
 */
import { MODELS } from '../../../core/models';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { createManagedKey, eventually, postJson } from '../support/http';
import { startReceiver, type Receiver } from '../support/webhook-receiver';
import { scrape } from './support/scrape';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const PRICE = MODELS['p-image'].priceUsd;

let server: InProcessServer;
let receiver: Receiver;

beforeAll(async () => {
	receiver = await startReceiver('/alerts');
	server = await startInProcessServer({ args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--alert-webhook', receiver.url, '--webhook-allow-private'] });
});

afterAll(async () => {
	await server?.stop({ removeData: true });
	await receiver?.close();
});

const alerts = async () => {
	const scraped = await scrape(server, ADMIN_KEY);
	return { threshold: scraped.value('imagegen_budget_alerts_total', { kind: 'threshold' }), exhausted: scraped.value('imagegen_budget_alerts_total', { kind: 'exhausted' }) };
};

it('counts each alert enqueued, by kind, and never one already sent', async () => {
	expect(await alerts()).toEqual({ threshold: 0, exhausted: 0 });
	const key = await createManagedKey(server, ADMIN_KEY, { name: 'four images', budget_usd: 4 * PRICE, budget_period: 'day' });
	const generate = async () => (await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'A kite', response_format: 'b64_json' }, { auth: `Bearer ${key.key}` })).status;

	for (let image = 1; image <= 3; image++) expect(await generate()).toBe(200);
	// 75 % of the budget: nothing yet.
	expect(await alerts()).toEqual({ threshold: 0, exhausted: 0 });
	expect(await generate()).toBe(200);
	// 100 %: past 80 % and spent, in one settle.
	expect(await alerts()).toEqual({ threshold: 1, exhausted: 1 });
	expect(await generate()).toBe(402);
	expect(await generate()).toBe(402);
	expect(await alerts()).toEqual({ threshold: 1, exhausted: 1 });
	expect(await eventually(() => receiver.received.length === 2)).toBe(true);
});
