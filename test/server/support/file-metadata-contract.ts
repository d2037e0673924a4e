/**
 * What every FileMetadataStore must do, as a suite any implementation runs against itself:
 * `describeFileMetadataContract('PostgreSQL', factory)`. Every test gets a fresh fixture and
 * fixes the clock through `now`, except the one that checks the present is the default.
 */
import { randomBytes } from 'node:crypto';
import type { ExpiredEntry, FileMetadataStore, FileRecord } from '../../../server/src/storage/file-metadata';
import { pngFileRecord } from './file-records';

export interface FileMetadataFixture {
	/**
	 * A store over this fixture's (empty at first) data. Every call may answer another instance
	 * over the same data, as another replica would have; the tests use up to two.
	 */
	open(): Promise<FileMetadataStore>;
	/** Ends everything `open` made. */
	close(): Promise<void>;
}

export interface FileMetadataContractOptions {
	/**
	 * True (default) when a second sweeper is served while the first still holds a batch, as
	 * replicas are; false for a store that runs sweeps one after another.
	 */
	parallelSweepers?: boolean;
	/**
	 * True (default) when reservations and removed files outlive their writer and the sweep cleans
	 * them up (a fleet: the writer may be a dead replica); false for a store that keeps
	 * reservations in its own memory and leaves a crashed process's bytes to a start-up cleanup.
	 */
	sweepsAbandonedWrites?: boolean;
	/**
	 * How long a sweeper's claim on its batch lasts, for a store whose sweepers claim batches for a
	 * time (its batch is another's once it lapsed); none for a store that does not.
	 */
	sweepLeaseMs?: number;
}

