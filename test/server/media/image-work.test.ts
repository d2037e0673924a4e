/**
 * The image queue (server/src/media/image-work.ts): at most `concurrency` jobs run, a bounded
 * number wait, the rest are turned away with 503 + Retry-After; a job's budget covers waiting and
 * working; a client that leaves stops its job. And fitting reads the staged file in place: a big
 * upload is never copied into memory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { ImageGenError } from '../../../core/errors';
import { MEDIA_DETAILS } from '../../../core/media';
import { ImageWork } from '../../../server/src/media/image-work';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { DiskObjectStorage } from '../../../server/src/storage/disk-object-storage';
import { HostedFiles } from '../../../server/src/storage/hosted-files';
import { SqlFileMetadata } from '../../../server/src/storage/sql-file-metadata';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rejection = async (promise: Promise<unknown>) => promise.then(() => new Error('resolved'), (error: unknown) => error);

test('runs at most `concurrency` jobs at once; the rest wait their turn', async () => {
	const work = new ImageWork({ maxPixels: 100, concurrency: 2, maxQueued: 10 });
	let running = 0;
	let peak = 0;
	const job = () =>
		work.run(async () => {
			peak = Math.max(peak, ++running);
			await sleep(20);
			running--;
		});
	await Promise.all(Array.from({ length: 7 }, job));
	expect(peak).toBe(2);
	expect(work.load).toEqual({ running: 0, waiting: 0 });
});

test('a full queue is a 503 image_work_busy with Retry-After, at once', async () => {
	const work = new ImageWork({ maxPixels: 100, concurrency: 1, maxQueued: 1 });
	let release!: () => void;
	const blocker = work.run(() => new Promise<void>((resolve) => (release = resolve)));
	const waiting = work.run(async () => 'second');
	const refused = (await rejection(work.run(async () => 'third'))) as ImageGenError;
	expect(refused).toBeInstanceOf(ImageGenError);
	expect(refused).toMatchObject({ status: 503, code: 'image_work_busy' });
	expect(refused.retryAfterSeconds).toBeGreaterThan(0);
	release();
	await blocker;
	expect(await waiting).toBe('second');
});

test('a waiting job whose client leaves never runs and frees its place', async () => {
	const work = new ImageWork({ maxPixels: 100, concurrency: 1, maxQueued: 1 });
	let release!: () => void;
	const blocker = work.run(() => new Promise<void>((resolve) => (release = resolve)));
	const client = new AbortController();
	let ran = false;
	const abandoned = work.run(async () => void (ran = true), { signal: client.signal });
	client.abort(new Error('client closed the connection'));
	expect(((await rejection(abandoned)) as Error).message).toBe('client closed the connection');
	expect(work.load.waiting).toBe(0);
	release();
	await blocker;
	expect(ran).toBe(false);
});

test('the budget covers the wait (503 busy) and the work (503 image_work_timeout, signal aborted)', async () => {
	const work = new ImageWork({ maxPixels: 100, concurrency: 1, maxQueued: 5, budgetMs: 150 });
	let seen: AbortSignal | undefined;
	const slow = work.run(async (job) => {
		seen = job.signal;
		await sleep(400);
		job.throwIfStopped();
	});
	const starved = work.run(async () => 'never');
	expect(await rejection(starved)).toMatchObject({ status: 503, code: 'image_work_busy' });
	expect(await rejection(slow)).toMatchObject({ status: 503, code: 'image_work_timeout' });
	expect(seen?.aborted).toBe(true);
	expect(work.load).toEqual({ running: 0, waiting: 0 });
});

test('a finished job leaves no budget timer behind: its signal never fires later', async () => {
	const work = new ImageWork({ maxPixels: 100, budgetMs: 60 });
	const client = new AbortController();
	let seen: AbortSignal | undefined;
	await work.run(async (job) => void (seen = job.signal), { signal: client.signal });
	await sleep(150);
	expect(seen?.aborted).toBe(false);
	// Nor does the client's signal still reach a finished job.
	client.abort(new Error('client closed the connection'));
	expect(seen?.aborted).toBe(false);
});

test('a running job learns that its client left through its signal', async () => {
	const work = new ImageWork({ maxPixels: 100 });
	const client = new AbortController();
	const running = work.run(
		(job) =>
			new Promise((_, reject) => {
				job.signal.addEventListener('abort', () => reject(new Error('stopped')));
			}),
		{ signal: client.signal },
	);
	await sleep(10);
	client.abort(new Error('client closed the connection'));
	expect(((await rejection(running)) as Error).message).toBe('client closed the connection');
});

async function withHostedFiles(maxPixels: number, use: (files: HostedFiles) => Promise<void>): Promise<void> {
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-work-'));
	const storage = new DiskObjectStorage({ directory: join(dataDir, 'files') });
	const database = openSqliteDatabase(dataDir);
	const metadata = new SqlFileMetadata(new SqliteAdapter(database));
	try {
		await storage.init();
		await use(new HostedFiles({ storage, metadata, retentionSeconds: 60, publicBaseUrl: () => 'http://127.0.0.1', imageWork: new ImageWork({ maxPixels }) }));
	} finally {
		database.close();
		rmSync(dataDir, { recursive: true, force: true });
	}
}

test('sharp gets the pixel limit: a picture over it is image_too_large, not decoded', async () => {
	await withHostedFiles(50 * 50, async (files) => {
		const png = await sharp({ create: { width: 60, height: 60, channels: 3, background: '#fff' } }).png().toBuffer();
		const staged = await files.stageBuffer(png, MEDIA_DETAILS.png, 'key');
		expect(await rejection(files.fit(staged, { maxSide: 20, format: 'png', field: 'file' }))).toMatchObject({ status: 400, code: 'image_too_large', param: 'file' });
	});
});

test('fitting reads the staged file in place: the upload is never copied into memory', async () => {
	await withHostedFiles(100_000_000, async (files) => {
		let png: Buffer | undefined = await sharp({ create: { width: 3000, height: 3000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
			.png({ compressionLevel: 0 })
			.toBuffer();
		const size = png.length;
		expect(size).toBeGreaterThan(20_000_000);
		const staged = await files.stageBuffer(png, MEDIA_DETAILS.png, 'key');
		png = undefined;
		const baseline = process.memoryUsage().arrayBuffers;
		let peak = baseline;
		const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 2);
		try {
			const fitted = await files.fit(staged, { maxSide: 256, format: 'jpeg', field: 'file' });
			expect(fitted.size).toBeLessThan(200_000);
		} finally {
			clearInterval(sampler);
		}
		// Reading it whole took at least the file's size (twice: chunks, then one concatenated copy).
		expect(peak - baseline).toBeLessThan(size / 4);
	});
}, 60_000);
