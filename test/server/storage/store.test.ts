/**
 * The embedded engines in process (disk object storage + SQLite metadata, composed as the service
 * composes them): a full disk (writes to /dev/full fail with ENOSPC) gives a 507 and no leftovers,
 * crash leftovers are swept, expiry is checked on read, a failed write leaves nothing behind.
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { writeFile } from 'node:fs/promises';
import { ImageGenError } from '../../../core/errors';
import { MEDIA_DETAILS } from '../../../core/media';
import { parseConfig, type ServiceConfig } from '../../../server/src/config';
import { openEngines, type Engines } from '../../../server/src/plugins/engines';
import { openSqliteDatabase } from '../../../server/src/db/sqlite/database';
import { DiskObjectStorage } from '../../../server/src/storage/disk-object-storage';
import { HostedFiles } from '../../../server/src/storage/hosted-files';
import { makeMp4 } from '../support/media';

const OWNER = 'owner-key-id-0001';
const quiet = { error: () => undefined, info: () => undefined };
let dataDir: string;
let directory: string;
const opened: Engines[] = [];
beforeEach(() => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-store-'));
	directory = join(dataDir, 'files');
});
afterEach(async () => {
	for (const engines of opened.splice(0)) {
		await engines.usageLedger.close();
		await engines.keyStore.close?.();
		await engines.close?.();
	}
	rmSync(dataDir, { recursive: true, force: true });
});

function configFor(): ServiceConfig {
	return parseConfig(['--data-dir', dataDir, '--retention-seconds', '60'], {}) as ServiceConfig;
}

/** As the service builds it: the start-up cleanup has run. */
async function embeddedFiles(now?: () => number): Promise<HostedFiles> {
	const engines = await openEngines(configFor(), quiet);
	opened.push(engines);
	return new HostedFiles({
		storage: engines.storage,
		metadata: engines.fileMetadata,
		retentionSeconds: 60,
		publicBaseUrl: () => 'http://127.0.0.1:1',
		now,
	});
}

