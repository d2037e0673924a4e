/**
 * The data dir on a file system that fills up (a 16 MiB tmpfs, mounted for the test: it needs
 * root): once the database cannot grow, every write answers 507 `insufficient_storage`, as a full
 * disk does for the bytes (multipart and JSON uploads, generations alike), files already hosted
 * still download, `/healthz` says the database is full, and all of it recovers once space is freed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../../helpers/server';
import { call, download, postJson, uploadFile } from '../../support/http';
import { makeMp4 } from '../../support/media';

jest.setTimeout(60_000);

/** Mounting needs root; elsewhere (an unprivileged CI runner) the suite is skipped. */
function mountSmallFileSystem(): string | null {
	if (process.getuid?.() !== 0) return null;
	const mountPoint = mkdtempSync(join(tmpdir(), 'imagegen-full-'));
	if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mountPoint]).status !== 0) {
		rmSync(mountPoint, { recursive: true, force: true });
		return null;
	}
	return mountPoint;
}

/** Writes until the file system refuses: nothing, not even a page of the log, fits after this. */
function fill(file: string): void {
	const descriptor = openSync(file, 'w');
	const chunk = Buffer.alloc(64 * 1024, 7);
	try {
		for (let size = chunk.length; size >= 1; size = Math.floor(size / 2)) {
			try {
				for (;;) writeSync(descriptor, chunk, 0, size);
			} catch (error) {
				if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
			}
		}
	} finally {
		closeSync(descriptor);
	}
}

const mountPoint = mountSmallFileSystem();
let server: RunningServer | undefined;
afterAll(async () => {
	await server?.stop();
	if (mountPoint) {
		execFileSync('umount', [mountPoint]);
		rmSync(mountPoint, { recursive: true, force: true });
	}
});

(mountPoint ? it : it.skip)('a full database answers 507 on every write route, health says full, and both recover when space is freed', async () => {
	const dataDir = join(mountPoint!, 'data');
	mkdirSync(dataDir);
	server = await startServer({ dataDir });
	const kept = await uploadFile(server, makeMp4(4096), {}, { fileName: 'kept.mp4' });
	expect(kept.status).toBe(200);

	const filler = join(mountPoint!, 'filler');
	fill(filler);

	const multipart = await uploadFile(server, makeMp4(4096), {}, { fileName: 'late.mp4' });
	const json = await postJson(server, '/v1/uploads', { file: makeMp4(4096).toString('base64') });
	const generation = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'no room' });
	for (const answer of [multipart, json, generation]) {
		expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 507, code: 'insufficient_storage' });
		expect(answer.body.error.message).toBe('The server has no storage space left for this file; try again later');
	}
	const health = await call(server, '/healthz', { auth: null });
	expect(health.status).toBe(200);
	expect(health.body).toMatchObject({ status: 'degraded', engines: { database: 'full' } });
	expect((await download(kept.body.videoUrl)).status).toBe(200);

	rmSync(filler);
	const after = await uploadFile(server, makeMp4(4096), {}, { fileName: 'after.mp4' });
	expect(after.status).toBe(200);
	expect(await call(server, '/healthz', { auth: null })).toMatchObject({ status: 200, body: { status: 'ok' } });
});
