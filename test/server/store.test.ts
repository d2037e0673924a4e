/**
 * The disk store in process: a full disk (writes to /dev/full fail with ENOSPC) gives a 507 and no
 * leftovers, crash leftovers are swept, expiry is checked on read.
 */
import { createWriteStream, existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ImageGenError } from '../../core/errors';
import { MEDIA_DETAILS } from '../../core/media';
import { DiskFileStore } from '../../server/src/storage/disk-file-store';
import { makeMp4 } from './support/media';

let directory: string;
beforeEach(() => {
	directory = mkdtempSync(join(tmpdir(), 'imagegen-store-'));
});
afterEach(() => rmSync(directory, { recursive: true, force: true }));

function storeWith(options: Partial<ConstructorParameters<typeof DiskFileStore>[0]> = {}) {
	return new DiskFileStore({ directory, retentionSeconds: 60, publicBaseUrl: () => 'http://127.0.0.1:1', ...options });
}

describe('disk file store', () => {
	const fullDiskAvailable = existsSync('/dev/full');

	(fullDiskAvailable ? it : it.skip)('a full disk while writing is a 507, the temp file is removed, other files still serve', async () => {
		const healthy = storeWith();
		await healthy.init();
		const kept = await healthy.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4);

		const full = storeWith({ openWriteStream: () => createWriteStream('/dev/full') });
		const error = await full.putStream(Readable.from([makeMp4(70_000)])).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(ImageGenError);
		expect((error as ImageGenError).status).toBe(507);
		expect((error as ImageGenError).toBody().error.code).toBe('insufficient_storage');
		expect(readdirSync(directory).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
		expect(await healthy.get(kept.name)).not.toBeNull();
	});

	it('is expired the moment expiresAt passes, sweep or no sweep', async () => {
		let now = Date.parse('2030-01-01T00:00:00Z');
		const store = storeWith({ now: () => now });
		await store.init();
		const file = await store.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4);
		now += 59_999;
		expect(await store.get(file.name)).not.toBeNull();
		now += 1;
		expect(await store.get(file.name)).toBeNull();
		expect(readdirSync(directory)).toHaveLength(2);
		expect(await store.sweep()).toBe(1);
		expect(readdirSync(directory)).toEqual([]);
	});

	it('sweeps stale temp files and bytes whose metadata never arrived, but not fresh ones', async () => {
		const store = storeWith({ staleAfterMs: 60_000 });
		await store.init();
		const live = await store.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4);
		const old = new Date(Date.now() - 10 * 60_000);
		for (const name of ['.tmp-old', 'AAAAAAAAAAAAAAAAAAAAAAAA.mp4', '.tmp-fresh', 'BBBBBBBBBBBBBBBBBBBBBBBB.png']) {
			writeFileSync(join(directory, name), 'x');
		}
		utimesSync(join(directory, '.tmp-old'), old, old);
		utimesSync(join(directory, 'AAAAAAAAAAAAAAAAAAAAAAAA.mp4'), old, old);
		expect(await store.sweep()).toBe(2);
		expect(readdirSync(directory).sort()).toEqual(
			['.tmp-fresh', 'BBBBBBBBBBBBBBBBBBBBBBBB.png', live.name, `${live.id}.json`].sort(),
		);
	});

	it('ids carry at least 128 random bits and are URL-safe', async () => {
		const store = storeWith();
		await store.init();
		const names = await Promise.all(Array.from({ length: 20 }, () => store.putBuffer(makeMp4(10), MEDIA_DETAILS.mp4)));
		for (const file of names) expect(file.id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
		expect(new Set(names.map((file) => file.id)).size).toBe(20);
		expect(store.publicUrl(names[0]!)).toBe(`http://127.0.0.1:1/files/${names[0]!.name}`);
	});
});
