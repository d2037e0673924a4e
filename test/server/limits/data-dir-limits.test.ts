/**
 * Two services on one data dir (a restart without downtime, or two processes behind one proxy)
 * share their limits through the data dir's database: a key's requests per minute and a client's
 * failed authentications are counted once for both, not once per process.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../helpers/server';
import { callAs, type ApiAnswer } from '../support/http';

const ADMIN_KEY = 'data-dir-limits-admin-0123456789';
const AUTH_FAILURES_PER_MINUTE = 4;

let dataDir: string;
const servers: RunningServer[] = [];

beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-data-dir-limits-'));
});
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.stop()));
	rmSync(dataDir, { recursive: true, force: true });
});

async function twoServices(): Promise<[RunningServer, RunningServer]> {
	const args = ['--admin-key', ADMIN_KEY, '--auth-failures-per-minute', String(AUTH_FAILURES_PER_MINUTE)];
	// One after the other: the first creates the database, the second finds it.
	const first = await startServer({ dataDir, args });
	servers.push(first);
	const second = await startServer({ dataDir, args });
	servers.push(second);
	return [first, second];
}

const models = (server: RunningServer, secret: string) => callAs(server, 'GET', '/v1/models', secret);

function retryAfter(answer: ApiAnswer): number {
	return Number(answer.headers.get('retry-after'));
}

describe('limits on one data dir shared by two services', () => {
	it('a managed key of 5 requests per minute gets 5 across both services, then 429 with Retry-After on either', async () => {
		const [first, second] = await twoServices();
		const created = await callAs(first, 'POST', '/v1/admin/keys', ADMIN_KEY, { name: 'five a minute', rate_limit_per_minute: 5 });
		expect(created.status).toBe(201);
		const answers: ApiAnswer[] = [];
		for (let request = 0; request < 10; request++) answers.push(await models(request % 2 === 0 ? first : second, created.body.key));
		expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
		for (const refused of answers.slice(5)) {
			expect(refused.body.error).toMatchObject({ type: 'rate_limit_error' });
			// One token every 12 s.
			expect(retryAfter(refused)).toBeGreaterThanOrEqual(1);
			expect(retryAfter(refused)).toBeLessThanOrEqual(12);
		}
	}, 60_000);

	it('a burst at both services at once admits exactly the limit', async () => {
		const [first, second] = await twoServices();
		const created = await callAs(first, 'POST', '/v1/admin/keys', ADMIN_KEY, { name: 'burst', rate_limit_per_minute: 5 });
		const answers = await Promise.all(Array.from({ length: 20 }, (_, request) => models(request % 2 === 0 ? first : second, created.body.key)));
		expect(answers.filter((answer) => answer.status === 200)).toHaveLength(5);
		expect(answers.filter((answer) => answer.status === 429)).toHaveLength(15);
	}, 60_000);

	it('failed authentications from one client are counted once for both services', async () => {
		const [first, second] = await twoServices();
		const answers: ApiAnswer[] = [];
		for (let guess = 0; guess < 10; guess++) answers.push(await models(guess % 2 === 0 ? first : second, `wrong-key-${guess}-0123456789`));
		expect(answers.map((answer) => answer.status)).toEqual([401, 401, 401, 401, 429, 429, 429, 429, 429, 429]);
		for (const refused of answers.slice(AUTH_FAILURES_PER_MINUTE)) {
			expect(refused.body.error).toMatchObject({ code: 'too_many_failed_authentications' });
			expect(retryAfter(refused)).toBeGreaterThanOrEqual(1);
			expect(retryAfter(refused)).toBeLessThanOrEqual(15);
		}
		// The right key from the throttled client waits too, on either service.
		expect((await models(first, ADMIN_KEY)).status).toBe(429);
		expect((await models(second, ADMIN_KEY)).status).toBe(429);
	}, 60_000);
});
