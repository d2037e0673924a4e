/**
 * Fallback chains (`--providers p-image=pruna|replicate`) against loopback stand-ins of both hosts,
 * counting the calls each host receives: the next host is tried only when the previous one
 * provably made nothing (a refused connection, a 429), never after a 5xx to the create, an
 * accepted job or a time-out, and the host that served is what the usage ledger and the metrics name.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Client } from 'pg';
import { parseProviderSelection } from '../../../server/src/config/provider-selection';
import { startServer, type ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { closedPort } from '../support/closed-port';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { postJson } from '../support/http';
import { startTestPostgres } from '../support/postgres';
import { makeImage } from '../support/media';
import { FAST_HOSTS } from '../support/providers';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
/** Retries and polls at the stand-ins' pace. */
const FAST = { providerTiming: FAST_HOSTS };
const CHAIN = ['--allow-private-urls', '--generation-timeout-seconds', '3', '--admin-key', ADMIN_KEY, '--providers', 'p-image=pruna|replicate'];
/** One try and the policy's three retries. */
const ATTEMPTS = 4;

let fake: FakeHosts;
let chained: ServiceUnderTest;
let prunaDown: ServiceUnderTest;
let refusedPort: number;

beforeAll(async () => {
	fake = await startFakeHosts();
	const port = await closedPort();
	refusedPort = port;
	const env = { PRUNA_API_KEY: 'pruna-key', REPLICATE_API_TOKEN: 'r8_token', REPLICATE_BASE_URL: `${fake.origin}/v1` };
	[chained, prunaDown] = await Promise.all([
		startInProcessServer({ args: CHAIN, env: { ...env, PRUNA_BASE_URL: `${fake.origin}/v1` }, parts: FAST }),
		startInProcessServer({ args: CHAIN, env: { ...env, PRUNA_BASE_URL: `http://127.0.0.1:${port}/v1` }, parts: FAST }),
	]);
});

afterAll(async () => {
	await Promise.all([chained, prunaDown].map((server) => server?.stop({ removeData: true })));
	await fake?.close();
});

beforeEach(async () => {
	fake.reset();
	fake.setImage(await makeImage('png', 64, 64));
});

const generate = (server: ServiceUnderTest) => postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'A lighthouse', response_format: 'b64_json' });
const prunaSubmits = () => fake.callsTo('POST', '/v1/predictions').length;
const replicateSubmits = () => fake.callsTo('POST', '/v1/models/').length;

function ledgerProviders(server: ServiceUnderTest): Array<string | undefined> {
	const database = new Database(join(server.dataDir, 'imagegen.db'), { readonly: true });
	try {
		return (database.prepare('SELECT provider FROM usage_lines ORDER BY at, rowid').all() as Array<{ provider: string | null }>).map((row) => row.provider ?? undefined);
	} finally {
		database.close();
	}
}

async function metric(server: ServiceUnderTest, name: string, labels: Record<string, string>): Promise<number> {
	const response = await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
	expect(response.status).toBe(200);
	const family = parsePrometheusTextFormat(await response.text()).find((each) => each.name === name);
	const sample = family?.metrics.find((each) => Object.entries(labels).every(([key, value]) => each.labels?.[key] === value));
	return sample ? Number(sample.value) : 0;
}

test('connection refused by the first host: the second serves, and the ledger and metrics name it', async () => {
	const answer = await generate(prunaDown);
	expect(answer.status).toBe(200);
	expect(replicateSubmits()).toBe(1);
	expect(ledgerProviders(prunaDown).at(-1)).toBe('replicate');
	expect(await metric(prunaDown, 'imagegen_generations_total', { model: 'p-image', provider: 'replicate', outcome: 'success' })).toBe(1);
	expect(await metric(prunaDown, 'imagegen_provider_errors_total', { provider: 'pruna', code: 'upstream_unreachable' })).toBe(1);
});

test('the first host serves when it works; the second is never asked', async () => {
	const answer = await generate(chained);
	expect(answer.status).toBe(200);
	expect([prunaSubmits(), replicateSubmits()]).toEqual([1, 0]);
	expect(ledgerProviders(chained).at(-1)).toBe('pruna');
});

test('a lasting 429 on submit (after the bounded retries): the next host serves', async () => {
	fake.script('POST', '/v1/predictions', { status: 429, body: { error: { code: 'QUOTA_EXCEEDED', message: 'Too many requests' } }, headers: { 'retry-after': '0' } }, ATTEMPTS);
	const answer = await generate(chained);
	expect(answer.status).toBe(200);
	expect([prunaSubmits(), replicateSubmits()]).toEqual([ATTEMPTS, 1]);
	expect(ledgerProviders(chained).at(-1)).toBe('replicate');
	expect(await metric(chained, 'imagegen_provider_errors_total', { provider: 'pruna', code: 'upstream_rate_limited' })).toBeGreaterThanOrEqual(1);
});

