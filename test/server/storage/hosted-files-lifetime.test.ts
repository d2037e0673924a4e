/**
 * HostedFiles in process on the embedded engines, with a clock of our own: a file's own lifetime
 * (never past the retention), info only for its owner, fitting that replaces the staged bytes,
 * and a sweeper that keeps sweeping its other targets when one fails.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import sharp from 'sharp';
import { MEDIA_DETAILS } from '../../../core/media';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { DiskObjectStorage } from '../../../server/src/storage/disk-object-storage';
import { HostedFiles } from '../../../server/src/storage/hosted-files';
import { SqlFileMetadata } from '../../../server/src/storage/sql-file-metadata';
import { startSweeper } from '../../../server/src/storage/sweeper';
import { makeImage, makeMp4 } from '../support/media';

const OWNER = 'owner-key-id-0001';
const OTHER = 'other-key-id-0002';
const START = Date.parse('2030-01-01T00:00:00Z');
let dataDir: string;
let directory: string;
let adapter: SqliteAdapter;
let now: number;
let files: HostedFiles;

beforeEach(async () => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-lifetime-'));
	directory = join(dataDir, 'files');
	now = START;
	const storage = new DiskObjectStorage({ directory });
	await storage.init();
	adapter = new SqliteAdapter(openSqliteDatabase(dataDir));
	const metadata = new SqlFileMetadata(adapter, { now: () => now });
	files = new HostedFiles({ storage, metadata, retentionSeconds: 3600, publicBaseUrl: () => 'http://127.0.0.1:1', now: () => now });
});
afterEach(async () => {
	await adapter.close();
	rmSync(dataDir, { recursive: true, force: true });
});

const stageVideo = () => files.stageBuffer(makeMp4(500), MEDIA_DETAILS.mp4, OWNER);

test('publish with a lifetime: expires after it, and the sweeper then removes the bytes', async () => {
	const file = await files.publish(await stageVideo(), { lifetimeSeconds: 120 });
	expect(file.expiresAt.getTime() - file.createdAt.getTime()).toBe(120_000);
	now = START + 119_000;
	expect(await files.get(file.name)).not.toBeNull();
	now = START + 120_000;
	expect(await files.get(file.name)).toBeNull();
	expect(await files.sweep()).toBe(1);
	expect(readdirSync(directory).filter((name) => name.startsWith(file.id))).toEqual([]);
});

test('a lifetime longer than the retention, or none, is the retention', async () => {
	for (const lifetimeSeconds of [undefined, 3600, 999_999]) {
		const file = await files.publish(await stageVideo(), { lifetimeSeconds });
		expect(file.expiresAt.getTime() - file.createdAt.getTime()).toBe(3_600_000);
	}
});

test('info answers the file to its owner only, and nothing once it expired or was removed', async () => {
	const file = await files.publish(await stageVideo(), { lifetimeSeconds: 60 });
	expect((await files.info(file.id, OWNER))?.name).toBe(file.name);
	expect(await files.info(file.id, OTHER)).toBeNull();
	expect(await files.remove(file.id, OTHER)).toBe(false);
	expect(await files.info(file.id, OWNER)).not.toBeNull();
	expect(await files.remove(file.id, OWNER)).toBe(true);
	expect(await files.info(file.id, OWNER)).toBeNull();
	expect(await files.remove(file.id, OWNER)).toBe(false);

	const shortLived = await files.publish(await stageVideo(), { lifetimeSeconds: 60 });
	now += 60_000;
	expect(await files.info(shortLived.id, OWNER)).toBeNull();
	expect(await files.remove(shortLived.id, OWNER)).toBe(false);
});

test('fit replaces the staged image and discards the original, also one that already fits', async () => {
	const big = await files.stage(Readable.from([await makeImage('png', 800, 400)]), { ownerKeyId: OWNER });
	const fitted = await files.fit(big, { maxSide: 100, format: 'jpeg', field: 'file' });
	expect(fitted.id).not.toBe(big.id);
	expect(fitted.media.type).toBe('jpeg');
	expect(readdirSync(directory).some((name) => name.startsWith(big.id))).toBe(false);
	const published = await files.publish(fitted);
	const chunks: Buffer[] = [];
	for await (const chunk of (await files.open(published))!) chunks.push(chunk as Buffer);
	const bytes = Buffer.concat(chunks);
	expect(await sharp(bytes).metadata()).toMatchObject({ format: 'jpeg', width: 100, height: 50 });

	// Re-encoded all the same: an asked fit never passes the original's metadata on untouched.
	const small = await files.stage(Readable.from([await makeImage('png', 40, 20)]), { ownerKeyId: OWNER });
	const refitted = await files.fit(small, { maxSide: 100, format: 'png', field: 'file' });
	expect(refitted.id).not.toBe(small.id);
	expect(readdirSync(directory).some((name) => name.startsWith(small.id))).toBe(false);
});

test('the sweeper sweeps every target, each time, even when one of them fails', async () => {
	const swept: string[] = [];
	const errors: unknown[] = [];
	const failing = { sweep: () => Promise.reject(new Error('database down')) };
	const working = { sweep: async () => void swept.push('idempotency') };
	const sweeper = startSweeper([failing, working], 20, { onError: (error) => errors.push(error) });
	await new Promise((resolve) => setTimeout(resolve, 70));
	await sweeper.stop();
	expect(swept.length).toBeGreaterThanOrEqual(2);
	expect(errors.length).toBe(swept.length);
	const count = swept.length;
	await new Promise((resolve) => setTimeout(resolve, 50));
	expect(swept.length).toBe(count);
});

test('the sweeper reports each finished pass, how long it took and whether every target succeeded', async () => {
	const passes: Array<{ seconds: number; succeeded: boolean }> = [];
	let started = 0;
	let failNext = true;
	// Each pass takes its targets' time: a report of how long it took includes it.
	const slowFlaky = {
		sweep: async () => {
			started += 1;
			await new Promise((resolve) => setTimeout(resolve, 30));
			if (!failNext) return;
			failNext = false;
			throw new Error('bucket down');
		},
	};
	const onFinished = (seconds: number, succeeded: boolean) => void passes.push({ seconds, succeeded });
	const sweeper = startSweeper([slowFlaky], 20, { onError: () => undefined, onFinished });
	await new Promise((resolve) => setTimeout(resolve, 150));
	await sweeper.stop();
	expect(passes).toHaveLength(started);
	expect(passes.length).toBeGreaterThanOrEqual(2);
	expect(passes[0]!.succeeded).toBe(false);
	expect(passes.slice(1).every((pass) => pass.succeeded)).toBe(true);
	// Timers count from the event loop's cached time, so one may fire a little early by the clock the sweeper reads.
	for (const pass of passes) expect(pass.seconds).toBeGreaterThanOrEqual(0.025);
});
