/**
 * The admin key as the CLI gives a new operator one, run as the built CLI: without `--admin-key` it
 * makes one (256 random bits in <data-dir>/admin-key, readable by the owner only), prints it with
 * the operator page, and reuses it after a restart; the key opens /admin's API, /metrics and the
 * managed keys. A key from IMAGEGEN_ADMIN_KEY is used as it is and never printed or stored, and
 * `--admin-key none` runs without an admin API at all.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../helpers/server';
import { call, callAs } from '../support/http';

const directories: string[] = [];
const servers: RunningServer[] = [];
const dataDir = () => {
	const made = mkdtempSync(join(tmpdir(), 'imagegen-cli-keys-'));
	directories.push(made);
	return made;
};
const started = async (options: Parameters<typeof startServer>[0]) => {
	const server = await startServer(options);
	servers.push(server);
	return server;
};

afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.stop()));
});
afterAll(() => {
	for (const made of directories) rmSync(made, { recursive: true, force: true });
});

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const operatorPage = (server: RunningServer) => /^ {2}operator page: (\S+)$/m.exec(server.output())?.[1];

/** The admin key's powers: the managed keys, /metrics; and an API key is refused there. */
async function expectAdminKeyWorks(server: RunningServer, adminKey: string): Promise<void> {
	expect((await callAs(server, 'GET', '/v1/admin/keys', adminKey)).status).toBe(200);
	const metrics = await call(server, '/metrics', { auth: `Bearer ${adminKey}` });
	expect(metrics.status).toBe(200);
	expect(metrics.body).toContain('imagegen_http_requests_total');
	expect((await call(server, '/metrics')).status).toBe(403);
	const page = await fetch(operatorPage(server)!);
	expect(page.status).toBe(200);
	expect(page.headers.get('content-type')).toMatch(/^text\/html/);
}

test('without --admin-key a fresh data dir gets one (0600), printed with the operator page, and a restart reuses it', async () => {
	const dir = dataDir();
	const first = await started({ dataDir: dir });
	const file = join(dir, 'admin-key');
	const key = readFileSync(file, 'utf8').trim();
	// 256 random bits in base64url are 43 characters, after a prefix that tells it from an API key.
	expect(key).toMatch(/^igadmin_[A-Za-z0-9_-]{43}$/);
	expect(statSync(file).mode & 0o777).toBe(0o600);
	expect(first.output()).toMatch(new RegExp(`^Admin key: ${key}\\n {2}\\(created and stored in ${escaped(file)};[^\\n]*IMAGEGEN_ADMIN_KEY[^\\n]*\\)$`, 'm'));
	expect(operatorPage(first)).toBe(`${first.origin}/admin`);
	expect(key).not.toBe(first.apiKey);
	await expectAdminKeyWorks(first, key);
	await first.stop();

	const second = await started({ dataDir: dir });
	expect(readFileSync(file, 'utf8').trim()).toBe(key);
	expect(second.output()).toMatch(new RegExp(`^Admin key: ${key}\\n {2}\\(read in ${escaped(file)};`, 'm'));
	await expectAdminKeyWorks(second, key);
});

test('each data dir gets its own admin key', async () => {
	const [one, other] = await Promise.all([started({ dataDir: dataDir() }), started({ dataDir: dataDir() })]);
	expect(readFileSync(join(one.dataDir, 'admin-key'), 'utf8')).not.toBe(readFileSync(join(other.dataDir, 'admin-key'), 'utf8'));
});

test('a key from IMAGEGEN_ADMIN_KEY is used as it is: not stored, never printed, and the operator page is named', async () => {
	const given = `given-admin-${'0123456789abcdef'}`;
	const server = await started({ dataDir: dataDir(), env: { IMAGEGEN_ADMIN_KEY: given } });
	expect(existsSync(join(server.dataDir, 'admin-key'))).toBe(false);
	expect(server.output()).not.toContain(given);
	expect(server.output()).not.toMatch(/Admin key:/);
	await expectAdminKeyWorks(server, given);
});

test('--admin-key none: no key is made and there is no admin API, no /metrics and no operator page', async () => {
	for (const how of [{ args: ['--admin-key', 'none'] }, { env: { IMAGEGEN_ADMIN_KEY: 'none' } }]) {
		const server = await started({ dataDir: dataDir(), ...how });
		expect(existsSync(join(server.dataDir, 'admin-key'))).toBe(false);
		expect(server.output()).not.toMatch(/admin/i);
		expect((await fetch(`${server.origin}/admin`)).status).toBe(404);
		expect((await call(server, '/metrics')).status).toBe(404);
		expect((await call(server, '/v1/admin/keys')).status).toBe(404);
	}
});
