/**
 * /metrics over PostgreSQL, stopped for a while under the running service: imagegen_database_up is
 * 1, then 0 while the server is down, then 1 again; a server database has no
 * imagegen_database_condition; and while it is down the scrape still answers, the families read
 * from the database at NaN and every other family as before.
 */
import { startInProcessServer, type InProcessServer } from '../support/app';
import { eventually } from '../support/http';
import { usePostgresCluster } from '../support/postgres';
import { scrape } from './support/scrape';

jest.setTimeout(120_000);

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const postgres = usePostgresCluster();
let server: InProcessServer;

beforeAll(async () => {
	// Without the failed-authentication throttle: it reads its counts in PostgreSQL at every
	// authentication, the admin key's at /metrics included, so with it on a scrape needs the database.
	const args = ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--auth-failures-per-minute', '0', '--database-url', await postgres.createDatabase()];
	server = await startInProcessServer({ args });
});

afterAll(async () => {
	await server?.stop({ removeData: true });
});

it('imagegen_database_up follows the server; the scrape answers while it is down', async () => {
	const up = await scrape(server, ADMIN_KEY);
	expect(up.value('imagegen_database_up')).toBe(1);
	expect(up.has('imagegen_database_condition')).toBe(false);
	expect(up.value('imagegen_webhook_outbox_pending')).toBe(0);
	expect(up.value('imagegen_jobs', { status: 'queued' })).toBe(0);

	await postgres.halt();
	try {
		const down = await scrape(server, ADMIN_KEY);
		expect(down.value('imagegen_database_up')).toBe(0);
		expect(down.value('imagegen_webhook_outbox_pending')).toBeNaN();
		expect(down.value('imagegen_jobs', { status: 'queued' })).toBeNaN();
		expect(down.value('imagegen_data_dir_free_bytes')).toBeGreaterThan(0);
		expect(down.value('imagegen_usage_ledger_pending')).toBe(0);
	} finally {
		await postgres.resume();
	}

	expect(await eventually(async () => (await scrape(server, ADMIN_KEY)).value('imagegen_database_up') === 1, 15_000)).toBe(true);
	expect((await scrape(server, ADMIN_KEY)).value('imagegen_webhook_outbox_pending')).toBe(0);
});