describe('embedded file storage', () => {
	const fullDiskAvailable = existsSync('/dev/full');

	(fullDiskAvailable ? it : it.skip)('a full disk while writing is a 507, the temp file is removed, other files still serve', async () => {
		const healthy = await embeddedFiles();
		const kept = await healthy.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4, OWNER);

		const full = new HostedFiles({
			storage: new DiskObjectStorage({ directory, openWriteStream: () => createWriteStream('/dev/full') }),
			metadata: healthy.metadata,
			retentionSeconds: 60,
			publicBaseUrl: () => 'http://127.0.0.1:1',
		});
		const error = await full.putStream(Readable.from([makeMp4(70_000)]), { ownerKeyId: OWNER }).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(ImageGenError);
		expect((error as ImageGenError).status).toBe(507);
		expect((error as ImageGenError).toBody().error.code).toBe('insufficient_storage');
		expect(readdirSync(directory).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
		expect(await healthy.get(kept.name)).not.toBeNull();
	});

	(fullDiskAvailable ? it : it.skip)('a full disk while writing bytes held in memory is a 507 too, with nothing left', async () => {
		const healthy = await embeddedFiles();
		const full = new HostedFiles({
			storage: new DiskObjectStorage({ directory, writeBytes: (_path, bytes) => writeFile('/dev/full', bytes) }),
			metadata: healthy.metadata,
			retentionSeconds: 60,
			publicBaseUrl: () => 'http://127.0.0.1:1',
		});
		const error = await full.putBuffer(makeMp4(70_000), MEDIA_DETAILS.mp4, OWNER).catch((caught: unknown) => caught);
		expect(error).toMatchObject({ status: 507 });
		expect((error as ImageGenError).toBody().error.code).toBe('insufficient_storage');
		expect(readdirSync(directory)).toEqual([]);
	});

	it('is expired the moment expiresAt passes, sweep or no sweep', async () => {
		let now = Date.parse('2030-01-01T00:00:00Z');
		const files = await embeddedFiles(() => now);
		const file = await files.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4, OWNER);
		now += 59_999;
		expect(await files.get(file.name)).not.toBeNull();
		now += 1;
		expect(await files.get(file.name)).toBeNull();
		expect(readdirSync(directory)).toHaveLength(1);
		expect(await files.sweep()).toBe(1);
		expect(readdirSync(directory)).toEqual([]);
	});

	it('a writer that died leaves a reservation: the sweep removes what it wrote once the reservation expires', async () => {
		let now = Date.parse('2030-01-01T00:00:00Z');
		const files = await embeddedFiles(() => now);
		const live = await files.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4, OWNER);
		// What a process killed mid-write leaves: its reservation, and a temp file or bytes.
		for (const name of ['CCCCCCCCCCCCCCCCCCCCCCCC.mp4', 'DDDDDDDDDDDDDDDDDDDDDDDD.png']) {
			await files.metadata.reserve({ id: name.split('.')[0]!, storageKey: name, ownerKeyId: OWNER, expiresAt: new Date(now + 60_000) });
		}
		writeFileSync(join(directory, '.tmp-CCCCCCCCCCCCCCCCCCCCCCCC.mp4'), 'half');
		writeFileSync(join(directory, 'DDDDDDDDDDDDDDDDDDDDDDDD.png'), 'whole, never published');
		expect(await files.sweep()).toBe(0);
		expect(readdirSync(directory)).toHaveLength(3);

		now += 60_000;
		expect(await files.sweep()).toBe(3);
		expect(readdirSync(directory)).toEqual([]);
		expect(live.expiresAt.getTime()).toBe(now);
	});

	it('at start, bytes and temp files the database knows nothing of are removed at once, whatever their age; reserved ones stay', async () => {
		const first = await embeddedFiles();
		const live = await first.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4, OWNER);
		// A write still running in another process on this data dir: reserved before its first byte.
		await first.metadata.reserve({ id: 'FFFFFFFFFFFFFFFFFFFFFFFF', storageKey: 'FFFFFFFFFFFFFFFFFFFFFFFF.webm', ownerKeyId: OWNER, expiresAt: new Date(Date.now() + 60_000) });
		for (const name of ['.tmp-CCCCCCCCCCCCCCCCCCCCCCCC.mp4', 'DDDDDDDDDDDDDDDDDDDDDDDD.png', 'EEEEEEEEEEEEEEEEEEEEEEEE.json', '.tmp-FFFFFFFFFFFFFFFFFFFFFFFF.webm']) {
			writeFileSync(join(directory, name), '{"half');
		}
		const second = await embeddedFiles();
		expect(readdirSync(directory).sort()).toEqual([live.name, '.tmp-FFFFFFFFFFFFFFFFFFFFFFFF.webm'].sort());
		expect(await second.get(live.name)).toMatchObject({ id: live.id, ownerKeyId: OWNER, size: live.size });
	});

	it('at start, what a write killed mid-way left goes at once, with its reservation', async () => {
		await embeddedFiles();
		const dead = spawnSync(process.execPath, ['-e', '']).pid!;
		const database = openSqliteDatabase(dataDir);
		try {
			database
				.prepare('INSERT INTO files (id, storage_key, owner_key_id, expires_at, writer_pid) VALUES (?, ?, ?, ?, ?)')
				.run('GGGGGGGGGGGGGGGGGGGGGGGG', 'GGGGGGGGGGGGGGGGGGGGGGGG.mp4', OWNER, Date.now() + 3_600_000, dead);
			writeFileSync(join(directory, '.tmp-GGGGGGGGGGGGGGGGGGGGGGGG.mp4'), 'half');
			await embeddedFiles();
			expect(readdirSync(directory)).toEqual([]);
			expect(database.prepare('SELECT count(*) AS n FROM files').get()).toEqual({ n: 0 });
		} finally {
			database.close();
		}
	});

	it('a source that fails mid-write leaves neither bytes nor metadata, and the error is the source’s', async () => {
		const files = await embeddedFiles();
		const failing = new Readable({
			read() {
				this.push(makeMp4(8_192));
				this.destroy(new Error('connection reset'));
			},
		});
		await expect(files.putStream(failing, { ownerKeyId: OWNER })).rejects.toThrow('connection reset');
		expect(readdirSync(directory)).toEqual([]);
	});

	it('only the owner removes a file, and then it is gone at once', async () => {
		const files = await embeddedFiles();
		const file = await files.putBuffer(makeMp4(100), MEDIA_DETAILS.mp4, OWNER);
		expect(await files.remove(file.id, 'someone-else-0001')).toBe(false);
		expect(await files.get(file.name)).not.toBeNull();
		expect(await files.remove(file.id, OWNER)).toBe(true);
		expect(await files.get(file.name)).toBeNull();
		expect(readdirSync(directory)).toEqual([]);
	});

	it('ids carry at least 128 random bits and are URL-safe', async () => {
		const files = await embeddedFiles();
		const names = await Promise.all(Array.from({ length: 20 }, () => files.putBuffer(makeMp4(10), MEDIA_DETAILS.mp4, OWNER)));
		for (const file of names) expect(file.id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
		expect(new Set(names.map((file) => file.id)).size).toBe(20);
		expect(files.publicUrl(names[0]!)).toBe(`http://127.0.0.1:1/files/${names[0]!.name}`);
	});
});
