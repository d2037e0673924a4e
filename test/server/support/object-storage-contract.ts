/**
 * What every storage engine promises the routes (server/src/storage/object-storage.ts), as tests
 * to run against each driver: whole and ranged reads, missing objects, idempotent deletes, and
 * nothing readable after a write that was aborted or whose source failed.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ObjectStorage } from '../../../server/src/storage/object-storage';
import { chunked, failingAfter, patterned, readAll, sha256, stallingAfter } from './byte-streams';

const MIB = 1024 * 1024;

export function describeObjectStorageContract(name: string, factory: () => Promise<ObjectStorage>): void {
	describe(`${name} object storage contract`, () => {
		let storage: ObjectStorage;
		let counter = 0;
		const freshKey = (extension = 'bin') => `contract-${Date.now().toString(36)}-${++counter}.${extension}`;

		beforeAll(async () => {
			storage = await factory();
		});
		afterAll(async () => {
			await storage?.close?.();
		});

		async function readBytes(key: string, range?: { start: number; end: number }): Promise<Buffer | null> {
			const stream = await storage.read(key, range);
			return stream === null ? null : readAll(stream);
		}

		it('writes a stream, answers the byte count and reads the same bytes back', async () => {
			const key = freshKey('png');
			const bytes = patterned(300_001, 7);
			expect(await storage.write(key, chunked(bytes), { contentType: 'image/png' })).toBe(bytes.length);
			expect(await readBytes(key)).toEqual(bytes);
		});

		it('stores a local file (copied by the engine where it can), answers its size and reads the same bytes back; a missing file leaves nothing', async () => {
			if (!storage.writeLocalFile) return void expect(storage.engine).not.toBe('disk');
			const bytes = patterned(300_003, 11);
			const folder = mkdtempSync(join(tmpdir(), 'imagegen-local-file-'));
			const path = join(folder, 'video.mp4');
			writeFileSync(path, bytes);
			const key = freshKey('mp4');
			expect(await storage.writeLocalFile(key, path, { contentType: 'video/mp4' })).toBe(bytes.length);
			expect(await readBytes(key)).toEqual(bytes);
			const missing = freshKey('mp4');
			await expect(storage.writeLocalFile(missing, join(folder, 'gone.mp4'), { contentType: 'video/mp4' })).rejects.toThrow();
			expect(await readBytes(missing)).toBeNull();
			rmSync(folder, { recursive: true, force: true });
		});

		it('counts the bytes itself, whatever the chunking', async () => {
			const key = freshKey();
			const bytes = patterned(100_000, 3);
			// Uneven chunks, some of them empty.
			const pieces = [bytes.subarray(0, 1), Buffer.alloc(0), bytes.subarray(1, 70_000), bytes.subarray(70_000)];
			expect(await storage.write(key, Readable.from(pieces), { contentType: 'application/octet-stream' })).toBe(100_000);
			expect((await readBytes(key))?.length).toBe(100_000);
		});

		it('writes bytes held in memory in one go, answers their count and reads them back', async () => {
			const key = freshKey('png');
			const bytes = patterned(70_001, 13);
			expect(await storage.write(key, bytes, { contentType: 'image/png' })).toBe(bytes.length);
			expect(await readBytes(key)).toEqual(bytes);
		});

		it('refuses bytes in memory whose signal is already aborted, and leaves nothing readable', async () => {
			const key = freshKey();
			const controller = new AbortController();
			controller.abort(new Error('gone before it started'));
			await expect(storage.write(key, patterned(1000), { contentType: 'image/png', signal: controller.signal })).rejects.toThrow('gone before it started');
			expect(await storage.read(key)).toBeNull();
		});

		it('writes and reads an empty object', async () => {
			const key = freshKey();
			expect(await storage.write(key, Readable.from([]), { contentType: 'text/plain' })).toBe(0);
			expect(await readBytes(key)).toEqual(Buffer.alloc(0));
		});

		it('writes a large stream (several multipart parts) byte for byte', async () => {
			const key = freshKey('mp4');
			const bytes = patterned(17 * MIB + 12_345, 11);
			expect(await storage.write(key, chunked(bytes), { contentType: 'video/mp4' })).toBe(bytes.length);
			const back = await readBytes(key);
			expect(back?.length).toBe(bytes.length);
			expect(sha256(back!)).toBe(sha256(bytes));
		});

		it('reads inclusive byte ranges: the first byte, the last byte, a middle slice, the whole', async () => {
			const key = freshKey();
			const bytes = patterned(6 * MIB + 3, 5);
			await storage.write(key, chunked(bytes), { contentType: 'application/octet-stream' });
			const last = bytes.length - 1;
			// Compared as hex: a wrong answer here may be megabytes long, too long for a readable diff.
			const hex = async (start: number, end: number) => (await readBytes(key, { start, end }))?.toString('hex').slice(0, 200);
			expect(await hex(0, 0)).toBe(bytes.subarray(0, 1).toString('hex'));
			expect(await hex(0, 1)).toBe(bytes.subarray(0, 2).toString('hex'));
			expect(await hex(last, last)).toBe(bytes.subarray(last).toString('hex'));
			expect(await hex(5 * MIB - 10, 5 * MIB + 20)).toBe(bytes.subarray(5 * MIB - 10, 5 * MIB + 21).toString('hex'));
			expect((await readBytes(key, { start: 1, end: MIB }))?.length).toBe(MIB);
			expect(sha256((await readBytes(key, { start: 0, end: last }))!)).toBe(sha256(bytes));
		});

		it('answers null for a key that was never written, with or without a range', async () => {
			expect(await storage.read(freshKey())).toBeNull();
			expect(await storage.read(freshKey(), { start: 0, end: 10 })).toBeNull();
		});

		it('deletes objects; missing keys, repeated deletes and an empty list are not errors', async () => {
			const [a, b, kept] = [freshKey(), freshKey(), freshKey()];
			for (const key of [a, b, kept]) await storage.write(key, chunked(patterned(1000)), { contentType: 'application/octet-stream' });
			await storage.delete([a, freshKey(), b]);
			expect(await storage.read(a)).toBeNull();
			expect(await storage.read(b)).toBeNull();
			expect(await readBytes(kept)).toEqual(patterned(1000));
			await storage.delete([a, b]);
			await storage.delete([]);
		});

		it('deletes more keys than one request may carry', async () => {
			const written = [freshKey(), freshKey()];
			for (const key of written) await storage.write(key, chunked(patterned(10)), { contentType: 'application/octet-stream' });
			const keys = [...Array.from({ length: 1500 }, () => freshKey()), ...written];
			await storage.delete(keys);
			for (const key of written) expect(await storage.read(key)).toBeNull();
		});

		it('refuses a write whose signal is already aborted, and reads nothing from the source', async () => {
			const key = freshKey();
			const source = chunked(patterned(1000));
			const controller = new AbortController();
			controller.abort(new Error('gone before it started'));
			await expect(storage.write(key, source, { contentType: 'image/png', signal: controller.signal })).rejects.toThrow('gone before it started');
			expect(source.readableDidRead).toBe(false);
			expect(await storage.read(key)).toBeNull();
		});

		for (const [label, size] of [
			['a small write', 100_000],
			['a write already several parts in', 17 * MIB],
		] as const) {
			it(`aborting ${label} through its signal rejects it and leaves nothing readable`, async () => {
				const key = freshKey('mp4');
				const source = stallingAfter(patterned(size, 9));
				const controller = new AbortController();
				const writing = storage.write(key, source.stream, { contentType: 'video/mp4', signal: controller.signal });
				const outcome = writing.then(
					() => 'resolved',
					(error: unknown) => error,
				);
				await source.drained;
				const reason = new Error('client went away');
				controller.abort(reason);
				expect(await outcome).toBe(reason);
				expect(await storage.read(key)).toBeNull();
			});
		}

		for (const [label, size] of [
			['at once', 0],
			['after a few bytes', 50_000],
			['several parts in', 17 * MIB],
		] as const) {
			it(`a source that fails ${label} rejects the write with its error and leaves nothing readable`, async () => {
				const key = freshKey();
				const failure = new Error('source broke');
				await expect(storage.write(key, failingAfter(patterned(size), failure), { contentType: 'image/png' })).rejects.toBe(failure);
				expect(await storage.read(key)).toBeNull();
			});
		}

		it('a source destroyed before its end without an error rejects the write and leaves nothing readable', async () => {
			const key = freshKey();
			const source = stallingAfter(patterned(200_000));
			const writing = storage.write(key, source.stream, { contentType: 'image/png' });
			const outcome = writing.then(
				() => 'resolved',
				(error: unknown) => error,
			);
			await source.drained;
			source.stream.destroy();
			expect(await outcome).toMatchObject({ message: expect.any(String) });
			expect(await storage.read(key)).toBeNull();
		});

		it('a source that errors after its write was aborted does not raise an unhandled error', async () => {
			const key = freshKey();
			const source = stallingAfter(patterned(100_000));
			const controller = new AbortController();
			const outcome = storage.write(key, source.stream, { contentType: 'image/png', signal: controller.signal }).catch((error: unknown) => error);
			await source.drained;
			controller.abort(new Error('client went away'));
			await outcome;
			const unhandled: unknown[] = [];
			const record = (error: unknown) => unhandled.push(error);
			process.on('uncaughtException', record);
			try {
				// What a request body does when its client disconnects after the answer.
				source.stream.destroy(new Error('connection reset'));
				await new Promise((resolve) => setTimeout(resolve, 50));
			} finally {
				process.off('uncaughtException', record);
			}
			expect(unhandled).toEqual([]);
			expect(await storage.read(key)).toBeNull();
		});

		it('removeIncomplete also removes a write that completed before its writer died', async () => {
			const key = freshKey();
			await storage.write(key, Readable.from([Buffer.from('complete but never published')]), { contentType: 'image/png' });
			await storage.removeIncomplete(key);
			expect(await storage.read(key)).toBeNull();
		});

		it('removeIncomplete on a key that holds nothing is not an error, and leaves other objects alone', async () => {
			const key = freshKey();
			const neighbour = `${key}.kept`;
			await storage.write(neighbour, chunked(patterned(1000)), { contentType: 'application/octet-stream' });
			await expect(storage.removeIncomplete(key)).resolves.toBeUndefined();
			expect(await storage.read(key)).toBeNull();
			expect(await readBytes(neighbour)).toEqual(patterned(1000));
		});
	});
}
