/**
 * The data dir on a small real file system (a 4 MiB tmpfs, support/small-file-system.ts) that
 * fills while a generation runs — the sandbox waits, the disk fills, then the image is written.
 * Neither the image nor the row that would say so fits: a synchronous call answers 507
 * `insufficient_storage` at once, and the job ends `failed` with that error as soon as space is
 * back — not, once its lease has run out, as "cut off by a restart". Nothing is charged or
 * counted, no file of it is left hosted, and the service keeps serving and generates again. A disk
 * that fills just as a success is written (a deterministic hook in the store's `finish`) ends the
 * job as storage full too, not as an internal error.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { databasePath } from '../../../server/src/db/sqlite/database';
import type { JobStore } from '../../../server/src/jobs/job-store';
import { startInProcessServer, type InProcessServer } from '../support/app';
import { call, callAs, createManagedKey, eventually } from '../support/http';
import { useSmallFileSystem } from '../support/small-file-system';

jest.setTimeout(60_000);

const ADMIN_KEY = 'full-disk-admin-key-0001';
/** Long enough to fill the disk while the sandbox waits, short enough for the suite. */
const SANDBOX_DELAY_MS = 1_500;
/** The shortest lease, so recovery passes run while the disk is full. */
const LEASE_SECONDS = 3;

const disk = useSmallFileSystem(4);
let server: InProcessServer | undefined;
let filler: string | undefined;

afterEach(async () => {
	if (filler) rmSync(filler, { force: true });
	filler = undefined;
	await server?.stop({ removeData: true });
	server = undefined;
});

async function start(): Promise<InProcessServer> {
	const dataDir = join(disk.path!, 'data');
	mkdirSync(dataDir, { recursive: true });
	server = await startInProcessServer({ dataDir, args: ['--log-level', 'warn', '--admin-key', ADMIN_KEY, '--sandbox-delay-ms', String(SANDBOX_DELAY_MS), '--job-lease-seconds', String(LEASE_SECONDS)] });
	return server;
}

/**
 * A read of the data dir's database, as another process would make it: while the disk is full
 * authenticated calls answer 507 (each counts against the key's rate limit, a write).
 */
function onDatabase<T>(query: (database: Database.Database) => T): T {
	const database = new Database(databasePath(server!.dataDir), { readonly: true, fileMustExist: true });
	try {
		return query(database);
	} finally {
		database.close();
	}
}

const jobRow = (id: string) => onDatabase((database) => database.prepare('SELECT status, error FROM generation_jobs WHERE id = ?').get(id) as { status: string; error: string | null });
interface JobBody {
	status: string;
	error: { code: string; message: string } | null;
}

const jobCount = () => onDatabase((database) => (database.prepare('SELECT count(*) AS jobs FROM generation_jobs').get() as { jobs: number }).jobs);
const filesOf = (keyId: string) => onDatabase((database) => (database.prepare('SELECT count(*) AS files FROM files WHERE owner_key_id = ?').get(keyId) as { files: number }).files);