const T0 = new Date('2030-06-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const HOUR = 3_600_000;
const OWNER = 'key-owner';
const OTHER = 'key-other';

const newId = () => randomBytes(16).toString('base64url');

function recordFor(id: string, expiresAt: Date, owner = OWNER): FileRecord {
	return pngFileRecord(id, { storageKey: `files/${id}.png`, size: 5_000_000_123, etag: `"${id.slice(0, 8)}"`, ownerKeyId: owner, createdAt: at(-1000), expiresAt });
}

async function reserve(store: FileMetadataStore, expiresAt: Date, owner = OWNER): Promise<FileRecord> {
	const file = recordFor(newId(), expiresAt, owner);
	await store.reserve({ id: file.id, storageKey: file.storageKey, ownerKeyId: owner, expiresAt });
	return file;
}

async function stored(store: FileMetadataStore, expiresAt: Date, owner = OWNER): Promise<FileRecord> {
	const file = await reserve(store, expiresAt, owner);
	await store.publish(file);
	return file;
}

/** A sweep's batches, as they were handed over. */
function collector() {
	const batches: ExpiredEntry[][] = [];
	return {
		batches,
		ids: () => batches.flat().map((entry) => entry.id).sort(),
		dispose: async (batch: ExpiredEntry[]) => {
			batches.push(batch);
		},
	};
}

const sorted = (ids: string[]) => [...ids].sort();

export function describeFileMetadataContract(name: string, factory: () => Promise<FileMetadataFixture>, options: FileMetadataContractOptions = {}): void {
	describe(`file metadata contract: ${name}`, () => {
		let fixture: FileMetadataFixture;
		let store: FileMetadataStore;
		beforeEach(async () => {
			fixture = await factory();
			store = await fixture.open();
		});
		afterEach(() => fixture.close());

		it('a reservation is not served; once published the file is, with every field as given', async () => {
			const file = await reserve(store, at(HOUR));
			expect(await store.get(file.id, T0)).toBeNull();
			await store.publish(file);
			expect(await store.get(file.id, T0)).toEqual(file);
			const replica = await fixture.open();
			expect(await replica.get(file.id, T0)).toEqual(file);
		});

		it('keeps what a file says about its provenance, and reads files without it as they were', async () => {
			const plain = await reserve(store, at(HOUR));
			const marked = { ...(await reserve(store, at(HOUR))), provenance: { c2pa: 'signed' as const, digital_source_type: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia' } };
			await store.publish(plain);
			await store.publish(marked);
			const replica = await fixture.open();
			expect(await replica.get(marked.id, T0)).toEqual(marked);
			expect(await replica.get(plain.id, T0)).toEqual(plain);
		});

		it('is served until the instant it expires and not from then on', async () => {
			const file = await stored(store, at(HOUR));
			expect(await store.get(file.id, at(HOUR - 1))).not.toBeNull();
			expect(await store.get(file.id, at(HOUR))).toBeNull();
			expect(await store.get(file.id, at(2 * HOUR))).toBeNull();
		});

		it('without a `now`, the present decides', async () => {
			const live = await stored(store, new Date(Date.now() + HOUR));
			const expired = await stored(store, new Date(Date.now() - 1000));
			expect((await store.get(live.id))?.id).toBe(live.id);
			expect(await store.get(expired.id)).toBeNull();
			expect(await store.remove(expired.id, OWNER)).toBeNull();
			expect((await store.remove(live.id, OWNER))?.id).toBe(live.id);
			expect(await store.get(live.id)).toBeNull();
		});

		it('answers null for ids it never saw', async () => {
			expect(await store.get(newId(), T0)).toBeNull();
			expect(await store.get('', T0)).toBeNull();
			expect(await store.remove(newId(), OWNER, T0)).toBeNull();
		});

		it('publishes only an open reservation: none, a second publish, or one already swept are refused', async () => {
			await expect(store.publish(recordFor(newId(), at(HOUR)))).rejects.toThrow();
			const file = await stored(store, at(HOUR));
			await expect(store.publish({ ...file, size: 1 })).rejects.toThrow();
			expect((await store.get(file.id, T0))?.size).toBe(file.size);

			if (options.sweepsAbandonedWrites === false) return;
			// The writer was slower than the would-be expiry: a sweeper removed the reservation (and the bytes).
			const slow = await reserve(store, at(1000));
			await store.sweepExpired(async () => undefined, { now: at(2000), batchSize: 10 });
			await expect(store.publish(slow)).rejects.toThrow();
			expect(await store.get(slow.id, T0)).toBeNull();
		});

		it('remove: only the owner, only while served; the file is gone for every replica at once', async () => {
			const file = await stored(store, at(HOUR));
			const replica = await fixture.open();
			expect(await store.remove(file.id, OTHER, T0)).toBeNull();
			expect(await replica.get(file.id, T0)).not.toBeNull();

			const removed = await store.remove(file.id, OWNER, T0);
			expect(removed).toMatchObject({ id: file.id, storageKey: file.storageKey, ownerKeyId: OWNER, name: file.name });
			expect(await store.get(file.id, T0)).toBeNull();
			expect(await replica.get(file.id, T0)).toBeNull();
			expect(await replica.remove(file.id, OWNER, T0)).toBeNull();

			const reservation = await reserve(store, at(HOUR));
			expect(await store.remove(reservation.id, OWNER, T0)).toBeNull();
			const expired = await stored(store, at(1000));
			expect(await store.remove(expired.id, OWNER, at(1000))).toBeNull();
		});

		const whenSweptByTheStore = options.sweepsAbandonedWrites === false ? it.skip : it;

		whenSweptByTheStore('a removed file whose caller died before releasing it is handed to the next sweep', async () => {
			const file = await stored(store, at(HOUR));
			await store.remove(file.id, OWNER, T0);
			const sweep = collector();
			expect(await store.sweepExpired(sweep.dispose, { now: at(1), batchSize: 10 })).toBe(1);
			expect(sweep.batches).toEqual([[{ id: file.id, storageKey: file.storageKey, published: true }]]);
		});

		it('release forgets a reservation or a removed file for good', async () => {
			const reservation = await reserve(store, at(1000));
			const file = await stored(store, at(HOUR));
			await store.remove(file.id, OWNER, T0);
			await store.release(reservation.id);
			await store.release(file.id);
			await store.release(newId());
			const sweep = collector();
			expect(await store.sweepExpired(sweep.dispose, { now: at(10 * HOUR), batchSize: 10 })).toBe(0);
			expect(sweep.batches).toEqual([]);
			await expect(store.publish(reservation)).rejects.toThrow();
		});

		whenSweptByTheStore('sweeps expired reservations and files in batches of at most batchSize, and only those', async () => {
			const live = await Promise.all([stored(store, at(HOUR)), reserve(store, at(HOUR)), stored(store, at(60_001))]);
			const files = await Promise.all(Array.from({ length: 4 }, (_, index) => stored(store, at(1000 + index))));
			const reservations = await Promise.all(Array.from({ length: 3 }, (_, index) => reserve(store, at(2000 + index))));
			const sweep = collector();
			expect(await store.sweepExpired(sweep.dispose, { now: at(60_000), batchSize: 3 })).toBe(7);
			expect(sweep.batches.map((batch) => batch.length).sort()).toEqual([1, 3, 3]);
			expect(sweep.ids()).toEqual(sorted([...files, ...reservations].map((file) => file.id)));
			for (const entry of sweep.batches.flat()) {
				const original = [...files, ...reservations].find((file) => file.id === entry.id)!;
				expect(entry).toEqual({ id: original.id, storageKey: original.storageKey, published: files.includes(original) });
			}

			const again = collector();
			expect(await store.sweepExpired(again.dispose, { now: at(60_000), batchSize: 3 })).toBe(0);
			expect(again.batches).toEqual([]);
			expect(await store.get(live[0].id, at(60_000))).not.toBeNull();
			expect(await store.get(live[2].id, at(60_000))).not.toBeNull();
			await expect(store.publish(live[1])).resolves.toEqual(live[1]);
		});

		it('sweeps expired published files in batches of at most batchSize, and keeps the live ones', async () => {
			const live = await Promise.all([stored(store, at(HOUR)), stored(store, at(60_001))]);
			const files = await Promise.all(Array.from({ length: 5 }, (_, index) => stored(store, at(1000 + index))));
			const sweep = collector();
			expect(await store.sweepExpired(sweep.dispose, { now: at(60_000), batchSize: 2 })).toBe(5);
			expect(sweep.batches.map((batch) => batch.length).sort()).toEqual([1, 2, 2]);
			expect(sweep.ids()).toEqual(sorted(files.map((file) => file.id)));
			expect(sweep.batches.flat().every((entry) => entry.published)).toBe(true);
			expect(await store.sweepExpired(collector().dispose, { now: at(60_000), batchSize: 2 })).toBe(0);
			for (const file of live) expect(await store.get(file.id, at(60_000))).not.toBeNull();
		});

		it('entries of a batch whose dispose failed stay for the next sweep; batches before it are forgotten', async () => {
			const files = await Promise.all(Array.from({ length: 5 }, (_, index) => stored(store, at(1000 + index))));
			const handed: ExpiredEntry[][] = [];
			const failure = new Error('object storage unavailable');
			const sweeping = store.sweepExpired(
				async (batch) => {
					handed.push(batch);
					if (handed.length === 2) throw failure;
				},
				{ now: at(HOUR), batchSize: 2 },
			);
			await expect(sweeping).rejects.toBe(failure);
			expect(handed).toHaveLength(2);
			const forgotten = handed[0]!.map((entry) => entry.id);

			const next = collector();
			expect(await store.sweepExpired(next.dispose, { now: at(HOUR), batchSize: 10 })).toBe(3);
			expect(next.ids()).toEqual(sorted(files.map((file) => file.id).filter((id) => !forgotten.includes(id))));
		});

		it('two sweepers at the same time never receive the same entry, and together receive all', async () => {
			const files = await Promise.all(Array.from({ length: 12 }, (_, index) => stored(store, at(1000 + index))));
			const replica = await fixture.open();
			const first = collector();
			const second = collector();
			let secondSweep: Promise<number> | undefined;
			const firstSweep = store.sweepExpired(
				async (batch) => {
					await first.dispose(batch);
					if (first.batches.length > 1) return;
					// Hold the first batch while the other replica sweeps.
					secondSweep = replica.sweepExpired(second.dispose, { now: at(HOUR), batchSize: 4 });
					if (options.parallelSweepers !== false) await secondSweep;
				},
				{ now: at(HOUR), batchSize: 4 },
			);
			const firstCount = await firstSweep;
			const secondCount = await secondSweep!;
			expect(firstCount + secondCount).toBe(12);
			const all = [...first.ids(), ...second.ids()];
			expect(new Set(all).size).toBe(all.length);
			expect(sorted(all)).toEqual(sorted(files.map((file) => file.id)));
			if (options.parallelSweepers !== false) {
				expect(first.ids()).toHaveLength(4);
				expect(second.ids()).toHaveLength(8);
			}
		});

		const whenLeased = options.sweepLeaseMs === undefined ? it.skip : it;

		whenLeased('a batch whose sweeper died is left alone during its lease and taken over after it', async () => {
			const lease = options.sweepLeaseMs!;
			const files = await Promise.all(Array.from({ length: 3 }, (_, index) => stored(store, at(1000 + index))));
			// The first sweeper takes its batch and its process is killed while it deletes the bytes.
			let taken!: () => void;
			const claimed = new Promise<void>((resolve) => (taken = resolve));
			void store.sweepExpired(
				() => {
					taken();
					return new Promise<void>(() => undefined);
				},
				{ now: at(2000), batchSize: 10 },
			);
			await claimed;

			const survivor = await fixture.open();
			const sweep = collector();
			expect(await survivor.sweepExpired(sweep.dispose, { now: at(2000 + lease - 1), batchSize: 10 })).toBe(0);
			expect(await survivor.sweepExpired(sweep.dispose, { now: at(2000 + lease), batchSize: 10 })).toBe(3);
			expect(sweep.ids()).toEqual(sorted(files.map((file) => file.id)));
		});

		it('rejects a batch size that is not a positive integer', async () => {
			await stored(store, at(1000));
			for (const batchSize of [0, -1, 1.5, Number.NaN]) {
				await expect(store.sweepExpired(async () => undefined, { now: at(HOUR), batchSize })).rejects.toThrow(/batchSize/);
			}
		});
	});
}
