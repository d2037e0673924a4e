/**
 * Another process holding the database's write lock (a stuck CLI, a `sqlite3` shell in
 * `BEGIN IMMEDIATE`: here a real child process) never freezes the service: `/healthz` and hosted
 * files answer at once while a write waits for the lock off the event loop, the write succeeds when
 * the lock comes free in time, and past the bounded wait it is a 503 with Retry-After, never a 500.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../../helpers/server';
import { call, download, uploadFile } from '../../support/http';
import { makeMp4 } from '../../support/media';

jest.setTimeout(60_000);

let server: RunningServer;
const holders: ChildProcess[] = [];
beforeAll(async () => {
	server = await startServer();
});
afterEach(() => {
	for (const holder of holders.splice(0)) holder.kill('SIGKILL');
});
afterAll(() => server?.stop({ removeData: true }));

/** A child process that takes the write lock, says so, and lets go after `ms`. */
async function holdWriteLock(ms: number): Promise<ChildProcess> {
	const script = `
		const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
		const database = new Database(${JSON.stringify(join(server.dataDir, 'imagegen.db'))});
		database.exec('BEGIN IMMEDIATE');
		process.stdout.write('held\\n');
		setTimeout(() => { database.exec('COMMIT'); database.close(); }, ${ms});
	`;
	const holder = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
	holders.push(holder);
	await once(holder.stdout!, 'data');
	return holder;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
	const started = performance.now();
	const value = await work();
	return { ms: performance.now() - started, value };
}

it('while a write waits for the lock, health and hosted files answer at once; the write succeeds once the lock is free', async () => {
	const hosted = await uploadFile(server, makeMp4(4096), {}, { fileName: 'before.mp4' });
	expect(hosted.status).toBe(200);

	const holder = await holdWriteLock(3_000);
	const released = once(holder, 'exit');
	const waiting = timed(() => uploadFile(server, makeMp4(4096), {}, { fileName: 'during.mp4' }));
	await new Promise((resolve) => setTimeout(resolve, 300));
	const health = await timed(() => call(server, '/healthz', { auth: null }));
	const file = await timed(() => download(hosted.body.videoUrl));
	expect({ status: health.value.status, fast: health.ms < 500 }).toEqual({ status: 200, fast: true });
	expect({ status: file.value.status, fast: file.ms < 500 }).toEqual({ status: 200, fast: true });

	const upload = await waiting;
	await released;
	expect(upload.value.status).toBe(200);
	expect(upload.ms).toBeGreaterThan(2_000);
	expect((await download(upload.value.body.videoUrl)).status).toBe(200);
});

it('past the bounded wait a write is a 503 with Retry-After, and health stayed fast meanwhile', async () => {
	await holdWriteLock(12_000);
	const waiting = timed(() => uploadFile(server, makeMp4(4096), {}, { fileName: 'refused.mp4' }));
	const healthTimes: number[] = [];
	for (let probe = 0; probe < 5; probe++) {
		await new Promise((resolve) => setTimeout(resolve, 500));
		healthTimes.push((await timed(() => call(server, '/healthz', { auth: null }))).ms);
	}
	const upload = await waiting;
	expect(upload.value.status).toBe(503);
	expect(upload.value.headers.get('retry-after')).toMatch(/^\d+$/);
	expect(upload.value.body.error.code).toBe('database_busy');
	expect(Math.max(...healthTimes)).toBeLessThan(500);
});
