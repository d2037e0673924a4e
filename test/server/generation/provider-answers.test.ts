/**
 * What a provider answers never reaches past what was asked or into the client's view of our
 * network: a host that hands out more images than requested gets only the one asked for kept and
 * charged, and a host that cannot be reached is named by its provider, never by its address,
 * over REST and MCP (the log keeps the details).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { closedPort } from '../support/closed-port';
import { createManagedKey, eventually } from '../support/http';
import { startCountingUpstream, UPSTREAM_KEY, type CountingUpstream } from '../support/counting-upstream';

const ADMIN_KEY = 'admin-secret-0123456789';
const INTERNAL_DETAIL = /127\.0\.0\.1|localhost|::1|ECONNREFUSED|:\d{2,5}\b/;

let upstream: CountingUpstream;
let generous: ServiceUnderTest;
let unreachable: ServiceUnderTest;

const generate = async (server: ServiceUnderTest, key: string, prompt: string) => {
	const response = await fetch(`${server.baseUrl}/images/generations`, {
		method: 'POST',
		headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt }),
	});
	return { status: response.status, body: (await response.json()) as any };
};

beforeAll(async () => {
	upstream = await startCountingUpstream();
	upstream.imagesPerAnswer = 2;
	const options = upstream.serverOptions();
	const refusedUrl = `http://127.0.0.1:${await closedPort()}/v1`;
	[generous, unreachable] = await Promise.all([
		startInProcessServer({ args: [...options.args, '--admin-key', ADMIN_KEY], env: options.env }),
		startInProcessServer({ args: options.args, env: { ...options.env, UPSTREAM_BASE_URL: refusedUrl, UPSTREAM_API_KEY: UPSTREAM_KEY } }),
	]);
}, 60_000);
afterAll(async () => {
	await Promise.all([generous, unreachable].map((server) => server?.stop({ removeData: true })));
	await upstream?.close();
});

test('a host that answers two images for one request: one is kept and charged, and the budget holds', async () => {
	const key = await createManagedKey(generous, ADMIN_KEY, { name: 'room for one', budget_usd: 0.0035 });
	const first = await generate(generous, key.key, 'a lighthouse');
	expect(first.status).toBe(200);
	expect(first.body.data).toHaveLength(1);
	expect(first.body.usage).toEqual({ images: 1, cost_usd: 0.0035 });
	const usage = (await (await fetch(`${generous.baseUrl}/usage`, { headers: { authorization: `Bearer ${key.key}` } })).json()) as any;
	expect(usage.total).toEqual({ images: 1, cost_usd: 0.0035 });
	const admin = (await (await fetch(`${generous.baseUrl}/admin/keys/${key.id}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json()) as any;
	expect(admin.budget.spent_usd).toBe(0.0035);
	const second = await generate(generous, key.key, 'another lighthouse');
	expect(second.status).toBe(402);
	expect(upstream.calls).toBe(1);
});

test('an unreachable host is named by its provider over REST, without its address; the log keeps it', async () => {
	const answer = await generate(unreachable, unreachable.apiKey, 'a fox');
	expect(answer.status).toBe(502);
	expect(answer.body.error).toMatchObject({ type: 'upstream_error', code: 'upstream_unreachable' });
	expect(answer.body.error.message).toMatch(/upstream provider could not be reached/);
	expect(answer.body.error.message).not.toMatch(INTERNAL_DETAIL);
	// The log line is written asynchronously: it may reach the pipe after the answer does.
	expect(await eventually(() => /ECONNREFUSED/.test(unreachable.output()), 5_000)).toBe(true);
});

test('an unreachable host is named by its provider over MCP, without its address', async () => {
	const mcp = new Client({ name: 'imagegen-test', version: '1.0.0' });
	await mcp.connect(new StreamableHTTPClientTransport(new URL(`${unreachable.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${unreachable.apiKey}` } } }));
	try {
		const result = (await mcp.callTool({ name: 'generate_image', arguments: { model: 'p-image', prompt: 'a fox' } })) as { isError?: boolean; content: Array<{ text: string }> };
		expect(result.isError).toBe(true);
		const { error } = JSON.parse(result.content[0]!.text) as { error: { message: string; code: string } };
		expect(error.code).toBe('upstream_unreachable');
		expect(error.message).toMatch(/upstream provider could not be reached/);
		expect(error.message).not.toMatch(INTERNAL_DETAIL);
	} finally {
		await mcp.close();
	}
});
