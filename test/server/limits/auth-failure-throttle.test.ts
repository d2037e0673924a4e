/**
 * Failed authentication throttled per client address, over real HTTP on both metadata engines:
 * wrong API keys and wrong admin keys alike, a 429 with Retry-After once a client has used up its
 * failures (the right key from that client waits too, so guessing cannot go on), other clients
 * untouched, the count shared by every replica on PostgreSQL, and the client address taken from
 * X-Forwarded-For only with --trust-proxy. Distinct clients are distinct loopback source addresses.
 */
import { request as httpRequest } from 'node:http';
import { buildTestApp, type InProcessApp } from '../support/app';
import { metadataEngines, usePostgresCluster } from '../support/postgres';

const ADMIN_KEY = 'admin-secret-0123456789';
const FAILURES = ['--auth-failures-per-minute', '3'];

const cluster = usePostgresCluster();
const apps: InProcessApp[] = [];
afterEach(async () => {
	await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function start(args: string[]): Promise<InProcessApp> {
	const app = await buildTestApp(['--admin-key', ADMIN_KEY, ...args]);
	apps.push(app);
	return app;
}

interface Answer {
	status: number;
	retryAfter: string | undefined;
	body: any;
}

/** GET `path` from the loopback address `from` (127.0.0.x), with the given headers. */
function get(app: InProcessApp, path: string, headers: Record<string, string>, from = '127.0.0.1'): Promise<Answer> {
	return new Promise((resolve, reject) => {
		const request = httpRequest(`${app.origin}${path}`, { headers, localAddress: from }, (response) => {
			const chunks: Buffer[] = [];
			response.on('data', (chunk: Buffer) => chunks.push(chunk));
			response.on('end', () => {
				const text = Buffer.concat(chunks).toString();
				resolve({ status: response.statusCode!, retryAfter: response.headers['retry-after'], body: text ? JSON.parse(text) : undefined });
			});
		});
		request.on('error', reject);
		request.end();
	});
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const models = (app: InProcessApp, key: string, from?: string, extra: Record<string, string> = {}) => get(app, '/v1/models', { ...bearer(key), ...extra }, from);

function expectThrottled(answer: Answer): void {
	expect(answer.status).toBe(429);
	expect(answer.body.error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_failed_authentications' });
	expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
	expect(Number(answer.retryAfter)).toBeLessThanOrEqual(20);
}

const engines = metadataEngines(cluster);

describe.each(engines)('failed authentication on the %s', (_engine, engineArgs) => {
	it('is throttled per client after 3 wrong API keys; the right key still works from other clients', async () => {
		const app = await start([...FAILURES, ...(await engineArgs())]);
		for (let attempt = 0; attempt < 3; attempt++) expect((await models(app, `wrong-key-${attempt}-0123456789`, '127.0.0.2')).status).toBe(401);
		expectThrottled(await models(app, 'wrong-key-3-0123456789', '127.0.0.2'));
		// The right key from the throttled client waits too: an answer would tell a guess was right.
		expectThrottled(await models(app, app.auth.authorization.slice('Bearer '.length), '127.0.0.2'));
		expect((await models(app, app.auth.authorization.slice('Bearer '.length), '127.0.0.3')).status).toBe(200);
		expect((await models(app, 'wrong-key-4-0123456789', '127.0.0.3')).status).toBe(401);
	});

	it('holds under a burst: of 20 keys sent at once, at most 3 wrong ones are answered 401, the rest 429', async () => {
		const app = await start([...FAILURES, ...(await engineArgs())]);
		const key = app.auth.authorization.slice('Bearer '.length);
		const guesses = Array.from({ length: 20 }, (_, index) => (index === 10 ? key : `wrong-key-${index}-0123456789`));
		const answers = await Promise.all(guesses.map((guess) => models(app, guess, '127.0.0.10')));
		// The right key, among them, is answered only if it was looked at while the client had failures left.
		expect(answers.filter((answer) => answer.status === 401).length).toBeLessThanOrEqual(3);
		expect(answers.filter((answer) => answer.status === 429).length).toBeGreaterThanOrEqual(16);
		expectThrottled(await models(app, key, '127.0.0.10'));
	});

	it('counts wrong admin keys the same way, and successes cost nothing', async () => {
		const app = await start([...FAILURES, ...(await engineArgs())]);
		for (let attempt = 0; attempt < 10; attempt++) expect((await get(app, '/v1/admin/keys', bearer(ADMIN_KEY), '127.0.0.4')).status).toBe(200);
		for (let attempt = 0; attempt < 3; attempt++) expect((await get(app, '/v1/admin/keys', bearer(`not-the-admin-key-${attempt}`), '127.0.0.4')).status).toBe(401);
		expectThrottled(await get(app, '/v1/admin/keys', bearer(ADMIN_KEY), '127.0.0.4'));
		expect((await get(app, '/v1/admin/keys', bearer(ADMIN_KEY), '127.0.0.5')).status).toBe(200);
	});
});

describe('failed authentication with PostgreSQL', () => {
	it('is counted for the whole fleet: failures on one replica throttle the client on another', async () => {
		const databaseUrl = await cluster.createDatabase();
		const [first, second] = await Promise.all([start([...FAILURES, '--database-url', databaseUrl]), start([...FAILURES, '--database-url', databaseUrl])]);
		expect((await models(first!, 'wrong-key-a-0123456789', '127.0.0.6')).status).toBe(401);
		expect((await models(second!, 'wrong-key-b-0123456789', '127.0.0.6')).status).toBe(401);
		expect((await models(first!, 'wrong-key-c-0123456789', '127.0.0.6')).status).toBe(401);
		expectThrottled(await models(second!, 'wrong-key-d-0123456789', '127.0.0.6'));
		expectThrottled(await models(first!, 'wrong-key-e-0123456789', '127.0.0.6'));
	});
});

describe('the client address behind a proxy', () => {
	it('is the connection\'s own without --trust-proxy: X-Forwarded-For cannot buy new attempts', async () => {
		const app = await start(FAILURES);
		for (let attempt = 0; attempt < 3; attempt++) {
			expect((await models(app, `wrong-key-${attempt}-0123456789`, '127.0.0.7', { 'x-forwarded-for': `203.0.113.${attempt}` })).status).toBe(401);
		}
		expectThrottled(await models(app, 'wrong-key-3-0123456789', '127.0.0.7', { 'x-forwarded-for': '203.0.113.99' }));
	});

	it('is the one the trusted proxy saw with --trust-proxy, whatever the client wrote before it', async () => {
		const app = await start([...FAILURES, '--trust-proxy', '127.0.0.8']);
		const key = app.auth.authorization.slice('Bearer '.length);
		// The proxy on 127.0.0.8 appends the address it saw; what the client wrote before it is not believed.
		for (let attempt = 0; attempt < 3; attempt++) {
			expect((await models(app, `wrong-key-${attempt}-0123456789`, '127.0.0.8', { 'x-forwarded-for': `198.51.100.${attempt}, 203.0.113.1` })).status).toBe(401);
		}
		expectThrottled(await models(app, key, '127.0.0.8', { 'x-forwarded-for': '198.51.100.77, 203.0.113.1' }));
		// Another client behind the same proxy is not locked out.
		expect((await models(app, key, '127.0.0.8', { 'x-forwarded-for': '203.0.113.2' })).status).toBe(200);
		// A connection from anywhere but the proxy is counted by its own address, whatever it claims.
		for (let attempt = 0; attempt < 3; attempt++) {
			expect((await models(app, `wrong-key-${attempt}-0123456789`, '127.0.0.9', { 'x-forwarded-for': `203.0.113.${10 + attempt}` })).status).toBe(401);
		}
		expectThrottled(await models(app, key, '127.0.0.9', { 'x-forwarded-for': '203.0.113.50' }));
	});
});
