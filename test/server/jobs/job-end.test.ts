/**
 * A job's end is one transaction with what it decides — its usage line and its webhook's outbox
 * row — through the whole service in process on the data dir's SQLite database:
 * - a cancel that lands while the success is being written wins whole: the job reads canceled,
 *   the key is charged nothing, no usage line counts it, its image is gone, and the receiver hears
 *   of the cancel only (a deterministic hook: the cancel is made inside the store's `finish`);
 * - an end whose outbox row cannot be written is not written either (a trigger refuses the row, as
 *   a crash between two commits would have lost it): the job stays running, and the next start on
 *   the data dir ends it with its delivery.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import type { JobStore } from '../../../server/src/jobs/job-store';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, callAs, createManagedKey, eventually } from '../support/http';
import { startReceiver, type Receiver } from '../support/webhook-receiver';

jest.setTimeout(60_000);

const ADMIN_KEY = 'job-end-admin-key-0001';
let dataDir: string;
let receiver: Receiver;
let server: InProcessServer | undefined;

beforeEach(async () => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-job-end-'));
	receiver = await startReceiver();
});
afterEach(async () => {
	await server?.stop({ removeData: true });
	server = undefined;
	await receiver.close();
});

async function start(): Promise<InProcessServer> {
	server = await startInProcessServer({ dataDir, args: ['--log-level', 'silent', '--admin-key', ADMIN_KEY, '--webhook-allow-private'] });
	return server;
}

const spentOf = async (keyId: string): Promise<number> => (await callAs(server!, 'GET', `/v1/admin/keys/${keyId}`, ADMIN_KEY)).body.budget.spent_usd;
const eventTypes = () => receiver.received.map((delivery) => (JSON.parse(delivery.body) as { type: string }).type);

function onDataDir<T>(work: (database: ReturnType<typeof openSqliteDatabase>) => T): T {
	const database = openSqliteDatabase(dataDir);
	try {
		return work(database);
	} finally {
		database.close();
	}
}

it('a cancel that lands while the success is written wins whole: nothing charged, counted or kept, one event', async () => {
	await start();
	const { id: keyId, key } = await createManagedKey(server!, ADMIN_KEY, { name: 'race', budget_usd: 1, budget_period: 'total' });
	const store: JobStore = server!.app.jobStore;
	const finish = store.finish.bind(store);
	store.finish = async (id, owner, end) => {
		if (end.status === 'succeeded') expect((await server!.app.jobs.cancel(id, keyId))?.status).toBe('canceled');
		return finish(id, owner, end);
	};
	const accepted = await call<{ id: string }>(server!, '/v1/images/generations', {
		method: 'POST',
		auth: `Bearer ${key}`,
		headers: { 'content-type': 'application/json', prefer: 'respond-async' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a heron at dusk', webhook_url: receiver.url }),
	});
	expect(accepted.status).toBe(202);
	// A close waits for the jobs running here: the run has ended once it returns.
	await server!.app.jobs.close(30_000);
	const job = await callAs(server!, 'GET', `/v1/generations/${accepted.body.id}`, key);
	expect(job.body).toMatchObject({ status: 'canceled', result: null });
	expect(await spentOf(keyId)).toBe(0);
	expect((await callAs(server!, 'GET', '/v1/usage', key)).body.data).toEqual([]);
	expect(onDataDir((database) => database.prepare('SELECT count(*) AS files FROM files WHERE owner_key_id = ?').get(keyId))).toEqual({ files: 0 });
	expect(await eventually(() => receiver.received.length === 1)).toBe(true);
	await new Promise((resolve) => setTimeout(resolve, 300));
	expect(eventTypes()).toEqual(['generation.canceled']);
});

it('an end whose webhook row cannot be written is not written: the job stays running, and the next start ends it with its delivery', async () => {
	await start();
	onDataDir((database) => database.exec("CREATE TRIGGER refuse_deliveries BEFORE INSERT ON webhook_outbox BEGIN SELECT RAISE(ABORT, 'no room for the delivery'); END"));
	const accepted = await call<{ id: string }>(server!, '/v1/images/generations', {
		method: 'POST',
		headers: { 'content-type': 'application/json', prefer: 'respond-async' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a kingfisher', webhook_url: receiver.url }),
	});
	expect(accepted.status).toBe(202);
	const { id } = accepted.body;
	// A close waits for the jobs running here: the run has tried to write its end once it returns.
	await server!.app.jobs.close(30_000);
	const ended = () => onDataDir((database) => database.prepare('SELECT status FROM generation_jobs WHERE id = ?').get(id) as { status: string });
	const deliveries = () => onDataDir((database) => (database.prepare('SELECT count(*) AS rows FROM webhook_outbox').get() as { rows: number }).rows);
	expect({ job: ended().status, deliveries: deliveries() }).toEqual({ job: 'running', deliveries: 0 });
	await server!.stop();
	onDataDir((database) => database.exec('DROP TRIGGER refuse_deliveries'));
	await start();
	expect(await eventually(() => ended().status !== 'running')).toBe(true);
	expect(ended().status).toBe('failed');
	expect(await eventually(() => receiver.received.length === 1)).toBe(true);
	expect(eventTypes()).toEqual(['generation.failed']);
});