test('500 on submit: neither repeated nor passed on (the host may have made the image), a 502', async () => {
	fake.script('POST', '/v1/predictions', { status: 500, body: { error: 'overloaded' } }, ATTEMPTS);
	const answer = await generate(chained);
	expect(answer.status).toBe(502);
	expect(answer.body.error.code).toBe('upstream_failed');
	expect([prunaSubmits(), replicateSubmits()]).toEqual([1, 0]);
	expect(await metric(chained, 'imagegen_provider_errors_total', { provider: 'pruna', code: 'upstream_failed' })).toBeGreaterThanOrEqual(1);
});

test('401 on submit (our key refused): not passed on, the refusal is the answer', async () => {
	fake.script('POST', '/v1/predictions', { status: 401, body: { error: 'invalid apikey' } });
	const answer = await generate(chained);
	expect(answer.status).toBe(502);
	expect(answer.body.error.code).toBe('upstream_auth_failed');
	expect([prunaSubmits(), replicateSubmits()]).toEqual([1, 0]);
});

test('a job the first host accepted and whose status then fails: no fallback (it may be billed)', async () => {
	fake.setPendingPolls(2);
	fake.script('GET', '/v1/predictions/status/', { status: 500, body: { error: 'status store down' } }, ATTEMPTS);
	const answer = await generate(chained);
	expect(answer.status).toBe(502);
	expect(answer.body.error.code).toBe('upstream_failed');
	expect([prunaSubmits(), replicateSubmits()]).toEqual([1, 0]);
});

test('a time-out on the first host: no fallback', async () => {
	fake.script('POST', '/v1/predictions', { status: 200, hang: true });
	const answer = await generate(chained);
	expect(answer.status).toBe(504);
	expect(answer.body.error.code).toBe('generation_timeout');
	expect([prunaSubmits(), replicateSubmits()]).toEqual([1, 0]);
	expect(await metric(chained, 'imagegen_provider_errors_total', { provider: 'pruna', code: 'generation_timeout' })).toBe(1);
});

test('a 4xx other than 401/403/429 on submit (the request itself refused): no fallback', async () => {
	fake.script('POST', '/v1/predictions', { status: 422, body: { error: 'prompt refused' } });
	const answer = await generate(chained);
	expect(answer.status).toBe(502);
	expect([prunaSubmits(), replicateSubmits()]).toEqual([1, 0]);
});

test('both hosts refuse: the last host’s error is the answer', async () => {
	fake.script('POST', '/v1/predictions', { status: 429, body: { error: 'slow down' }, headers: { 'retry-after': '0' } }, ATTEMPTS);
	fake.script('POST', '/v1/models/', { status: 503, body: { detail: 'replicate down' } }, ATTEMPTS);
	const answer = await generate(chained);
	expect(answer.status).toBe(502);
	expect(answer.body.error.message).toMatch(/replicate/);
	expect([prunaSubmits(), replicateSubmits()]).toEqual([ATTEMPTS, 1]);
});

test('/v1/models shows the chain in the order it is tried', async () => {
	const response = await fetch(`${chained.baseUrl}/models`, { headers: { authorization: `Bearer ${chained.apiKey}` } });
	const models = (await response.json()) as { data: Array<{ id: string; providers: string[] }> };
	expect(models.data.find((model) => model.id === 'p-image')!.providers).toEqual(['pruna', 'replicate']);
	expect(models.data.find((model) => model.id === 'textimage-v2')!.providers).toEqual(['sandbox']);
});

describe('--providers chains', () => {
	test('parse into the hosts in order', () => {
		expect(parseProviderSelection('p-image=pruna|replicate, textimage-v2=ideogram')).toEqual({ 'p-image': 'pruna|replicate', 'textimage-v2': 'ideogram' });
	});
	test.each([
		['p-image=pruna|nope', /unknown provider 'nope'/],
		['p-image=pruna|', /unknown provider ''/],
		['p-image=pruna|pruna', /lists a provider twice/],
	])('%s is refused', (text, message) => {
		expect(() => parseProviderSelection(text)).toThrow(message);
	});
	test('a chain member without its settings fails at start-up', async () => {
		await expect(startServer({ args: ['--providers', 'p-image=sandbox|replicate'], env: { REPLICATE_API_TOKEN: '' } })).rejects.toThrow(/REPLICATE_API_TOKEN/);
	});
});

test('the PostgreSQL usage ledger records the serving host too', async () => {
	const postgres = await startTestPostgres();
	let server: ServiceUnderTest | undefined;
	try {
		const databaseUrl = await postgres.createDatabase();
		server = await startInProcessServer({
			args: [...CHAIN, '--database-url', databaseUrl],
			parts: FAST,
			env: { PRUNA_API_KEY: 'pruna-key', PRUNA_BASE_URL: `http://127.0.0.1:${refusedPort}/v1`, REPLICATE_API_TOKEN: 'r8_token', REPLICATE_BASE_URL: `${fake.origin}/v1` },
		});
		expect((await generate(server)).status).toBe(200);
		const client = new Client({ connectionString: databaseUrl });
		await client.connect();
		try {
			const { rows } = await client.query<{ provider: string | null }>('SELECT provider FROM usage_lines');
			expect(rows).toEqual([{ provider: 'replicate' }]);
		} finally {
			await client.end();
		}
	} finally {
		await server?.stop({ removeData: true });
		await postgres.stop();
	}
}, 120_000);
