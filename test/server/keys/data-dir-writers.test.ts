/**
 * Several writers on one data dir, as the built CLI runs them: the keys CLI beside a service taking
 * admin updates, concurrent PATCHes of one key, and two services (a restart without downtime)
 * admitting against one budget. No change may be lost, and every process sees the others' changes
 * within a second.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { SERVER_CLI, startServer, type RunningServer } from '../../helpers/server';
import { callAs } from '../support/http';

const run = promisify(execFile);
const ADMIN_KEY = 'data-dir-admin-key-0123456789';

const call = callAs;
const admin = (server: RunningServer, method: string, path: string, body?: unknown) => call(server, method, `/v1/admin${path}`, ADMIN_KEY, body);

async function createKey(server: RunningServer, fields: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
	const created = await admin(server, 'POST', '/keys', { name: 'writer', ...fields });
	expect(created.status).toBe(201);
	return created.body;
}

let dataDir: string;
const servers: RunningServer[] = [];
const start = async () => {
	const server = await startServer({ dataDir, args: ['--admin-key', ADMIN_KEY] });
	servers.push(server);
	return server;
};

beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-data-dir-writers-'));
});
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.stop()));
	rmSync(dataDir, { recursive: true, force: true });
});

describe('keys on one data dir with several writers', () => {
	it('ten CLI revocations during 150 admin updates all hold, and the service refuses those secrets within a second', async () => {
		const server = await start();
		const revoked = await Promise.all(Array.from({ length: 10 }, () => createKey(server)));
		const busy = await createKey(server);
		let updates = 0;
		const updating = (async () => {
			for (; updates < 150; updates++) expect((await admin(server, 'PATCH', `/keys/${busy.id}`, { name: `busy ${updates}` })).status).toBe(200);
		})();
		for (const key of revoked) {
			const outcome = await run(process.execPath, [SERVER_CLI, 'keys', 'revoke', key.id, '--data-dir', dataDir]);
			expect(outcome.stderr).toBe('');
		}
		await updating;
		await delay(1_000);
		const stillWorking: string[] = [];
		for (const key of revoked) {
			const listed = (await admin(server, 'GET', `/keys/${key.id}`)).status !== 404;
			const accepted = (await call(server, 'GET', '/v1/models', key.key)).status !== 401;
			if (listed || accepted) stillWorking.push(key.id);
		}
		expect(stillWorking).toEqual([]);
		expect((await admin(server, 'GET', `/keys/${busy.id}`)).body.name).toBe('busy 149');
	}, 120_000);

	it('a rename and a block of one key sent at once both hold, 20 rounds', async () => {
		const server = await start();
		const key = await createKey(server);
		const lost: number[] = [];
		for (let round = 0; round < 20; round++) {
			const [renamed, blocked] = await Promise.all([
				admin(server, 'PATCH', `/keys/${key.id}`, { name: `round ${round}` }),
				admin(server, 'PATCH', `/keys/${key.id}`, { blocked: round % 2 === 0 }),
			]);
			expect([renamed.status, blocked.status]).toEqual([200, 200]);
			const seen = (await admin(server, 'GET', `/keys/${key.id}`)).body;
			if (seen.name !== `round ${round}` || seen.blocked !== (round % 2 === 0)) lost.push(round);
		}
		expect(lost).toEqual([]);
	}, 60_000);

	it('two services on one data dir admit exactly k of N concurrent generations with room for k', async () => {
		const first = await start();
		const second = await start();
		const k = 4;
		const key = await createKey(first, { budget_usd: 0.0035 * k, budget_period: 'month' });
		const generate = (server: RunningServer) =>
			call(server, 'POST', '/v1/images/generations', key.key, { model: 'p-image', prompt: 'a lighthouse', response_format: 'b64_json' });
		const answers = await Promise.all(Array.from({ length: 14 }, (_, index) => generate(index % 2 === 0 ? first : second)));
		const statuses = answers.map((answer) => answer.status);
		expect(statuses.filter((status) => status === 200)).toHaveLength(k);
		expect(statuses.filter((status) => status === 402)).toHaveLength(14 - k);
		for (const server of [first, second]) expect((await admin(server, 'GET', `/keys/${key.id}`)).body.budget.spent_usd).toBe(0.0035 * k);
	}, 60_000);
});
