/**
 * `imagegen-server keys …` run as the built CLI, on both engines, before and while a service runs
 * on the same configuration.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { runCli, startServer, type RunningServer } from '../../helpers/server';
import { usePostgresCluster } from '../support/postgres';

const keys = (args: string[], env: Record<string, string> = {}) => runCli(['keys', ...args], env);

const models = (server: RunningServer, secret: string) => fetch(`${server.baseUrl}/models`, { headers: { authorization: `Bearer ${secret}` } });

const cluster = usePostgresCluster();
const directories: string[] = [];
const servers: RunningServer[] = [];
const dataDir = () => {
	const directory = mkdtempSync(join(tmpdir(), 'imagegen-keys-cli-'));
	directories.push(directory);
	return directory;
};

afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.stop()));
});
afterAll(async () => {
	for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe.each([
	['data dir', async () => ({ args: [] as string[], dir: dataDir() })],
	['PostgreSQL', async () => ({ args: ['--database-url', await cluster.createDatabase()], dir: dataDir() })],
])('imagegen-server keys on the %s', (_engine, setup) => {
	it('makes the first key before any service runs; the service then takes it, and sees revocation while running', async () => {
		const { args, dir } = await setup();
		const created = await keys(['create', '--name', 'first', '--models', 'p-image,textimage-v2', '--budget-usd', '0.007', '--budget-period', 'day', '--rate-limit-per-minute', '100', '--json', '--data-dir', dir, ...args]);
		expect(created.code).toBe(0);
		const key = JSON.parse(created.stdout) as { id: string; key: string; models: string[]; budget: { limit_usd: number; period: string }; rate_limit_per_minute: number };
		expect(key).toMatchObject({ models: ['p-image', 'textimage-v2'], budget: { limit_usd: 0.007, period: 'day' }, rate_limit_per_minute: 100 });
		expect(key.key).toMatch(/^igk_/);

		const server = await startServer({ dataDir: dir, args });
		servers.push(server);
		expect((await models(server, key.key)).status).toBe(200);
		const generated = await fetch(`${server.baseUrl}/images/generations`, {
			method: 'POST',
			headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
			body: JSON.stringify({ model: 'p-image', prompt: 'x', response_format: 'b64_json' }),
		});
		expect(generated.status).toBe(200);

		const listed = await keys(['list', '--json', '--data-dir', dir, ...args]);
		expect(listed.code).toBe(0);
		const list = JSON.parse(listed.stdout) as { data: Array<{ id: string; budget: { spent_usd: number } }> };
		expect(list.data).toEqual([expect.objectContaining({ id: key.id, budget: expect.objectContaining({ spent_usd: 0.0035 }) })]);
		expect(listed.stdout).not.toContain(key.key);
		const human = await keys(['list', '--data-dir', dir, ...args]);
		expect(human.stdout).toContain(key.id);
		expect(human.stdout).toContain('$0.0035 of $0.007');

		const revoked = await keys(['revoke', key.id, '--data-dir', dir, ...args]);
		expect(revoked).toMatchObject({ code: 0 });
		await delay(1_000);
		expect((await models(server, key.key)).status).toBe(401);
		expect(await keys(['revoke', key.id, '--data-dir', dir, ...args])).toMatchObject({ code: 1, stderr: expect.stringContaining(`no key '${key.id}'`) });
	});

	it('rotates with a grace time', async () => {
		const { args, dir } = await setup();
		const key = JSON.parse((await keys(['create', '--name', 'rotating', '--json', '--data-dir', dir, ...args])).stdout) as { id: string; key: string };
		const server = await startServer({ dataDir: dir, args });
		servers.push(server);
		const rotated = await keys(['rotate', key.id, '--grace-seconds', '6', '--json', '--data-dir', dir, ...args]);
		// The rotation happened at some moment before the command ended (a loaded machine can take
		// seconds to start the CLI), so the grace time ends at the latest 6 s after this.
		const rotatedBy = Date.now();
		expect(rotated.code).toBe(0);
		const next = JSON.parse(rotated.stdout) as { id: string; key: string };
		expect(next.id).toBe(key.id);
		await delay(600);
		expect((await models(server, next.key)).status).toBe(200);
		expect((await models(server, key.key)).status).toBe(200);
		// Past the grace time plus the service's key cache (0.5 s).
		await delay(Math.max(0, rotatedBy + 6_000 + 1_100 - Date.now()));
		expect((await models(server, key.key)).status).toBe(401);
		expect((await models(server, next.key)).status).toBe(200);
	});
});

describe('imagegen-server keys usage', () => {
	it('reads the data dir from the environment like the service', async () => {
		const dir = dataDir();
		expect((await keys(['create', '--name', 'from env'], { IMAGEGEN_DATA_DIR: dir })).code).toBe(0);
		const listed = await keys(['list', '--json', '--data-dir', dir]);
		expect((JSON.parse(listed.stdout) as { data: Array<{ name: string }> }).data.map((key) => key.name)).toEqual(['from env']);
	});

	it.each([
		[['create', '--budget-usd', '5'], '--name'],
		[['create', '--name', 'x', '--budget-usd', 'five'], '--budget-usd'],
		[['create', '--name', 'x', '--budget-usd', '0'], '--budget-usd'],
		[['create', '--name', 'x', '--models', 'dall-e'], '--models'],
		[['create', '--name', 'x', '--budget-period', 'week', '--budget-usd', '1'], '--budget-period'],
		[['create', '--name', 'x', '--expires-at', 'soon'], '--expires-at'],
		[['create', '--name', 'x', '--rate-limit-per-minute', '0'], '--rate-limit-per-minute'],
		[['create', '--name', 'x', '--grace-seconds', '5'], '--grace-seconds'],
		[['rotate', 'key_abcdefgh123', '--grace-seconds', '90000'], '--grace-seconds'],
		[['revoke'], 'key id'],
		[['revoke', 'nope'], 'id'],
		[['destroy'], 'unknown command'],
		[['list', '--port', 'x'], '--port'],
		[['create', '--name', 'a\u001b[2Jb'], '--name'],
		[['create', '--name', 'a\r\nkey_fake'], '--name'],
		[['create', '--name', 'x', '--expires-at', '2030-02-31T00:00:00Z'], '--expires-at'],
		// A flag followed by another flag has no value: the next flag is not taken as one.
		[['create', '--name'], '--name needs a value'],
		[['create', '--name', 'x', '--models', '--json'], '--models needs a value'],
		[['rotate', 'key_abcdefgh123', '--grace-seconds', '--json'], '--grace-seconds needs a value'],
		[['list', '--colour', 'red'], "Unknown option '--colour'"],
		[['create', '--name', 'x', '--constructor', 'y'], "Unknown option '--constructor'"],
		// A switch of the service takes no value: the word after it is an argument of the command.
		[['list', '--allow-private-urls', 'extra'], "'keys list' takes no arguments; got 'extra'"],
		[['revoke', 'key_abcdefgh123', '--port=eighty'], '--port must be a whole number'],
	])('refuses %j with exit code 2, naming %s, and writes nothing', async (args, named) => {
		const dir = dataDir();
		const outcome = await keys([...args, '--data-dir', dir]);
		expect(outcome.code).toBe(2);
		expect(outcome.stderr).toContain(named);
		const listed = await keys(['list', '--json', '--data-dir', dir]);
		expect(JSON.parse(listed.stdout)).toEqual({ object: 'list', data: [] });
	});

	it('never prints a raw control character or bidi override, even from a name stored before names were checked', async () => {
		const database = await cluster.createDatabase();
		const created = await keys(['create', '--name', 'plain', '--json', '--database-url', database]);
		expect(created.code).toBe(0);
		// Written past the admin API's checks, as an older version could have stored it.
		const hostile = String.raw`E'\x1b[2J\x1b]0;owned\x07ops\r\nkey_fake  igk_fake…  admin\u0085\u202eexe.png'`;
		await cluster.admin(database, `UPDATE api_keys SET name = ${hostile}`);
		const unsafe = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
		const listed = await keys(['list', '--database-url', database]);
		expect(listed.code).toBe(0);
		expect(listed.stdout).not.toMatch(unsafe);
		expect(listed.stdout).toContain(String.raw`\u001b[2J\u001b]0;owned\u0007ops\u000d\u000akey_fake  igk_fake…  admin\u0085\u202eexe.png`);
		// No line of the listing starts with a forged key id.
		expect(listed.stdout.split('\n').filter((line) => line.startsWith('key_'))).toHaveLength(1);
		const json = await keys(['list', '--json', '--database-url', database]);
		expect(json.stdout).not.toMatch(unsafe);
		expect(JSON.parse(json.stdout).data[0].name).toBe('\u001b[2J\u001b]0;owned\u0007ops\r\nkey_fake  igk_fake…  admin\u0085\u202eexe.png');
	});

	it('explains itself with --help', async () => {
		const help = await keys(['--help']);
		expect(help.code).toBe(0);
		expect(help.stdout).toContain('keys <command>');
		expect(help.stdout).toContain('--grace-seconds');
	});
});
