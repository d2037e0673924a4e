/** Bearer auth on every /v1 route, the models catalog, and the per-key rate limit. */
import { startServer, TEST_API_KEY, type RunningServer } from '../../helpers/server';
import { call, expectApiError, postJson } from '../support/http';

let server: RunningServer;
const SECOND_KEY = 'second-key-abcdefgh';

beforeAll(async () => {
	server = await startServer({ apiKey: `${TEST_API_KEY},${SECOND_KEY}`, args: ['--prices', 'textimage-v2=0.08'] });
	server.apiKey = TEST_API_KEY;
});
afterAll(() => server?.stop({ removeData: true }));

describe('authentication', () => {
	const routes: Array<[string, string]> = [
		['GET', '/v1/models'],
		['POST', '/v1/uploads'],
		['POST', '/v1/images/generations'],
	];

	it.each(routes)('%s %s without a key is 401', async (method, path) => {
		expectApiError(await call(server, path, { method, auth: null }), 401, null, /Authorization: Bearer/);
	});

	it('a wrong key is 401, both configured keys work', async () => {
		expectApiError(await call(server, '/v1/models', { auth: 'Bearer not-the-key' }), 401, null, /Invalid API key/);
		expectApiError(await call(server, '/v1/models', { auth: `Bearer ${TEST_API_KEY}x` }), 401, null);
		expect((await call(server, '/v1/models', { auth: `Bearer ${TEST_API_KEY}` })).status).toBe(200);
		expect((await call(server, '/v1/models', { auth: `bearer ${SECOND_KEY}` })).status).toBe(200);
	});

	it('other schemes are 401', async () => {
		const basic = `Basic ${Buffer.from(`user:${TEST_API_KEY}`).toString('base64')}`;
		expectApiError(await call(server, '/v1/models', { auth: basic }), 401, null, /scheme/);
		expectApiError(await call(server, '/v1/models', { auth: TEST_API_KEY }), 401, null, /scheme/);
		expectApiError(await call(server, '/v1/models', { auth: `Token ${TEST_API_KEY}` }), 401, null, /scheme/);
		expectApiError(await call(server, '/v1/models', { auth: 'Bearer' }), 401, null);
	});

	it('a key in the query string or the body never authenticates', async () => {
		for (const query of ['api_key', 'key', 'apiKey', 'access_token']) {
			expectApiError(await call(server, `/v1/models?${query}=${TEST_API_KEY}`, { auth: null }), 401, null);
		}
		expectApiError(await postJson(server, '/v1/uploads', { api_key: TEST_API_KEY }, { auth: null }), 401, null);
	});

	it('never prints a configured key', () => {
		expect(server.output()).not.toContain(TEST_API_KEY);
		expect(server.output()).not.toContain(SECOND_KEY);
	});
});

describe('GET /v1/models', () => {
	it('lists the catalog with configured price overrides', async () => {
		const answer = await call(server, '/v1/models');
		expect(answer.status).toBe(200);
		const ids = answer.body.data.map((model: { id: string }) => model.id);
		expect(ids).toEqual(['p-image', 'p-image-edit', 'textimage-v2', 'p-video']);
		const price = (id: string) => answer.body.data.find((model: { id: string }) => model.id === id).pricing.per_image_usd;
		expect(price('p-image')).toBe(0.0035);
		expect(price('p-image-edit')).toBe(0.007);
		expect(price('textimage-v2')).toBe(0.08);
		const video = answer.body.data.find((model: { id: string }) => model.id === 'p-video');
		expect(video).toMatchObject({ type: 'video', pricing: { per_second_usd: { '720p': 0.02, '1080p': 0.04 }, draft_per_second_usd: { '720p': 0.005, '1080p': 0.01 } } });
	});
});

describe('rate limit', () => {
	let limited: RunningServer;
	beforeAll(async () => {
		limited = await startServer({ apiKey: `${TEST_API_KEY},${SECOND_KEY}`, args: ['--rate-limit-per-minute', '3'] });
		limited.apiKey = TEST_API_KEY;
	});
	afterAll(() => limited?.stop({ removeData: true }));

	it('the 4th request in a minute is a 429 with Retry-After, per key', async () => {
		for (let i = 0; i < 3; i++) expect((await call(limited, '/v1/models')).status).toBe(200);
		const fourth = await call(limited, '/v1/models');
		expectApiError(fourth, 429, null, /3 requests per minute/);
		expect(fourth.body.error.type).toBe('rate_limit_error');
		const retryAfter = Number(fourth.headers.get('retry-after'));
		expect(retryAfter).toBeGreaterThanOrEqual(1);
		expect(retryAfter).toBeLessThanOrEqual(20);
		// Another key has its own allowance; public routes are not limited.
		expect((await call(limited, '/v1/models', { auth: `Bearer ${SECOND_KEY}` })).status).toBe(200);
		expect((await fetch(`${limited.origin}/healthz`)).status).toBe(200);
	});

	it('0 disables the limit', async () => {
		const unlimited = await startServer({ args: ['--rate-limit-per-minute', '0'] });
		try {
			const statuses = await Promise.all(Array.from({ length: 30 }, () => call(unlimited, '/v1/models').then((a) => a.status)));
			expect(statuses).toEqual(Array(30).fill(200));
		} finally {
			await unlimited.stop({ removeData: true });
		}
	});
});

describe('unknown /v1 routes', () => {
	it('need the key too (401), and are a JSON 404 with it', async () => {
		expectApiError(await call(server, '/v1/nothing-here', { auth: null }), 401, null);
		expectApiError(await call(server, '/v1/nothing-here'), 404, null, /Unknown route: GET \/v1\/nothing-here/);
	});
});

describe('logging', () => {
	it('never writes the key, even at trace level with uploads and failures', async () => {
		const verbose = await startServer({ args: ['--log-level', 'trace'] });
		try {
			const form = new FormData();
			form.append('file', new Blob([Buffer.from('not media at all')]), 'x.bin');
			await call(verbose, '/v1/uploads', { method: 'POST', body: form });
			await call(verbose, `/v1/models?api_key=${verbose.apiKey}`);
			await postJson(verbose, '/v1/uploads', '{broken');
			await call(verbose, '/v1/models', { auth: `Bearer ${verbose.apiKey}-wrong` });
			await new Promise((resolve) => setTimeout(resolve, 200));
			expect(verbose.output()).toMatch(/busboy|trace|"level":10/);
			expect(verbose.output()).not.toContain(verbose.apiKey);
		} finally {
			await verbose.stop({ removeData: true });
		}
	});
});
