/**
 * `webhook_url` at request time: the address guard URL inputs use, on the pure check and a stubbed
 * resolver (no name is looked up, nothing is sent), then through the route on `app.inject`:
 * private and loopback targets are a 400 naming webhook_url unless --webhook-allow-private.
 */
import type { ResolvedAddress } from '../../../server/src/net/safe-fetch';
import { checkWebhookTarget } from '../../../server/src/webhooks/webhook-target';
import { buildTestApp, type InProcessApp } from '../support/app';

const PUBLIC = { address: '93.184.216.34', family: 4 };
const resolving = (...addresses: ResolvedAddress[]) => async () => addresses;

async function refusal(url: string, policy: Parameters<typeof checkWebhookTarget>[1]) {
	return checkWebhookTarget(url, policy).then(
		() => {
			throw new Error(`${url} was let through`);
		},
		(error: { status: number; param: string; code: string; message: string }) => error,
	);
}

describe('the check on a stubbed resolver', () => {
	const strict = { allowPrivate: false, timeoutMs: 1_000 };

	it.each([
		['http://127.0.0.1:5678/webhook', /127\.0\.0\.1 is a loopback/],
		['http://[::1]/hook', /::1 is a loopback/],
		['http://10.0.0.5/hook', /10\.0\.0\.5 is a private/],
		['http://169.254.169.254/latest/meta-data', /link-local/],
		['http://[::ffff:192.168.1.1]/hook', /embeds 192\.168\.1\.1 is a private/],
	])('refuses %s', async (url, reason) => {
		const error = await refusal(url, { ...strict, resolve: resolving(PUBLIC) });
		expect([error.status, error.param, error.code]).toEqual([400, 'webhook_url', 'refused_address']);
		expect(error.message).toMatch(reason);
	});

	it('refuses a name when any of its addresses is private, and when it does not resolve', async () => {
		const mixed = await refusal('https://hooks.example.test/x', { ...strict, resolve: resolving(PUBLIC, { address: '192.168.0.10', family: 4 }) });
		expect([mixed.param, mixed.code]).toEqual(['webhook_url', 'refused_address']);
		const unknown = await refusal('https://nowhere.example.test/x', {
			...strict,
			resolve: async () => {
				throw new Error('ENOTFOUND');
			},
		});
		expect([unknown.param, unknown.code]).toEqual(['webhook_url', 'dns_failed']);
	});

	it('lets a public name through, and a private one when the operator allows it', async () => {
		await expect(checkWebhookTarget('https://hooks.example.test/x', { ...strict, resolve: resolving(PUBLIC) })).resolves.toBeUndefined();
		await expect(checkWebhookTarget('http://127.0.0.1:5678/webhook', { allowPrivate: true, timeoutMs: 1_000 })).resolves.toBeUndefined();
	});
});

describe('through POST /v1/images/generations', () => {
	let strict: InProcessApp;
	let permissive: InProcessApp;
	beforeAll(async () => {
		[strict, permissive] = await Promise.all([buildTestApp(), buildTestApp(['--webhook-allow-private'])]);
	});
	afterAll(() => Promise.all([strict.close(), permissive.close()]));

	const generate = (app: InProcessApp, webhookUrl: unknown) =>
		app.request('/v1/images/generations', {
			method: 'POST',
			headers: { ...app.auth, 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse', webhook_url: webhookUrl }),
		});

	it.each(['http://127.0.0.1:5678/webhook-waiting/1', 'http://10.1.2.3/hook', 'http://[fd00::1]/hook'])('refuses %s with a 400 naming webhook_url, before anything is charged', async (url) => {
		const answer = await generate(strict, url);
		expect(answer.status).toBe(400);
		const { error } = (await answer.json()) as { error: { param: string; code: string; message: string } };
		expect([error.param, error.code]).toEqual(['webhook_url', 'refused_address']);
		const usage = (await (await strict.request('/v1/usage', { headers: strict.auth })).json()) as { data: unknown[] };
		expect(usage.data).toEqual([]);
	});

	it('refuses a malformed one with a 400 naming webhook_url', async () => {
		const answer = await generate(strict, 'gopher://hooks.example/x');
		expect(answer.status).toBe(400);
		expect(((await answer.json()) as { error: { param: string } }).error.param).toBe('webhook_url');
	});

	it('with --webhook-allow-private a loopback target is accepted', async () => {
		const answer = await generate(permissive, 'http://127.0.0.1:5678/webhook-waiting/1');
		expect(answer.status).toBe(200);
	});

	it('a public IP literal needs no lookup and is accepted', async () => {
		expect((await generate(strict, 'https://93.184.216.34/hook')).status).toBe(200);
	});
});