disk.it('a disk that fills while a job runs fails the job as storage full: nothing charged, counted or kept, and the service goes on', async () => {
	await start();
	const { id: keyId, key } = await createManagedKey(server!, ADMIN_KEY, { name: 'full disk', budget_usd: 1, budget_period: 'total' });
	const accepted = await call<{ id: string }>(server!, '/v1/images/generations', {
		method: 'POST',
		auth: `Bearer ${key}`,
		headers: { 'content-type': 'application/json', prefer: 'respond-async' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse in fog' }),
	});
	expect(accepted.status).toBe(202);
	filler = disk.fill('filler');

	const { id } = accepted.body;
	// The image did not fit, and neither does the row that says so (the run logs it, naming the job).
	expect(await eventually(() => server!.output().includes(id), SANDBOX_DELAY_MS + 10_000)).toBe(true);
	expect(jobRow(id).status).toBe('running');
	expect((await call(server!, '/healthz', { auth: null })).status).toBe(200);
	// Past the job's lease while the disk stays full: recovery passes run, and must not end it as interrupted.
	await new Promise((resolve) => setTimeout(resolve, (LEASE_SECONDS + 1) * 1000));

	rmSync(filler);
	filler = undefined;
	expect(await eventually(() => jobRow(id).status !== 'running', 5_000)).toBe(true);
	expect(jobRow(id)).toMatchObject({ status: 'failed' });
	expect(JSON.parse(jobRow(id).error!)).toMatchObject({ code: 'insufficient_storage', message: expect.stringMatching(/no storage space left/) });
	expect(filesOf(keyId)).toBe(0);
	const job = await callAs<JobBody>(server!, 'GET', `/v1/generations/${id}`, key);
	expect(job.body).toMatchObject({ status: 'failed', error: { code: 'insufficient_storage', message: expect.stringMatching(/no storage space left/) } });
	expect((await callAs(server!, 'GET', `/v1/admin/keys/${keyId}`, ADMIN_KEY)).body.budget.spent_usd).toBe(0);
	expect((await callAs(server!, 'GET', '/v1/usage', key)).body.data).toEqual([]);
	const after = await call(server!, '/v1/images/generations', {
		method: 'POST',
		auth: `Bearer ${key}`,
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a lighthouse in sun' }),
	});
	expect(after.status).toBe(200);
});

disk.it('a synchronous generation the disk fills under answers 507 at once, and its job ends as storage full once space is back', async () => {
	await start();
	const { id: keyId, key } = await createManagedKey(server!, ADMIN_KEY, { name: 'full disk, waiting', budget_usd: 1, budget_period: 'total' });
	const started = performance.now();
	const answer = call(server!, '/v1/images/generations', {
		method: 'POST',
		auth: `Bearer ${key}`,
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a harbour at night' }),
	});
	// The job is written before the sandbox starts to wait: fill the disk only then.
	expect(await eventually(() => jobCount() === 1, SANDBOX_DELAY_MS)).toBe(true);
	filler = disk.fill('filler');
	const answered = await answer;
	expect({ status: answered.status, code: answered.body.error?.code }).toEqual({ status: 507, code: 'insufficient_storage' });
	expect(performance.now() - started).toBeLessThan(SANDBOX_DELAY_MS + 5_000);

	rmSync(filler);
	filler = undefined;
	expect(await eventually(() => onDatabase((database) => database.prepare("SELECT count(*) AS running FROM generation_jobs WHERE status = 'running'").get() as { running: number }).running === 0, 5_000)).toBe(true);
	const [job] = (await callAs<{ data: JobBody[] }>(server!, 'GET', '/v1/generations', key)).body.data;
	expect(job).toMatchObject({ status: 'failed', error: { code: 'insufficient_storage' } });
	expect((await callAs(server!, 'GET', `/v1/admin/keys/${keyId}`, ADMIN_KEY)).body.budget.spent_usd).toBe(0);
	expect((await callAs(server!, 'GET', '/v1/usage', key)).body.data).toEqual([]);
	expect(filesOf(keyId)).toBe(0);
});

disk.it('a disk that fills just as a success is written: the job ends as storage full (not an internal error), nothing charged or counted', async () => {
	await start();
	const { id: keyId, key } = await createManagedKey(server!, ADMIN_KEY, { name: 'full at the end', budget_usd: 1, budget_period: 'total' });
	// The image is stored; the disk fills before the row that would publish the job's success.
	const store: JobStore = server!.app.jobStore;
	const finish = store.finish.bind(store);
	store.finish = async (id, owner, end) => {
		if (end.status === 'succeeded' && !filler) filler = disk.fill('filler');
		return finish(id, owner, end);
	};
	const answered = await call(server!, '/v1/images/generations', {
		method: 'POST',
		auth: `Bearer ${key}`,
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a harbour at dawn' }),
	});
	expect({ status: answered.status, code: answered.body.error?.code }).toEqual({ status: 507, code: 'insufficient_storage' });

	rmSync(filler!);
	filler = undefined;
	expect(await eventually(() => onDatabase((database) => database.prepare("SELECT count(*) AS running FROM generation_jobs WHERE status = 'running'").get() as { running: number }).running === 0, 5_000)).toBe(true);
	const [job] = (await callAs<{ data: JobBody[] }>(server!, 'GET', '/v1/generations', key)).body.data;
	expect(job).toMatchObject({ status: 'failed', error: { code: 'insufficient_storage' } });
	expect((await callAs(server!, 'GET', `/v1/admin/keys/${keyId}`, ADMIN_KEY)).body.budget.spent_usd).toBe(0);
	expect((await callAs(server!, 'GET', '/v1/usage', key)).body.data).toEqual([]);
	// Its image: run-generation keeps a job's images when its end cannot be written, for the
	// recovery that ends it; what a storage-full end does with them is settled there, not here.
});
